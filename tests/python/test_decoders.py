"""The decoder LLMs of tests/tools/decoders (GPT-2 and Llama, tiny configs, without their cache) through
spire.torch.compile against eager PyTorch, and the ops their graphs need one by one: tensor indexing and aten.slice,
factories (zeros, arange), comparisons, bool logic, where, casts, embedding, pow, rsqrt, cos / sin, and a concat
with an empty input. symbolic_trace cannot follow the decoders (torch.zeros of a traced size), so their graphs come
from make_fx (ATen ops); each small model runs both ways."""
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spire.torch
from models import rel_err, seeded

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "decoders"))
import decoder_models  # noqa: E402

TOL = 1e-4


def eager_lines(text):
    return [line for line in text.splitlines() if line.startswith("eager")]


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_decoder_without_cache(device, name):
    model = decoder_models.WithoutCache(decoder_models.build(name)).eval()
    compiled = spire.torch.compile(model, device=device)
    for seed, (B, T) in ((0, (2, 5)), (1, (1, 3))):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, model.c.vocab, (B, T), generator=g)
        mask = torch.ones(B, T, dtype=torch.int64)
        mask[0, 0] = 0  # a masked key: the mask takes part
        pos = torch.arange(T)[None].expand(B, T).contiguous()
        with torch.no_grad():
            assert rel_err(compiled(ids, mask, pos), model(ids, mask, pos)) <= TOL
        # The whole decoder is one spire segment: nothing left in eager PyTorch (the mask, positions, the empty cache
        # and the gathers included).
        text = compiled.explain(ids, mask, pos)
        assert eager_lines(text) == [] and text.count("spire segment") == 1, text


def compiled_both_ways(model, inputs, trace, device):
    """The model's results eagerly and through spire.torch.compile of its graph (symbolic_trace's: torch functions,
    methods, modules; or make_fx's: ATen ops), and explain's text."""
    from functorch import make_fx
    model.eval()
    with torch.no_grad():
        want = model(*inputs)
        traced = make_fx(model)(*inputs) if trace == "make_fx" else model
        compiled = spire.torch.compile(traced, device=device)
        got = compiled(*inputs)
    text = compiled.explain(*inputs)
    assert ("aten." in text) == (trace == "make_fx"), text
    return want, got, text


