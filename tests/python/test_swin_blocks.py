"""Swin Transformer through spire.torch.compile: torchvision's window attention, relative position bias and patch
merging (helpers symbolic_trace keeps as calls, library_ops.py's handlers); the padding (every mode, and convolutions'
padding modes), roll and flip such models are made of; each against eager PyTorch with fixed seeds, nothing left in
eager."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.swin_transformer import PatchMergingV2, SwinTransformer, SwinTransformerBlockV2

import spire.torch
from models import seeded
from test_decoders import compiled_both_ways, eager_lines
from test_more_ops import assert_close


class PadsAndRolls(nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect, self.replicate = nn.ReflectionPad2d((1, 2, 3, 0)), nn.ReplicationPad1d(2)
        self.zero, self.constant = nn.ZeroPad2d(1), nn.ConstantPad2d((0, 1, 2, 0), 1.5)

    def forward(self, x):
        return (F.pad(x, (1, 2)), F.pad(x, (0, 0, 3, 0, 1, 1), value=-2.5), torch.constant_pad_nd(x, (2, 1, 1, 2), 0.5),
                torch.roll(x, 2, 1), torch.roll(x, (-1, 3), (2, 3)), x.roll(-7, -1),
                F.pad(x, (4, 3, 2, 3), mode="reflect"), F.pad(x, (5, 1, 0, 0), mode="replicate"),
                F.pad(x, (2, 5, 4, 1), mode="circular"), self.reflect(x), self.replicate(x[0]), self.zero(x),
                self.constant(x), torch.flip(x, (1, 3)), x.flip(-2))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_pad_and_roll(device, trace):
    torch.manual_seed(71)
    want, got, text = compiled_both_ways(PadsAndRolls(), (torch.randn(2, 3, 4, 5),), trace, device)
    assert_close(got, want, tol=0)  # data movement only
    assert eager_lines(text) == [], text  # make_fx's circular padding too: copies into slices, functionalized


class PaddedConvs(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(3, 4, 3, padding=p, padding_mode=m)
                                   for p, m in ((1, "reflect"), (2, "replicate"), ((1, 2), "circular"), ("same", "reflect")))

    def forward(self, x):
        return tuple(conv(x) for conv in self.convs)


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_convolutions_with_padding_modes(device, trace):
    model = seeded(PaddedConvs, seed=74)
    torch.manual_seed(75)
    want, got, text = compiled_both_ways(model, (torch.randn(2, 3, 6, 7),), trace, device)
    assert_close(got, want, tol=1e-5)
    assert eager_lines(text) == [], text  # make_fx's circular padding too: copies into slices, functionalized


class Lookups(nn.Module):
    """What Swin's helpers become where they are traced into (Dynamo): a table's rows picked by an index buffer, and
    tensors made with new_*."""
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(10, 3))
        self.register_buffer("index", torch.tensor([3, 0, 9, 3, 5, 5]))

    def forward(self, x):
        rows = self.table[self.index]
        return (rows * x[:, :1], x.new_zeros((2, 3)) + 1, x.new_ones(4), x.new_full((2, 2), 7.5),
                x.new_zeros(x.shape[0], 3) + x[:, :3])


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_lookups_and_new_tensors(device, trace):
    torch.manual_seed(76)
    model = seeded(Lookups, seed=77)
    want, got, text = compiled_both_ways(model, (torch.randn(6, 4),), trace, device)
    assert_close(got, want, tol=1e-6)
    assert eager_lines(text) == [], text


def small_swin(version):
    # Two stages of two blocks (every other block's windows shifted), 4x4 windows over 9x9 patches of a 36x36 image:
    # the windows need padding (9 -> 12), the shift a mask, and patch merging an odd size padded (9 -> 10). Version 2:
    # cosine attention with a learned logit scale, and a continuous position bias.
    v2 = {"block": SwinTransformerBlockV2, "downsample_layer": PatchMergingV2} if version == 2 else {}
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                           num_classes=7, **v2)


@pytest.mark.parametrize("version", [1, 2])
def test_swin_transformer(device, version):
    model = seeded(small_swin, version, seed=72).eval()
    with torch.no_grad():
        for p in model.parameters():  # a relative position bias away from its zero-ish start, so that it takes part
            p.add_(torch.randn_like(p) * 0.05)
    compiled = spire.torch.compile(model, device=device)
    torch.manual_seed(73)
    for batch in (2, 1):
        x = torch.randn(batch, 3, 36, 36)
        with torch.no_grad():
            want, got = model(x), compiled(x)
        assert_close(got, want, tol=1e-5)
    text = compiled.explain(x)
    assert eager_lines(text) == [] and text.count("spire segment") == 1, text
    assert "shifted_window_attention" in text and "_patch_merging_pad" in text, text
