"""A module neither trace can follow runs its own Python in eager PyTorch and its submodules on spire (stand_ins.py):
results and gradients as eager's, the user's module untouched, and what spire could not take exactly (a call with an
object holding tensors, a hooked submodule) run as such a module in turn."""
from contextlib import nullcontext

import pytest
import torch

import spire.torch
from models import rel_err, seeded


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = torch.nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


class Boxes:
    """An object holding tensors (as torchvision's ImageList holds the batch): not a value a trace can take."""

    def __init__(self, tensor):
        self.tensor = tensor


class Scale(torch.nn.Module):
    def forward(self, boxes, factor):
        return boxes.tensor * factor


class Detector(torch.nn.Module):
    """Branches on tensor values between its parts, as detection models do between backbone, heads and selection."""

    def __init__(self, width=8):
        super().__init__()
        self.backbone = Block(width)
        self.heads = torch.nn.ModuleList([torch.nn.Linear(width, 3), torch.nn.Linear(width, 5)])
        self.named = torch.nn.ModuleDict({"extra": Block(width)})
        self.scale = Scale()

    def forward(self, x):
        assert isinstance(self.backbone, Block)  # a stand-in is still an instance of the child's class
        features = self.backbone(x)
        if features.sum() > 0:  # what neither symbolic_trace nor make_fx follows
            features = self.named["extra"](features)
        outs = [head(features) for head in self.heads]
        return outs[0].sum(dim=1, keepdim=True) + outs[1].mean(dim=1, keepdim=True) + \
            self.scale(Boxes(features[:, :1]), 0.5)


def compiled_of(model, device):
    compiled = spire.torch.compile(model, device=device)
    with pytest.warns(UserWarning, match="its own Python runs in eager PyTorch, its submodules on spire"):
        compiled(torch.randn(4, 8))
    return compiled


def test_submodules_of_an_untraceable_module_run_on_spire(device):
    model = seeded(Detector, seed=41).eval()
    compiled = compiled_of(model, device)
    torch.manual_seed(42)
    for shift in (3.0, -3.0, 0.0):  # both branches taken
        x = torch.randn(4, 8) + shift
        with torch.no_grad():
            assert rel_err(compiled(x), model(x)) <= 1e-5
    from spire.torch.stand_ins import compiled_children
    children = compiled_children(compiled._stand_in)
    # The backbone, both heads (items of a ModuleList) and the ModuleDict's block ran on spire; Scale's call holds an
    # object with tensors inside, so Scale's own Python ran in PyTorch (it has no submodules).
    assert sorted(children) == ["backbone", "heads.0", "heads.1", "named.extra"], sorted(children)
    assert all(c.compilations >= 1 for c in children.values())
    text = compiled.explain(x)
    assert "eager  untraced" in text and "its submodule backbone (Block):\n    spire segment 0" in text, text
    assert "spire segment" in text.split("its submodule heads.1")[1], text


def test_the_users_module_is_left_as_it_was(device):
    model = seeded(Detector, seed=43).eval()
    before = dict(vars(model))
    children = dict(model.named_children())
    compiled_of(model, device)
    assert type(model.backbone) is Block and type(model.heads) is torch.nn.ModuleList
    assert dict(model.named_children()) == children and dict(vars(model)).keys() == before.keys()
    # A mode change of the user's module reaches the stand-ins (they share its state).
    model.train()
    assert compiled_of(model, device)._stand_in.backbone.training


def test_gradients_through_submodules_on_spire_match_eager(device):
    model = seeded(Detector, seed=44)
    twin = seeded(Detector, seed=44)
    compiled = compiled_of(model, device)
    torch.manual_seed(45)
    x = torch.randn(4, 8) + 3.0
    compiled(x).square().sum().backward()
    twin(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert p.grad is not None, name
        assert rel_err(p.grad, q.grad) <= 1e-4, name


def test_a_hooked_or_replaced_submodule_runs_as_eager_would(device):
    model = seeded(Detector, seed=46).eval()
    compiled = compiled_of(model, device)
    calls = []
    handle = model.backbone.register_forward_hook(lambda m, i, o: calls.append(1) or o * 2)
    torch.manual_seed(47)
    x = torch.randn(4, 8) + 3.0
    with torch.no_grad(), pytest.warns(UserWarning, match="a submodule or a hook of Detector"):
        compiled(x)  # the hook is seen: traced again (make_fx's attempt runs the backbone too)
    calls.clear()
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) <= 1e-5
    assert len(calls) == 2  # once a call: the hooked backbone ran its own Python, not also inside a trace
    from spire.torch.stand_ins import compiled_children
    assert "backbone.fc" in compiled_children(compiled._stand_in)  # its Linear on spire all the same
    handle.remove()
    model.backbone = seeded(Block, 8, seed=48)  # replaced: the new block is the one that runs
    with torch.no_grad(), pytest.warns(UserWarning):
        assert rel_err(compiled(x), model(x)) <= 1e-5


class SelectsByScore(torch.nn.Module):
    """make_fx traces this, but its graph holds topk(..., k) with k the count of one call's scores above zero."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x):
        scores = self.fc(x).squeeze(1)
        kept = scores[scores > 0]
        return kept.topk(min(kept.size(0), 5)).values


def test_a_trace_holding_sizes_of_one_calls_values_is_not_run_again(device):
    model = seeded(SelectsByScore, seed=49).eval()
    compiled = spire.torch.compile(model, device=device)
    torch.manual_seed(50)
    x = torch.randn(16, 4)
    with torch.no_grad(), pytest.warns(UserWarning, match="holds sizes computed from one call's values"):
        assert rel_err(compiled(x), model(x)) <= 1e-6
    for _ in range(4):  # other counts above zero: make_fx's graph would keep the first call's
        x = torch.randn(16, 4) * torch.rand(1) * 4
        with torch.no_grad():
            got, want = compiled(x), model(x)
        assert got.shape == want.shape and rel_err(got, want) <= 1e-6
    assert "its submodule fc (Linear):\n    spire segment 0" in compiled.explain(x)


class Stages(torch.nn.Module):
    """Indexes and slices its ModuleList, branching on values between them."""

    def __init__(self):
        super().__init__()
        self.stages = torch.nn.ModuleList([Block(8) for _ in range(3)])

    def forward(self, x):
        x = self.stages[0](x)
        for stage in self.stages[1:] if x.mean() > -10 else self.stages[:1]:
            x = stage(x)
        return x


def test_a_slice_of_a_module_list_runs_its_items_on_spire(device):
    model = seeded(Stages, seed=60).eval()
    compiled = spire.torch.compile(model, device=device)
    torch.manual_seed(61)
    for _ in range(2):
        x = torch.randn(4, 8)
        with torch.no_grad(), pytest.warns(UserWarning) if _ == 0 else nullcontext():
            assert rel_err(compiled(x), model(x)) <= 1e-5
    from spire.torch.stand_ins import compiled_children
    children = compiled_children(compiled._stand_in)
    assert sorted(children) == ["stages.0", "stages.1", "stages.2"], sorted(children)
    assert all(c.compilations == 1 for c in children.values())  # the slice reuses the items' plans
