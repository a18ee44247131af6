"""A compiled module's call uploads no parameter when nothing changed (counted by the extension's debug counter,
Executable.parameter_uploads) and uploads again exactly what PyTorch changed: in place (_version), by a new tensor
object, or through .data."""
import torch

import spire.torch
from models import SiluMLP, rel_err, seeded


def _uploads(compiled):
    """Parameter uploads over every plan of every segment compiled so far."""
    return sum(p.exe.parameter_uploads for part in compiled._partitions.values() for r in part.runners.values()
               for p in set(r.plans.values()))


def test_calls_upload_parameters_only_when_they_change(device):
    model = seeded(SiluMLP, seed=42).eval()
    x = torch.randn(3, 128)
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    with torch.no_grad():
        compiled(x)
        first = _uploads(compiled)
        assert first == 4  # two weights and two biases, once each
        for _ in range(3):
            y = compiled(torch.randn(3, 128))
        assert _uploads(compiled) == first, "a call with unchanged parameters uploaded some again"

        model.linear2.bias.add_(1.0)  # in place: its _version changes, nothing else
        y = compiled(x)
        assert _uploads(compiled) == first + 1
        assert rel_err(y, model(x)) <= 1e-4
        compiled(x)
        assert _uploads(compiled) == first + 1

        model.linear1.weight = torch.nn.Parameter(model.linear1.weight.detach() * 0.5)  # a new tensor, same shape
        y = compiled(x)
        assert _uploads(compiled) == first + 2
        assert rel_err(y, model(x)) <= 1e-4

        model.linear1.bias.data = torch.randn(64)  # new storage under the same Parameter
        y = compiled(x)
        assert _uploads(compiled) == first + 3
        assert rel_err(y, model(x)) <= 1e-4


def test_results_are_fresh_tensors_each_call(device):
    # Outputs are copied out of spire's buffers into new tensors: an earlier result never changes under the caller.
    model = seeded(SiluMLP, seed=43).eval()
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    a, b = torch.randn(2, 128), torch.randn(2, 128)
    with torch.no_grad():
        ya = compiled(a)
        ya_copy = ya.clone()
        yb = compiled(b)
        assert torch.equal(ya, ya_copy)
        assert rel_err(ya, model(a)) <= 1e-4 and rel_err(yb, model(b)) <= 1e-4


def test_cuda_tensors_stay_on_the_device(device):
    # spire's cuda:N (or a vulkan:M that shares the GPU's memory) with torch tensors on cuda:N: inputs, weights and
    # outputs are copied device to device (the plan streams nothing through the host); results equal eager's and land
    # on torch's device.
    peer = spire.open_device(device).cuda_peer if torch.cuda.is_available() else None
    if peer is None:
        import pytest
        pytest.skip("needs torch's CUDA and a spire device that reads its memory in place")
    dev = torch.device("cuda", peer)
    model = seeded(SiluMLP, seed=44).eval().to(dev)
    compiled = spire.torch.compile(model, device=device)
    with torch.no_grad():
        for batch in (5, 3):  # the second runs padded in a plan for more rows
            x = torch.randn(batch, 128, device=dev)
            y = compiled(x)
            assert y.device == dev and y.shape == (batch, 128)
            assert rel_err(y, model(x)) <= 1e-4
        plans = {p for part in compiled._partitions.values() for r in part.runners.values() for p in r.plans.values()}
        assert plans and all(p.device_io for p in plans)
        uploads = _uploads(compiled)
        model.linear1.weight.mul_(2)
        x = torch.randn(3, 128, device=dev)
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert _uploads(compiled) == uploads + 1


def test_a_replaced_submodule_is_traced_again(device):
    # model.linear1 = a new module: symbolic_trace's graph called the old one. The call after a replacement runs the
    # module as it is now (a new Linear of the same shape, then a Sequential of another structure), saying so once.
    import warnings

    import pytest
    model = seeded(SiluMLP, seed=45).eval()
    x = torch.randn(3, 128)
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) <= 1e-4
        torch.manual_seed(7)
        model.linear1 = torch.nn.Linear(128, 64)
        with pytest.warns(UserWarning, match="traced and compiled again"):
            y = compiled(x)
        assert rel_err(y, model(x)) <= 1e-4
        model.linear2 = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 128))
        with pytest.warns(UserWarning, match="was replaced"):
            y = compiled(x)
        assert rel_err(y, model(x)) <= 1e-4
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing replaced since: no tracing, no compiling
            assert rel_err(compiled(x), model(x)) <= 1e-4


def test_a_replaced_submodule_is_seen_where_make_fx_traces(device):
    # nn.TransformerEncoderLayer's fast-path checks defeat symbolic tracing (make_fx traces it per call key): a replaced
    # submodule drops those traces too.
    import pytest
    torch.manual_seed(46)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    x = torch.randn(2, 8, 32)
    compiled = spire.torch.compile(layer, device=device, dynamic=False)
    with torch.no_grad():
        assert rel_err(compiled(x), layer(x)) <= 1e-4
        layer.linear2 = torch.nn.Linear(64, 32)
        with pytest.warns(UserWarning, match="was replaced"):
            y = compiled(x)
        assert rel_err(y, layer(x)) <= 1e-4
