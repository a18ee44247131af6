"""The C++ segment call (spire._spire.SegmentCall), which runs a compiled module's steady-state calls: it must run
them (not the Python path), see every change PyTorch makes to a weight (in place under torch.no_grad(), a new
Parameter, new storage through .data, the old tensor put back, a buffer), upload only what changed (counted by
Executable.parameter_uploads), and hand the Python path whatever it cannot take (another shape, a non-contiguous
weight), so results always equal eager's. On spire's cuda:N with torch's CUDA present, model and inputs are torch CUDA
tensors on cuda:N: the C++ call's device-to-device path, ordered against torch's stream; likewise on a vulkan:M that
shares memory with torch's cuda:N (runtime/vulkan/vulkan_cuda_bridge.h)."""
import pytest
import torch
import torch.nn as nn

import spire.torch
from spire.torch.segment_runner import SegmentRunner
from models import SiluMLP, rel_err, seeded


class ConvBN(nn.Module):
    """A convolution, batch norm (running statistics are buffers) and ReLU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def _torch_device(device):
    """Where the test's tensors live: torch's cuda:N where torch has CUDA and spire's device reads cuda:N's memory in
    place (its own for spire's cuda:N, the same GPU's for a vulkan:M whose driver shares memory), else the CPU."""
    peer = spire.open_device(device).cuda_peer if torch.cuda.is_available() else None
    return torch.device("cuda", peer) if peer is not None else torch.device("cpu")


def _setup(cls, seed, device, *shape):
    """The seeded model and an input on the test's torch device, the model compiled and called once (no_grad)."""
    dev = _torch_device(device)
    model = seeded(cls, seed=seed).eval().to(dev)
    x = torch.randn(*shape, device=dev)
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    with torch.no_grad():
        compiled(x)
    return model, x, compiled


def _uploads(compiled):
    return sum(p.exe.parameter_uploads for part in compiled._partitions.values() for r in part.runners.values()
               for p in set(r.plans.values()))


@pytest.fixture
def python_path_calls(monkeypatch):
    """How many segment calls ran the Python path (the rest ran the C++ call)."""
    calls = []
    python_path = SegmentRunner._forward_python

    def counted(runner, inputs, batch):
        calls.append(batch)
        return python_path(runner, inputs, batch)

    monkeypatch.setattr(SegmentRunner, "_forward_python", counted)
    return calls


def test_unchanged_calls_run_in_cpp_and_upload_nothing(device, python_path_calls):
    model, x, compiled = _setup(SiluMLP, 50, device, 2, 128)
    uploads, python_calls = _uploads(compiled), len(python_path_calls)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn_like(x)
            assert rel_err(compiled(x), model(x)) <= 1e-4
    assert len(python_path_calls) == python_calls, "steady-state calls ran the Python path"
    assert _uploads(compiled) == uploads, "a call with unchanged weights uploaded some again"


def test_weight_changed_in_place_changes_the_output(device, python_path_calls):
    model, x, compiled = _setup(SiluMLP, 51, device, 2, 128)
    uploads, python_calls = _uploads(compiled), len(python_path_calls)
    with torch.no_grad():
        before = compiled(x)
        model.linear1.weight.mul_(-1.5)  # in place: only _version changes
        after = compiled(x)
    assert not torch.allclose(before, after)
    assert rel_err(after, model(x)) <= 1e-4
    assert _uploads(compiled) == uploads + 1, "exactly the changed weight is uploaded again"
    assert len(python_path_calls) == python_calls, "an in-place change is the C++ call's to upload"


def test_replaced_parameter_and_storage_change_the_output(device):
    model, x, compiled = _setup(SiluMLP, 52, device, 2, 128)
    original = model.linear2.weight
    with torch.no_grad():
        uploads = _uploads(compiled)
        model.linear2.weight = nn.Parameter(original.detach() * 3.0)  # a new object
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert _uploads(compiled) == uploads + 1
        model.linear2.bias.data = torch.randn(128, device=x.device)  # new storage under the same object
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert _uploads(compiled) == uploads + 2
        model.linear2.weight = original  # the first tensor back, unchanged since its upload
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert _uploads(compiled) == uploads + 3


