"""Golden tests: spire.torch.compile against eager PyTorch, fixed seeds, every device present, 1e-4 relative."""
import pytest
import torch
import torchvision

import spire.torch
from models import LeNet, SiluMLP, rel_err, seeded

TOL = 1e-4


def check(model, x, device):
    model.eval()
    with torch.no_grad():
        want = model(x)
        compiled = spire.torch.compile(model, (x,), device=device)
        got = compiled(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert rel_err(got, want) <= TOL
    return compiled


def test_lenet(device):
    torch.manual_seed(1)
    compiled = check(seeded(LeNet), torch.randn(4, 1, 28, 28), device)
    # Everything on spire: one segment, no node left in eager PyTorch.
    assert "eager" not in compiled.explain(torch.randn(4, 1, 28, 28))


def test_silu_mlp(device):
    torch.manual_seed(2)
    check(seeded(SiluMLP), torch.randn(8, 128), device)


def test_resnet18(device):
    torch.manual_seed(3)
    model = seeded(torchvision.models.resnet18, num_classes=10)
    compiled = check(model, torch.randn(2, 3, 64, 64), device)
    assert "eager" not in compiled.explain(torch.randn(2, 3, 64, 64))


def test_mobilenet_v2(device):
    torch.manual_seed(4)
    model = seeded(torchvision.models.mobilenet_v2, num_classes=10)
    check(model, torch.randn(2, 3, 64, 64), device)


def test_dump_writes_every_stage(device, tmp_path):
    torch.manual_seed(5)
    model = seeded(SiluMLP).eval()
    with torch.no_grad():
        spire.torch.compile(model, (torch.randn(2, 128),), device=device, dump=str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.startswith("fx_graph") for n in names)
    graphs = [p for p in tmp_path.iterdir() if p.name.endswith(".graph")]
    plans = [p for p in tmp_path.iterdir() if p.name.endswith(".plan.txt")]
    assert graphs and plans
    assert "silu" in graphs[0].read_text() and "matmul" in graphs[0].read_text()


@pytest.mark.parametrize("name", ["lenet", "resnet18"])
def test_aten_graphs_from_make_fx(device, name):
    # What functorch's make_fx records (ATen ops, in-place relu_, max pooling with indices, native_batch_norm) maps
    # onto the same spire ops, all of it.
    from functorch import make_fx
    torch.manual_seed(6)
    if name == "lenet":
        model, x = seeded(LeNet).eval(), torch.randn(2, 1, 28, 28)
    else:
        model, x = seeded(torchvision.models.resnet18, num_classes=10).eval(), torch.randn(2, 3, 64, 64)
    gm = make_fx(model)(x)
    assert any("aten" in str(n.target) for n in gm.graph.nodes)
    compiled = check(gm, x, device)
    assert "eager" not in compiled.explain(x)


class AlongAxisSpellings(torch.nn.Module):
    # Every PyTorch spelling of the ops along one axis that the converter maps by rule (torch_ops.py, aten_ops.py).
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.rows = torch.nn.Softmax(dim=1)
        self.log_rows = torch.nn.LogSoftmax(dim=-1)

    def forward(self, x):
        h = self.fc(x)
        a = self.rows(h) + torch.nn.functional.softmax(h, dim=0) + torch.softmax(h, 1) + h.softmax(-1)
        b = self.log_rows(h) + torch.nn.functional.log_softmax(h, 1) + torch.log_softmax(h, dim=0) + h.log_softmax(1)
        return a * b


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_ops_along_one_axis_in_every_spelling(device, trace):
    from functorch import make_fx
    torch.manual_seed(8)
    model, x = seeded(AlongAxisSpellings).eval(), torch.randn(6, 16)
    if trace == "make_fx":
        model = make_fx(model)(x)
        assert any("_softmax" in str(n.target) for n in model.graph.nodes)
    compiled = check(model, x, device)
    assert "eager" not in compiled.explain(x)


def test_transformer_encoder_layer(device):
    # symbolic_trace cannot follow its fast-path checks: the graph comes from make_fx. Traced under no_grad in eval
    # mode it is one fused ATen op; traced with grad enabled it is plain ATen ops.
    torch.manual_seed(7)
    model = seeded(torch.nn.TransformerEncoderLayer, 32, 4, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 5, 32)
    compiled = spire.torch.compile(model, device=device)
    got = compiled(x)
    assert rel_err(got, model(x)) <= TOL
    assert "eager" not in compiled.explain(x)
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) <= TOL
        # torch 1.13's make_fx records the fast path's fused op (torch._transformer_encoder_layer_fwd, which spire
        # maps onto its ops); torch 2.11's does not take the fast path under make_fx. Either way all runs on spire.
        assert "eager" not in compiled.explain(x)


class WithOptionalArguments(torch.nn.Module):
    """A forward with keyword and optional arguments, branching on one being None as a decoder does on its mask."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x, bias=None, scale: float = 1.0):
        y = self.fc(x) * scale
        return y if bias is None else y + bias


def test_keyword_and_optional_arguments(device):
    # A call binds to the forward's parameters (keywords, defaults); arguments that are not tensors are constants of
    # the trace, so the branch on `bias is None` follows each call (one trace per value).
    model = seeded(WithOptionalArguments, seed=47).eval()
    x, b = torch.randn(4, 16), torch.randn(16)
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    calls = [((x,), {}), ((x, b), {}), ((), {"x": x}), ((x,), {"bias": b}), ((x,), {"scale": 2.0}), ((x, b, 0.5), {})]
    with torch.no_grad():
        for args, kwargs in calls:
            assert rel_err(compiled(*args, **kwargs), model(*args, **kwargs)) <= TOL, (len(args), kwargs)
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            compiled(x, bogus=1)
        with pytest.raises(TypeError, match="missing a required argument: 'x'"):
            compiled()


class WithDictOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.fc(x)
        return {"hidden": h, "pooled": [h.mean(0), h.amax(0)]}


def test_containers_come_back_as_the_forward_returns_them(device):
    # A dict of a tensor and a list, as eager returns it: plain, mutable containers (not FX's read-only ones).
    model = seeded(WithDictOutput, seed=48).eval()
    x = torch.randn(4, 16)
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert type(got) is dict and type(got["pooled"]) is list
    assert rel_err(got["hidden"], want["hidden"]) <= TOL
    for g, w in zip(got["pooled"], want["pooled"]):
        assert rel_err(g, w) <= TOL
    got["extra"] = 1  # mutable, as eager's is