def assert_close(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype == torch.bool or not w.dtype.is_floating_point:
            assert torch.equal(g, w)
        else:
            assert rel_err(g, w) <= TOL


class Indexing(nn.Module):
    def forward(self, x):
        a = x[:, 1:5, ::2]               # slices with a step
        b = x[..., None, -3]             # Ellipsis, a new axis, a negative int
        c = x[:, -2:, 1:]                # negative starts
        d = x[:, None, 2, :7]            # an int among slices
        return a * 2, b + 1, c.exp(), d


class MaskAndPositions(nn.Module):
    """A decoder's attention mask and rotary angles: arange, comparisons, & and |, casts, where, cos / sin."""

    T = 5  # a literal: symbolic_trace cannot record torch.arange of a traced size (it takes this one as a constant)

    def forward(self, scores, mask, positions):
        q = torch.arange(self.T) + 0
        k = torch.arange(self.T)
        causal = k[None, :] <= q[:, None]
        keep = causal[None] & mask[:, None, :].bool() | (q == 0)[None, :, None]
        lowest = torch.tensor(torch.finfo(torch.float32).min)
        angles = positions[:, :, None].float() * torch.arange(1, 5, dtype=torch.float32)
        rope = torch.cat([angles.cos(), angles.sin()], dim=-1)
        return torch.where(keep, scores, lowest).softmax(-1), rope, (positions > 2).to(torch.int64), keep


class RmsNormAndPow(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(16) + 0.5)

    def forward(self, x):
        y = self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
        p = x.abs() + 0.5
        return y, x ** 3, p ** -1, p.pow(0.5), p ** -0.5, p ** 1.5, x.pow(-2)


class EmbeddingAndEmptyCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(11, 8)
        self.positions = nn.Parameter(torch.randn(7, 8))

    def forward(self, ids, pos):
        x = self.tokens(ids) + F.embedding(pos, self.positions)       # [B, T, 8]
        past = torch.zeros(2, 0, 8)  # the batch a literal, as for MaskAndPositions.T
        return torch.cat([past, x], dim=1) * torch.ones(8)


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_indexing(device, trace):
    torch.manual_seed(30)
    want, got, text = compiled_both_ways(Indexing(), (torch.randn(3, 6, 8),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_mask_and_positions(device, trace):
    torch.manual_seed(31)
    scores = torch.randn(2, 5, 5)
    mask = torch.tensor([[1, 1, 0, 1, 1], [0, 1, 1, 1, 1]])
    positions = torch.tensor([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]])
    want, got, text = compiled_both_ways(MaskAndPositions(), (scores, mask, positions), trace, device)
    assert_close(got, want)
    # symbolic_trace keeps torch.finfo(...) in Python (a constant); everything with tensors runs on spire.
    assert eager_lines(text) == [], text


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_rms_norm_and_pow(device, trace):
    model = seeded(RmsNormAndPow, seed=32)
    want, got, text = compiled_both_ways(model, (torch.randn(4, 16),), trace, device)  # negative bases included
    assert_close(got, want)
    assert eager_lines(text) == [], text


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_embedding_and_empty_cache(device, trace):
    model = seeded(EmbeddingAndEmptyCache, seed=33)
    g = torch.Generator().manual_seed(33)
    inputs = (torch.randint(0, 11, (2, 5), generator=g), torch.randint(0, 7, (2, 5), generator=g))
    want, got, text = compiled_both_ways(model, inputs, trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


class RotateHalf(nn.Module):
    """Llama's rotate_half by chunk, and torch.chunk where the parts are uneven or run out (5 in 2: 3 + 2; 5 in 4:
    three parts of 2, 2 and 1). The parts are indexed: this torch's symbolic_trace cannot unpack a traced tuple.
    """

    def forward(self, x):
        halves = x.chunk(2, dim=-1)
        two = torch.chunk(x[:, :5], 2, 1)
        three = x[:, :5].chunk(4, dim=1)
        return torch.cat((-halves[1], halves[0]), dim=-1), two[0] * 2, two[1] + 1, three[0], three[1], three[2] - 1


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_rotate_half_by_chunk(device, trace):
    torch.manual_seed(34)
    want, got, text = compiled_both_ways(RotateHalf(), (torch.randn(3, 8),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


def test_torch_tensor_of_one_number():
    # What Dynamo records for a masked score's fill (torch.tensor(torch.finfo(t).min, dtype=t.dtype)); symbolic_trace
    # and make_fx take such a tensor as a constant, so the handler is called as Dynamo's graph would.
    from spire.torch.frontend.builder import Builder, Unsupported
    from spire.torch.frontend.torch_ops import FUNCTIONS
    b = Builder()
    lowest = FUNCTIONS[torch.tensor](b, (torch.finfo(torch.float32).min,), {"dtype": torch.float32})
    assert (lowest.dtype, lowest.shape) == ("f32", ())
    assert FUNCTIONS[torch.tensor](b, (3,), {}).dtype == "i64"  # PyTorch's default for an int
    with pytest.raises(Unsupported):
        FUNCTIONS[torch.tensor](b, ([1.0, 2.0],), {})


class Refused(nn.Module):
    def forward(self, x, ids):
        return x ** 4 + 1, (ids & 3) + 1


def test_what_spire_cannot_keep_exact_stays_eager(device):
    # x ** 4 is real for a negative base in PyTorch and NaN through spire's pow (exp(4 log x)); & of integers has no
    # spire op. Both stay in eager PyTorch, with the reason, and the results are eager's.
    torch.manual_seed(34)
    want, got, text = compiled_both_ways(Refused(), (torch.randn(3, 4), torch.arange(12).reshape(3, 4)), "symbolic",
                                         device)
    assert_close(got, want)
    reasons = "\n".join(eager_lines(text))
    assert "exponent 4" in reasons and "non-bool operand" in reasons, text