def test_buffer_changed_in_place_changes_the_output(device):
    model, x, compiled = _setup(ConvBN, 53, device, 1, 3, 8, 8)
    with torch.no_grad():
        before = compiled(x)
        model.bn.running_var.mul_(4.0)
        after = compiled(x)
    assert not torch.allclose(before, after)
    assert rel_err(after, model(x)) <= 1e-4


def test_changes_the_cpp_call_cannot_take_run_the_python_path(device, python_path_calls):
    model, x, compiled = _setup(SiluMLP, 54, device, 2, 128)
    with torch.no_grad():
        python_calls = len(python_path_calls)
        w = model.linear1.weight.detach()
        model.linear1.weight = nn.Parameter(w.t().contiguous().t())  # same values, not contiguous
        assert rel_err(compiled(x), model(x)) <= 1e-4
        model.linear1.weight = nn.Parameter(w * 2)
        assert rel_err(compiled(x), model(x)) <= 1e-4
        x3 = torch.randn(3, 128, device=x.device)  # another input shape: a new plan
        assert rel_err(compiled(x3), model(x3)) <= 1e-4
        assert rel_err(compiled(x), model(x)) <= 1e-4  # the first shape again: its plan's C++ call is kept
        assert len(python_path_calls) == python_calls + 3  # each change, the new shape


def test_a_bad_description_is_a_value_error(device):
    from spire._spire import SegmentCall
    _, _, compiled = _setup(SiluMLP, 55, device, 2, 128)
    exe = next(p.exe for part in compiled._partitions.values() for r in part.runners.values()
               for p in r.plans.values())
    with pytest.raises(ValueError, match="described as"):
        SegmentCall(exe, False, None, 2, [("bogus", 1)], [], [], {}, torch.empty, {})
    with pytest.raises(ValueError, match="current_stream"):
        SegmentCall(exe, True, None, 2, [], [], [], {}, torch.empty, {})


def _weights_as_inputs_graph():
    """A graph as newer Dynamo hands the backend a module's weights: placeholders named after their parameters."""
    g = torch.fx.Graph()
    x = g.placeholder("l_x_")
    w = g.placeholder("l_self_parameters_weight_")
    b = g.placeholder("l_self_parameters_bias_")
    g.output((g.call_function(torch.nn.functional.linear, (x, w, b)),))
    return torch.fx.GraphModule(nn.Module(), g)


def test_backend_piece_sees_weights_passed_as_inputs(device, python_path_calls):
    # The torch.compile backend's callable, driven by hand (no Dynamo needed): each call passes the weights, which
    # it puts into its module's dictionaries, where the C++ call checks them.
    from spire.torch.dynamo_backend import spire_backend
    dev = _torch_device(device)
    linear = seeded(nn.Linear, 32, 16, seed=56).to(dev)
    x = torch.randn(4, 32, device=dev)
    piece = spire_backend(_weights_as_inputs_graph(), [x, linear.weight, linear.bias], options={"device": device})
    with torch.no_grad():
        assert rel_err(piece(x, linear.weight, linear.bias)[0], linear(x)) <= 1e-4
        python_calls = len(python_path_calls)
        linear.weight.mul_(-2.0)
        assert rel_err(piece(x, linear.weight, linear.bias)[0], linear(x)) <= 1e-4
        other = nn.Parameter(linear.weight.detach() * 0.25)
        got = piece(x, other, linear.bias)[0]
        assert rel_err(got, torch.nn.functional.linear(x, other, linear.bias)) <= 1e-4
        assert rel_err(piece(x, linear.weight, linear.bias)[0], linear(x)) <= 1e-4
    assert len(python_path_calls) == python_calls, "weights passed as inputs left the C++ call"


