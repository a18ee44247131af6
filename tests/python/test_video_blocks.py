"""Video models' 3-D blocks through spire.torch.compile (torchvision's r3d_18 / mc3_18 / r2plus1d_18 / s3d are made
of them): Conv3d as 2-D convolutions over depth taps (strides, padding, dilation, groups, a bias, padding modes),
BatchNorm3d, 3-D max and average pooling (2-D pools over the same taps), adaptive 3-D average pooling; each through
both traces against eager PyTorch with fixed seeds, nothing left in eager."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from models import rel_err, seeded, step_gradients
from test_decoders import compiled_both_ways, eager_lines
from test_more_ops import assert_close, randomize


class VideoStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False)
        self.bn = nn.BatchNorm3d(8)
        self.spatial = nn.Conv3d(8, 6, (1, 3, 3), padding=(0, 1, 1))            # r2plus1d's (2+1)-D split
        self.temporal = nn.Conv3d(6, 8, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0))
        self.grouped = nn.Conv3d(8, 8, 3, padding=2, dilation=2, groups=4)
        self.reflect = nn.Conv3d(8, 4, 3, padding=1, padding_mode="replicate")
        self.pool, self.pool2 = nn.AdaptiveAvgPool3d(1), nn.AdaptiveAvgPool3d((1, 2, 3))
        self.max_spatial, self.max_all = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)), nn.MaxPool3d(3, 2, 1)
        self.avg = nn.AvgPool3d((2, 3, 3), stride=1)

    def forward(self, x):
        y = torch.relu(self.bn(self.stem(x)))
        y = self.temporal(torch.relu(self.spatial(y)))
        y = self.reflect(self.grouped(y) + y)
        z = F.conv3d(y, torch.ones(2, 4, 2, 1, 1) * 0.25, stride=(1, 2, 1))
        pools = (self.max_spatial(y), self.max_all(y), self.avg(y), F.avg_pool3d(y, 3, (1, 2, 2), 1),
                 F.max_pool3d(y, (2, 2, 3), dilation=(2, 1, 1)))
        return (self.pool(y).flatten(1), self.pool2(y), F.adaptive_avg_pool3d(z, (1, 1, 1))) + pools


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_video_stem(device, trace):
    model = randomize(seeded(VideoStem, seed=31))
    torch.manual_seed(32)
    want, got, text = compiled_both_ways(model, (torch.randn(2, 3, 5, 12, 18),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text


class VideoHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 4, (3, 3, 3), stride=(2, 1, 1), padding=1)
        self.pool = nn.MaxPool3d((2, 2, 2))

    def forward(self, x):
        return F.avg_pool3d(self.pool(torch.relu(self.conv(x))), (1, 2, 2))


def test_conv3d_and_pool3d_gradients(device):
    # A training step through the taps: the convolution's weight and bias gradients and the input's, against eager.
    model = seeded(VideoHead, seed=33)
    torch.manual_seed(34)
    x, target = torch.randn(2, 3, 6, 8, 8), torch.randn(2, 4, 1, 2, 2)
    for want, got in zip(*step_gradients(model, x, target, [model.conv.weight, model.conv.bias], device)):
        assert rel_err(got, want) <= 1e-4
