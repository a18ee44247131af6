"""F.grid_sample (and what make_fx records for it, aten.grid_sampler_2d) on spire, built by the same graph composite as
the ONNX importer's GridSample (ir/graph/composites/grid_sample.h), in every mode (bilinear, nearest, bicubic) and
padding against eager PyTorch with grid points inside, on the border and outside the input; and RAFT's correlation
lookup (linspace offsets around each pixel, sampled with align_corners)."""
import pytest
import torch
import torch.nn.functional as F

from models import rel_err
from test_decoders import compiled_both_ways, eager_lines


class Sample(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.mode, self.padding, self.align = mode, padding, align

    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding, align_corners=self.align) * 2


class CorrelationLookup(torch.nn.Module):
    """RAFT's lookup of a correlation volume around each pixel's flow target (torchvision's raft.py)."""

    def __init__(self, radius=2):
        super().__init__()
        self.radius = radius

    def forward(self, volume, centroids):
        side = 2 * self.radius + 1
        di = torch.linspace(-self.radius, self.radius, side)
        dj = torch.linspace(-self.radius, self.radius, side)
        delta = torch.stack(torch.meshgrid(di, dj, indexing="ij"), dim=-1).view(1, side, side, 2)
        coords = centroids.view(-1, 1, 1, 2) + delta
        h, w = volume.shape[-2:]
        xgrid, ygrid = coords.split([1, 1], dim=-1)
        grid = torch.cat([2 * xgrid / (w - 1) - 1, 2 * ygrid / (h - 1) - 1], dim=-1)
        return F.grid_sample(volume, grid, mode="bilinear", align_corners=True)


def grid_points(n, ho, wo, seed):
    g = torch.Generator().manual_seed(seed)
    grid = torch.rand(n, ho, wo, 2, generator=g) * 2.6 - 1.3  # some points past the border on every side
    grid[0, 0, 0] = torch.tensor([-1.0, 1.0])                 # exactly on corners and edges
    grid[0, 0, 1] = torch.tensor([1.0, 0.0])
    return grid


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
@pytest.mark.parametrize("mode,padding,align", [("bilinear", "zeros", False), ("bilinear", "border", True),
                                                ("bilinear", "reflection", False), ("nearest", "zeros", True),
                                                ("nearest", "reflection", True), ("bilinear", "zeros", True),
                                                ("bicubic", "zeros", False), ("bicubic", "border", True),
                                                ("bicubic", "reflection", False), ("bicubic", "reflection", True)])
def test_grid_sample_matches_eager(device, trace, mode, padding, align):
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(54))
    want, got, text = compiled_both_ways(Sample(mode, padding, align), (x, grid_points(2, 5, 6, 55)), trace, device)
    assert rel_err(got, want) <= 1e-5
    assert not eager_lines(text), text


@pytest.mark.parametrize("trace", ["make_fx"])  # torch.meshgrid stops symbolic_trace (RAFT is make_fx's too)
def test_raft_correlation_lookup_runs_on_spire(device, trace):
    g = torch.Generator().manual_seed(56)
    volume = torch.randn(6, 1, 8, 10, generator=g)
    centroids = torch.rand(6, 2, generator=g) * torch.tensor([9.0, 7.0])
    want, got, text = compiled_both_ways(CorrelationLookup(), (volume, centroids), trace, device)
    assert rel_err(got, want) <= 1e-5
    assert "grid_sample" in text and not [line for line in eager_lines(text) if "grid_sample" in line], text


def test_raft_small_is_one_segment(device):
    # torchvision's RAFT (random weights, a fixed seed), its correlation pyramid sampled by grid_sample and its
    # encoders' instance norms followed by in-place ReLUs: one spire segment and nothing in eager PyTorch (the unread
    # uint8 buffers make_fx records for batch norm are not run). 128x128: at 64x64 the pyramid's last level is 1x1,
    # where RAFT divides by zero in eager PyTorch too.
    import torchvision
    import spire.torch
    torch.manual_seed(57)
    model = torchvision.models.optical_flow.raft_small(weights=None).eval()
    compiled = spire.torch.compile(model, device=device)
    for seed in (58, 59):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.rand(1, 3, 128, 128, generator=g), torch.rand(1, 3, 128, 128, generator=g)
        with torch.no_grad():
            got, want = compiled(a, b, num_flow_updates=2), model(a, b, num_flow_updates=2)
        assert len(got) == len(want) == 2 and all(rel_err(x, y) <= 1e-4 for x, y in zip(got, want))
    text = compiled.explain(a, b, num_flow_updates=2)
    assert text.count("spire segment") == 1, text
    assert not eager_lines(text), text  # (make_fx's unread uint8 buffers of batch norm are listed as unused)
