"""Group and instance norm, ELU / softplus / mish / PReLU, pixel shuffle, nearest upsampling, transposed convolution,
stack, the ATen ops of LSTM / GRU (unsafe_split, stack, transpose_) and nn.MultiheadAttention inside
nn.TransformerDecoderLayer: each against eager PyTorch with fixed seeds, through both traces where both apply
(symbolic_trace's modules and functions, make_fx's ATen ops), nothing of them left in eager."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spire.torch
from models import rel_err, seeded
from test_decoders import compiled_both_ways, eager_lines

TOL = 1e-4


def assert_close(got, want, tol=TOL):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.shape, w.shape)
        assert rel_err(g, w) <= tol


def randomize(model):
    """Affine weights, biases and running statistics away from their 1 / 0 defaults, so that each takes part."""
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if t.is_floating_point():
                t.uniform_(0.5, 1.5) if "var" in name or "weight" in name else t.uniform_(-0.5, 0.5)
    return model


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.gn_plain = nn.GroupNorm(4, 8, affine=False)
        self.inorm = nn.InstanceNorm2d(8)
        self.inorm_affine = nn.InstanceNorm2d(8, affine=True)
        self.inorm_running = nn.InstanceNorm2d(8, affine=True, track_running_stats=True)
        self.w = nn.Parameter(torch.ones(8))

    def forward(self, x):
        return (self.gn(x), self.gn_plain(x), self.inorm(x), self.inorm_affine(x), self.inorm_running(x),
                F.group_norm(x, 8, self.w, None, 1e-3), F.instance_norm(x, weight=self.w))


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.elu, self.softplus, self.mish = nn.ELU(0.7), nn.Softplus(beta=0.5, threshold=3), nn.Mish()
        self.prelu, self.prelu_one, self.hardsigmoid = nn.PReLU(6), nn.PReLU(), nn.Hardsigmoid()
        self.w = nn.Parameter(torch.full((6,), 0.2))

    def forward(self, x):
        return (F.elu(x), F.elu(x, 0.5), self.elu(x), F.softplus(x), F.softplus(x, 2, 5), self.softplus(x),
                F.mish(x), self.mish(x), self.prelu(x), self.prelu_one(x), F.prelu(x, self.w), F.hardsigmoid(x),
                self.hardsigmoid(x), F.hardswish(x))


# The norms on [3, 8, 5, 6] off zero mean and unit variance; the activations on [2, 6, 7] past softplus's thresholds
# on both sides.
@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
@pytest.mark.parametrize("cls, seed, x", [(Norms, 50, lambda: torch.randn(3, 8, 5, 6) * 2 + 1),
                                          (Activations, 52, lambda: torch.randn(2, 6, 7) * 8)])
def test_norms_and_activations(device, trace, cls, seed, x):
    model = randomize(seeded(cls, seed=seed))
    torch.manual_seed(seed + 1)
    want, got, text = compiled_both_ways(model, (x(),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


class Layouts(nn.Module):
    def __init__(self):
        super().__init__()
        self.ps, self.up = nn.PixelShuffle(2), nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        return (self.ps(x), F.pixel_shuffle(x, 2), self.up(x), F.interpolate(x, scale_factor=3),
                F.interpolate(x, size=(12, 20)), torch.stack([x, x * 2], 1), torch.stack([x, x], -1))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_pixel_shuffle_upsample_stack(device, trace):
    torch.manual_seed(54)
    want, got, text = compiled_both_ways(Layouts(), (torch.randn(2, 8, 4, 5),), trace, device)
    assert_close(got, want, tol=0)  # data movement only
    assert eager_lines(text) == [], text


class TransposedConvs(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 4, 3, 2, 1, output_padding=1)
        self.grouped = nn.ConvTranspose2d(8, 6, 2, 2, groups=2, bias=False)
        self.dilated = nn.ConvTranspose2d(8, 3, 3, 1, 2, dilation=2)
        self.w = nn.Parameter(torch.randn(8, 5, 4, 3) * 0.1)

    def forward(self, x):
        return (self.up(x), self.grouped(x), self.dilated(x), F.conv_transpose2d(x, self.w, None, (2, 3), (1, 0)))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_conv_transpose2d(device, trace):
    model = seeded(TransposedConvs, seed=55)
    torch.manual_seed(56)
    want, got, text = compiled_both_ways(model, (torch.randn(2, 8, 5, 6),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
def test_recurrent_layers(device, cls):
    # symbolic_trace cannot follow them (make_fx then records unsafe_split, stack and GRU's transpose_).
    model = seeded(cls, 8, 16, batch_first=True, seed=57).eval()
    torch.manual_seed(58)
    x = torch.randn(2, 5, 8)
    compiled = spire.torch.compile(model, device=device)
    with torch.no_grad():
        want, got = model(x), compiled(x)
    assert rel_err(got[0], want[0]) <= TOL
    text = compiled.explain(x)
    # torch >= 2 records a CPU LSTM as one fused oneDNN op (aten.mkldnn_rnn_layer), which stays in eager PyTorch, and
    # so may the few small ops between its calls (the partition's cost rule); nothing else may.
    fused = [line for line in eager_lines(text) if "mkldnn_rnn_layer" in line]
    rest = [line for line in eager_lines(text) if line not in fused]
    if fused:
        assert all("cheaper there than a device call" in line for line in rest), text
    else:
        assert rest == [] and text.count("spire segment") == 1, text


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_decoder_layer_attention(device, trace, batch_first):
    # nn.TransformerDecoderLayer as the root (symbolic_trace keeps a nested one as a leaf): its self- and
    # cross-attention stay nn.MultiheadAttention modules, called with need_weights=False and no masks.
    model = seeded(nn.TransformerDecoderLayer, 32, 4, 64, batch_first=batch_first, seed=59)
    torch.manual_seed(60)
    x, memory = torch.randn(2, 7, 32), torch.randn(2, 5, 32)
    if not batch_first:
        x, memory = x.transpose(0, 1).contiguous(), memory.transpose(0, 1).contiguous()
    want, got, text = compiled_both_ways(model, (x, memory), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text
    if trace == "symbolic":
        assert text.count("(MultiheadAttention)") == 2, text


class AttentionWithBiasKV(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True, add_bias_kv=True)

    def forward(self, x, mask):
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0] + 1


def test_attention_with_bias_kv_is_refused(device):
    # (masks and returned weights map: test_resize_and_masks.py)
    model = seeded(AttentionWithBiasKV, seed=61)
    want, got, text = compiled_both_ways(model, (torch.randn(2, 4, 16), torch.zeros(4, 4)), "symbolic", device)
    assert_close(got, want)
    assert any("bias_k, bias_v or add_zero_attn" in line for line in eager_lines(text)), text


class DecodeBoxes(nn.Module):
    """A detector's box decoding (torchvision's BoxLinearCoder), run on as many boxes as passed: none at times."""

    def forward(self, rel_codes, boxes):
        ctr_x, ctr_y = 0.5 * (boxes[..., 0] + boxes[..., 2]), 0.5 * (boxes[..., 1] + boxes[..., 3])
        w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
        rel = rel_codes * torch.stack((w, h, w, h), dim=-1)
        return torch.cat([torch.stack((ctr_x - rel[..., 0], ctr_y - rel[..., 1]), dim=-1),
                          torch.stack((ctr_x + rel[..., 2], ctr_y + rel[..., 3]), dim=-1)], dim=1)


def test_stack_and_cat_of_empty_values_keep_their_shapes(device):
    # The first call with no boxes compiled a plan whose stack kept one of its empty inputs: [0, 1], not [0, 4].
    compiled = spire.torch.compile(DecodeBoxes(), device=device)
    torch.manual_seed(53)
    for n in (0, 3, 0, 5):
        rel_codes, boxes = torch.randn(n, 4), torch.rand(n, 4) * 10
        with torch.no_grad():
            got, want = compiled(rel_codes, boxes), DecodeBoxes()(rel_codes, boxes)
        assert got.shape == want.shape == (n, 4)
        if n:
            assert rel_err(got, want) <= 1e-6