def test_calls_alternating_between_plans_stay_in_cpp_and_see_changes(device, python_path_calls):
    # Two input shapes, two plans, each with its own C++ call: a weight replaced while only one plan runs, then put
    # back, must reach each plan as it runs next (one holds the old tensor still, the other the replacement).
    model, x, compiled = _setup(SiluMLP, 57, device, 2, 128)
    x3 = torch.randn(3, 128, device=x.device)
    with torch.no_grad():
        compiled(x3)
        python_calls = len(python_path_calls)
        for _ in range(2):
            for inp in (x, x3):
                assert rel_err(compiled(inp), model(inp)) <= 1e-4
        original = model.linear1.weight
        model.linear1.weight = nn.Parameter(original.detach() * -1.0)
        assert rel_err(compiled(x), model(x)) <= 1e-4
        model.linear1.weight = original
        for inp in (x3, x):
            assert rel_err(compiled(inp), model(inp)) <= 1e-4
        assert len(python_path_calls) == python_calls, "alternating calls left the C++ calls"
        # A replacement uploaded by the Python path (a call with a non-contiguous input, which no C++ call takes),
        # then the original back: that plan's C++ call must not still believe its plan holds the original.
        model.linear1.weight = nn.Parameter(original.detach() * -1.0)
        strided = x.t().contiguous().t()
        assert rel_err(compiled(strided), model(strided)) <= 1e-4
        model.linear1.weight = original
        assert rel_err(compiled(x), model(x)) <= 1e-4


def test_backend_piece_calls_the_segment_directly(device, python_path_calls, monkeypatch):
    """A torch.compile backend piece of one segment (dynamo_backend._Piece) runs inference calls straight through the
    segment's C++ call, not the module's partition loop, and leaves to that loop what the C++ call does not describe
    (another batch, gradients wanted): results equal eager's each time, a weight changed in place included."""
    from spire.torch.compiled_module import _Partition
    from spire.torch.dynamo_backend import _Piece
    model, x, _ = _setup(ConvBN, 53, device, 2, 3, 8, 8)
    piece = _Piece(torch.fx.symbolic_trace(model), [x], device, False, None)
    loops = []
    partition_run = _Partition.run
    monkeypatch.setattr(_Partition, "run", lambda part, args: loops.append(1) or partition_run(part, args))
    with torch.no_grad():
        for _ in range(2):  # the Python path, then the C++ call through the partition: the direct call made
            piece(x)
        before = len(loops), len(python_path_calls)
        for step in range(3):
            x = torch.randn_like(x)
            if step == 1:
                model.conv.weight.mul_(0.5)
            assert rel_err(piece(x), model(x)) <= 1e-4
        assert (len(loops), len(python_path_calls)) == before, "inference calls went through the partition loop"
        wider = torch.randn(3, 3, 8, 8, device=x.device)
        assert rel_err(piece(wider), model(wider)) <= 1e-4
    assert len(loops) == before[0] + 1, "a call of another batch did not go through the partition"
    x.requires_grad_(True)
    assert rel_err(piece(x), model(x)) <= 1e-4
    assert len(loops) == before[0] + 2, "a call wanting gradients did not go through the partition"


def test_compiled_module_calls_the_segment_directly(device, monkeypatch):
    """spire.torch.compile's module runs an inference call of its one segment straight through the C++ call too, and
    through its partitions again where that would miss a change: training mode, a replaced submodule."""
    from spire.torch.compiled_module import _Partition
    model, x, compiled = _setup(ConvBN, 54, device, 2, 3, 8, 8)
    loops = []
    partition_run = _Partition.run
    monkeypatch.setattr(_Partition, "run", lambda part, args: loops.append(1) or partition_run(part, args))
    with torch.no_grad():  # _setup's call ran the full path, which made the direct call
        for _ in range(3):
            x = torch.randn_like(x)
            assert rel_err(compiled(x), model(x)) <= 1e-4
        assert len(loops) == 0, "inference calls went through the partition loop"
        model.train()
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert len(loops) == 1, "a call in training mode did not go through the partitions"
        model.eval()
        model.bn = nn.BatchNorm2d(8).eval().to(x.device)
        assert rel_err(compiled(x), model(x)) <= 1e-4
        assert len(loops) == 2, "a call after a submodule was replaced did not trace again"
