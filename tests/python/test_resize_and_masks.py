"""Interpolation in every mode PyTorch has, attention with masks and returned weights, average pooling with
ceil_mode / count_include_pad=False / divisor_override, SELU and CELU: each against eager PyTorch with fixed seeds,
through both traces where both apply, nothing of them left in eager."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spire
import spire.torch
from models import rel_err, seeded, step_gradients
from test_decoders import compiled_both_ways, eager_lines
from test_more_ops import assert_close


class Resizes(nn.Module):
    """Linear maps of each spatial axis that are not whole-factor repetitions: fractional scales (PyTorch maps
    coordinates by 1 / scale, not by in / out), align_corners both ways, sizes, shrinking, antialiasing."""
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)

    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=False),
                F.interpolate(x, scale_factor=(1.5, 0.6), mode="bicubic", align_corners=False),
                F.interpolate(x, scale_factor=(1.3, 2.6), mode="nearest"),
                F.interpolate(x, size=(3, 11), mode="nearest-exact"),
                F.interpolate(x, size=(2, 3), mode="area"),
                F.interpolate(x, size=(3, 4), mode="bilinear", align_corners=False, antialias=True),
                F.interpolate(x, scale_factor=2.5, mode="bilinear", recompute_scale_factor=True),
                self.up(x))


class OtherRanks(nn.Module):
    def forward(self, line, volume):
        return (F.interpolate(line, scale_factor=2.5, mode="linear", align_corners=False),
                F.interpolate(volume, size=(3, 5, 4), mode="trilinear", align_corners=True),
                F.interpolate(volume, scale_factor=2, mode="nearest"))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_resize_modes(device, trace):
    torch.manual_seed(60)
    want, got, text = compiled_both_ways(Resizes(), (torch.randn(2, 3, 5, 7),), trace, device)
    assert_close(got, want, tol=1e-5)
    assert eager_lines(text) == [], text
    want, got, text = compiled_both_ways(OtherRanks(), (torch.randn(2, 3, 9), torch.randn(1, 2, 2, 3, 4)), trace,
                                         device)
    assert_close(got, want, tol=1e-5)
    assert eager_lines(text) == [], text


class SegmentationHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return F.interpolate(torch.relu(self.conv(x)), scale_factor=2.5, mode="bilinear", align_corners=False)


def test_resize_gradients(device):
    # A training step through a resize: the gradients of the convolution before it and of the input.
    model = seeded(SegmentationHead, seed=61)
    torch.manual_seed(62)
    x, target = torch.randn(2, 3, 6, 5), torch.randn(2, 4, 15, 12)
    for want, got in zip(*step_gradients(model, x, target, [model.conv.weight, model.conv.bias], device)):
        assert rel_err(got, want) <= 1e-4


class Attention(nn.Module):
    def __init__(self, batch_first):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=batch_first)
        self.cross = nn.MultiheadAttention(16, 2, kdim=8, vdim=12, batch_first=batch_first)

    def forward(self, x, key, value, causal, scores, padding):
        # (indexing, not unpacking, the results: symbolic_trace cannot iterate a module's result)
        a = self.mha(x, x, x, attn_mask=causal)                                  # bool mask, averaged weights
        b = self.mha(x, x, x, attn_mask=scores, average_attn_weights=False)      # float mask per head
        c = self.cross(x, key, value, key_padding_mask=padding)                  # padding, other widths
        d = self.mha(x, x, x, key_padding_mask=padding, attn_mask=causal, need_weights=False)
        return a[0], a[1], b[0], b[1], c[0], c[1], d[0]


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_masks_and_weights(device, trace, batch_first):
    # symbolic_trace keeps the module (its handler); make_fx records F.multi_head_attention_forward's ATen ops
    # (masked_fill, baddbmm, bmm, the head average), as Dynamo records its torch functions on torch 2.
    model = seeded(Attention, batch_first, seed=63)
    torch.manual_seed(64)
    batch, tokens, keys = 2, 5, 5
    x = torch.randn(batch, tokens, 16)
    memory = (torch.randn(batch, keys, 8), torch.randn(batch, keys, 12))
    if not batch_first:
        x, memory = x.transpose(0, 1), tuple(m.transpose(0, 1) for m in memory)
    causal = torch.ones(tokens, keys, dtype=torch.bool).triu(1)          # True: masked out
    scores = torch.randn(batch * 4, tokens, keys)
    padding = torch.zeros(batch, keys, dtype=torch.bool)
    padding[1, 3:] = True                                                # the second sample's last two keys
    want, got, text = compiled_both_ways(model, (x, *memory, causal, scores, padding), trace, device)
    assert_close(got, want, tol=1e-5)
    assert eager_lines(text) == [], text


class AttentionFunction(nn.Module):
    """F.multi_head_attention_forward called directly, as Dynamo records nn.MultiheadAttention on torch 2 (inputs
    [tokens, batch, embed])."""
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4)

    def forward(self, x, causal, padding):
        m = self.mha
        r = F.multi_head_attention_forward(
            x, x, x, 16, 4, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0, m.out_proj.weight,
            m.out_proj.bias, training=False, key_padding_mask=padding, attn_mask=causal)
        return r[0], r[1]


def test_multi_head_attention_forward(device):
    model = seeded(AttentionFunction, seed=69).eval()
    # torch 1.13's symbolic_trace would trace into the function: a tracer that keeps it a call, as Dynamo does.
    tracer = torch.fx.Tracer(autowrap_functions=(F.multi_head_attention_forward,))
    traced = torch.fx.GraphModule(model, tracer.trace(model))
    torch.manual_seed(70)
    x = torch.randn(5, 2, 16)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[0, 4] = True
    with torch.no_grad():
        want = model(x, causal, padding)
        compiled = spire.torch.compile(traced, device=device)
        got = compiled(x, causal, padding)
    assert_close(got, want, tol=1e-5)
    text = compiled.explain(x, causal, padding)
    assert "multi_head_attention_forward" in text and eager_lines(text) == [], text


def test_attention_masks_of_the_block(device):
    # nb.scaled_dot_product_attention (F.scaled_dot_product_attention's mapping, which torch 1.13 lacks) against
    # attention written out in float64: a bool mask (True: attend) and is_causal (a mask the converter makes).
    from spire.torch.frontend import Builder
    from spire.torch.frontend import nn_blocks as nb
    torch.manual_seed(65)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    keep = torch.rand(4, 6) > 0.3
    keep[:, 0] = True
    for causal in (False, True):
        b = Builder()
        ins = [b.input(n, "f32", list(t.shape), False) for n, t in (("q", q), ("k", k), ("v", v))]
        mask = None if causal else b.input("mask", "bool", [4, 6], False)
        out = nb.scaled_dot_product_attention(b, *ins, mask, 0.0, causal, None)
        b.g.output("out", out.id)
        feeds = {"q": q.numpy(), "k": k.numpy(), "v": v.numpy(), **{n: t.numpy() for n, t in b.constants.items()}}
        if not causal:
            feeds["mask"] = keep.numpy()
        got = torch.from_numpy(b.g.evaluate(feeds, "f64")["out"])
        allowed = torch.ones(4, 6, dtype=torch.bool).tril() if causal else keep
        scores = (q.double() @ k.double().transpose(-2, -1)) / 8 ** 0.5
        want = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v.double()
        assert rel_err(got, want) <= 1e-6


class MaskOps(nn.Module):
    """The tensor ops masked attention is written in (F.multi_head_attention_forward's, a decoder's)."""
    def forward(self, scores, keep, a, b):
        filled = scores.masked_fill(~keep, float("-inf"))
        base = torch.zeros_like(scores).masked_fill_(keep.logical_not(), -1e4) + torch.ones_like(scores)
        return (filled.softmax(-1), torch.baddbmm(base, a, b), torch.baddbmm(base, a, b, beta=0.5, alpha=2.0),
                torch.full_like(scores, 3.0) * scores, scores.unflatten(1, (2, 2)), torch.masked_fill(scores, keep, 0.5))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_mask_ops(device, trace):
    torch.manual_seed(68)
    keep = torch.rand(3, 4, 5) > 0.4
    keep[..., 0] = True
    inputs = (torch.randn(3, 4, 5), keep, torch.randn(3, 4, 6), torch.randn(3, 6, 5))
    want, got, text = compiled_both_ways(MaskOps(), inputs, trace, device)
    assert_close(got, want, tol=1e-6)
    assert eager_lines(text) == [], text


class Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.ceil = nn.AvgPool2d(3, 2, ceil_mode=True)
        self.exclude = nn.AvgPool2d(3, 2, padding=1, count_include_pad=False)

    def forward(self, x):
        return (self.ceil(x), self.exclude(x),
                F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),                       # partial windows over padding
                F.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False),
                F.avg_pool2d(x, 3, 1, 1, divisor_override=5),
                F.avg_pool2d(x, 2, 2))                                          # spire's plain pooling


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_avg_pool_divisors(device, trace):
    torch.manual_seed(66)
    want, got, text = compiled_both_ways(Pools(), (torch.randn(2, 3, 8, 7) + 1,), trace, device)
    assert_close(got, want, tol=1e-6)
    assert eager_lines(text) == [], text


class SeluCelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.selu, self.celu = nn.SELU(), nn.CELU(0.6)

    def forward(self, x):
        return self.selu(x), self.celu(x), F.selu(x), F.celu(x, 1.5), torch.selu(x)


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_selu_and_celu(device, trace):
    torch.manual_seed(67)
    want, got, text = compiled_both_ways(SeluCelu(), (torch.randn(2, 6, 7) * 3,), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text
