"""Custom ops from Python: the seed's ReLU (an op file with a GLSL kernel) trains LeNet through spire.torch.compile,
and an op registered with spire.custom_op works inside a torch model."""
import copy
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spire
import spire.torch
from models import LeNet, rel_err, seeded, train_side_by_side

SEED_RELU = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "custom_ops", "seed_relu.op")

LEAKY_GLSL = """
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };
void main() {
  uint i = SPIRE_GROUP_ID * 64 + gl_LocalInvocationID.x;
  if (i < n) y[i] = x[i] > 0.0 ? x[i] : 0.125 * x[i];
}
"""


def register_ops():
    if not spire.has_op("seed_relu"):
        assert spire.load_ops(SEED_RELU) == ["seed_relu"]
    if not spire.has_op("py_leaky"):
        spire.custom_op("py_leaky", reference="where(compare(x, 0, mode=gt), x, x * 0.125)",
                        gradient={"x": "where(compare(x, 0, mode=gt), grad, grad * 0.125)"}, glsl=LEAKY_GLSL)


def lenet_with(op):
    model = seeded(LeNet, seed=70)
    for seq in (model.convnet, model.fc):
        for i, m in enumerate(seq):
            if isinstance(m, nn.ReLU):
                seq[i] = spire.torch.CustomOp(op)
    return model


def vulkan(device):
    if not device.startswith("vulkan"):
        pytest.skip("GLSL kernels run on Vulkan devices only")


def test_seed_relu_trains_lenet(device):
    vulkan(device)
    register_ops()
    model = lenet_with("seed_relu")
    eager = seeded(LeNet, seed=70)  # the same weights, with torch's own ReLU
    compiled = spire.torch.compile(model, device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    _, x = train_side_by_side(compiled, eager, (opt, opt_eager), seed=71, steps=20, tol=1e-4)
    text = compiled.explain(x)
    assert "eager" not in text and text.count("CustomOp") == 4


def test_python_registered_op_in_a_model(device):
    vulkan(device)
    register_ops()
    torch.manual_seed(72)
    model = nn.Sequential(nn.Linear(16, 32), spire.torch.CustomOp("py_leaky"), nn.Linear(32, 4))
    eager = copy.deepcopy(model)
    eager[1] = nn.LeakyReLU(0.125)
    x = torch.randn(5, 16)
    compiled = spire.torch.compile(model, device=device)
    compiled(x).sum().backward()
    eager(x).sum().backward()
    for (n, p), q in zip(model.named_parameters(), eager.parameters()):
        assert rel_err(p.grad, q.grad) <= 1e-5, n
    with torch.no_grad():
        assert rel_err(compiled(x), eager(x)) <= 1e-5


def test_custom_op_called_eagerly_uses_its_reference():
    register_ops()
    x = torch.randn(3, 7, requires_grad=True)
    y = spire.torch.CustomOp("py_leaky")(x)
    assert rel_err(y, F.leaky_relu(x, 0.125)) <= 1e-6
    y.sum().backward()
    assert rel_err(x.grad, torch.where(x > 0, 1.0, 0.125)) <= 1e-6


def test_bad_custom_ops_are_refused():
    with pytest.raises(ValueError, match="no op 'nope'"):
        spire.torch.CustomOp("nope")
    with pytest.raises(spire.GraphError):
        spire.custom_op("py_broken", reference="maximum(x, 0)", glsl="#version 450\nvoid main() { oops }\n")
