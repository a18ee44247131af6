"""Pieces of torchvision's CNNs that used to leave spire.torch.compile's graph in eager PyTorch: max pooling with
ceil_mode=True (googlenet, squeezenet), stochastic depth in evaluation (convnext, efficientnet) and the unread
buffers make_fx records beside a batch norm (shufflenet), each against eager with fixed seeds, through both traces."""
import pytest
import torch
import torch.nn as nn
from torchvision.ops import StochasticDepth

import spire.torch
from models import rel_err, seeded
from test_decoders import compiled_both_ways, eager_lines


class CeilPools(nn.Module):
    """Sizes where ceil mode adds a last partial window (14: k3 s2, and with padding 1), where PyTorch's rule drops the
    window that would start in the padding after (5: k2 s2 p1), and where it changes nothing (13: k3 s2)."""

    def forward(self, x):
        pool = lambda k, s, p: nn.functional.max_pool2d(x, k, s, p, ceil_mode=True)  # noqa: E731
        y = x[:, :, :13, :13]
        return (pool(3, 2, 0), pool(3, 2, 1), nn.functional.max_pool2d(x[:, :, :5, :5], 2, 2, 1, ceil_mode=True),
                nn.functional.max_pool2d(y, 3, 2, 0, ceil_mode=True))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_max_pool_ceil_mode(device, trace):
    torch.manual_seed(40)
    x = -torch.rand(2, 3, 14, 14) - 1  # all negative: a padded element that won a window would show
    want, got, text = compiled_both_ways(CeilPools(), (x,), trace, device)
    assert eager_lines(text) == [], text
    assert [w.shape for w in want] == [g.shape for g in got]
    assert all(torch.equal(w, g) for w, g in zip(want, got))  # a max is exact


class ResidualWithStochasticDepth(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = StochasticDepth(0.2, "row")

    def forward(self, x):
        return x + self.drop(torch.relu(self.bn(self.conv(x))))


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_stochastic_depth_and_batch_norm_in_one_segment(device, trace):
    model = seeded(ResidualWithStochasticDepth, seed=41)
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 2.0)
    want, got, text = compiled_both_ways(model, (torch.randn(2, 4, 9, 9),), trace, device)
    assert rel_err(got, want) <= 1e-5
    assert eager_lines(text) == [], text  # stochastic depth is the identity in evaluation


class UnreadValue(nn.Module):
    """An unread value of a dtype spire lacks between two ops, as make_fx records them in shufflenet (the branch on a
    shape sends spire.torch.compile to make_fx, which records the call; symbolic_trace would run it at trace time)."""

    def forward(self, x):
        y = x * 2
        if x.shape[0] > 0:
            torch.empty(0, dtype=torch.uint8)
        return torch.relu(y) + 1


def test_an_unread_value_does_not_cut_a_segment_and_is_not_run(device):
    x = torch.randn(3, 5)
    compiled = spire.torch.compile(UnreadValue(), device=device)
    with torch.no_grad():
        assert torch.equal(compiled(x), UnreadValue()(x))
    text = compiled.explain(x)
    # The make_fx path; the unread value is listed as such, neither on spire nor in eager PyTorch.
    assert [line for line in text.splitlines() if line.startswith("unused")] == [
        line for line in text.splitlines() if "aten.empty" in line] != [], text
    assert not eager_lines(text), text
    assert sum(line.startswith("spire segment") for line in text.splitlines()) == 1, text
    # One segment and nothing else to run: a call can go straight through the segment (Dynamo's direct call).
    assert any(part.direct_call() is not None for part in compiled._partitions.values())
