"""spire._spire: devices, graph text, autograd and a compiled executable, without torch."""
import numpy as np
import pytest

import spire

GRAPH = """
x = input() : f32[4,3]
w = parameter() : f32[3,2]
y = matmul(x, w) : f32[4,2]
z = relu(y) : f32[4,2]
output z = z
"""


def test_devices_listed():
    devices = spire.devices()
    assert devices, "no device: lavapipe (mesa-vulkan-drivers) is expected at least"
    for d in devices:
        assert d.id.startswith(("vulkan:", "cuda:"))
        assert d.id in d.describe() and d.name in d.describe()


def test_cuda_peer_is_a_cuda_devices_own_ordinal_or_a_shared_gpus():
    """Device.cuda_peer: which torch cuda:N a device reads in place. A CUDA device's own index; a Vulkan device's only
    where a CUDA driver has the same GPU (none beside lavapipe: the C++ bridge test covers that with the mock driver)."""
    for d in spire.devices():
        peer = spire.open_device(d.id).cuda_peer
        if d.backend == "cuda":
            assert peer == int(d.id.split(":")[1])
        elif "llvmpipe" in d.name:
            assert peer is None


def test_cuda_ordering_says_how_a_device_orders_its_exchanges_with_cuda_memory():
    """Device.cuda_ordering: '' without a cuda_peer; a CUDA device's own streams; on a Vulkan device that shares its
    GPU with CUDA, a timeline semaphore both drivers share where NVIDIA's driver exports one (the H200's: its calls then
    never wait on the host), else the host and why."""
    for d in spire.devices():
        dev = spire.open_device(d.id)
        ordering = dev.cuda_ordering
        if dev.cuda_peer is None:
            assert ordering == ""
        elif d.backend == "cuda":
            assert ordering == "the CUDA device's own streams"
        elif d.vendor.lower().startswith("nvidia"):
            assert ordering == "a shared timeline semaphore", ordering
        else:
            assert ordering.startswith("the host ("), ordering


def test_bad_device_name_names_the_devices_present():
    with pytest.raises(ValueError) as e:
        spire.open_device("vulkan:99")
    for d in spire.devices():
        assert d.id in str(e.value)


def test_graph_text_round_trips():
    g = spire.Graph.parse(GRAPH)
    assert spire.Graph.parse(g.text()).text() == g.text()
    assert g.inputs() == ["x"] and g.parameters() == ["w"] and g.outputs() == ["z"]


def test_parse_error_has_position():
    with pytest.raises(spire.GraphError, match="line 2"):
        spire.Graph.parse("x = input() : f32[2]\ny = relu(q) : f32[2]\n")


def test_builder_refuses_mismatched_shapes():
    g = spire.Graph()
    a = g.input("a", "f32", [2, 3])
    b = g.input("b", "f32", [4, 5])
    with pytest.raises(spire.GraphError):
        g.op("matmul", [a, b])


def test_compiled_step_matches_numpy(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    exe = spire.compile(spire.Graph.parse(GRAPH), device)
    exe.set("x", x)
    exe.set("w", w)
    exe.step()
    np.testing.assert_allclose(exe.get("z"), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    assert "_m4_k3_n2_" in exe.plan_text()  # the product's kernel (matvec_: a few rows)
    # A parameter stays on the device: a second step with a new input only reuses it.
    exe.set("x", 2 * x)
    exe.step()
    np.testing.assert_allclose(exe.get("z"), np.maximum(2 * x @ w, 0), rtol=1e-5, atol=1e-6)


def test_set_refuses_wrong_shape_and_dtype(device):
    exe = spire.compile(spire.Graph.parse(GRAPH), device)
    with pytest.raises(ValueError, match=r"\[4,3\]"):
        exe.set("x", np.zeros((5, 3), np.float32))
    with pytest.raises(TypeError):
        exe.set("x", np.zeros((4, 3), np.complex64))
    with pytest.raises(KeyError):
        exe.set("nope", np.zeros((4, 3), np.float32))


def test_autograd_appends_the_backward():
    g = spire.Graph()
    x = g.parameter("x", "f64", [3])
    sq = g.op("mul", [x, x])
    loss = g.op("sum", [sq], {"axes": [0], "keepdim": False})
    (dx,) = g.grad(loss, [x])
    g.output("dx", dx)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(g.evaluate({"x": v})["dx"], 2 * v)
