"""The precision policies from Python (issue 53's "later the Python API"): spire.torch.compile, compile_step and
spire.compile take precision=, which stores values in half under bf16/f16 (not silently fp32) within the policy's
bound of eager f32, and a bad name is a ValueError listing the policies. On every device present."""
import pytest
import torch
import torch.nn as nn

import spire
import spire.torch
from models import SiluMLP, rel_err, seeded


def test_a_policy_name_is_checked_and_canonical():
    assert spire.precision("f32") == "fp32"
    assert spire.precision("bf16") == "bf16"
    with pytest.raises(ValueError, match="fp32|tf32|bf16|f16"):
        spire.precision("int4")
    with pytest.raises(ValueError, match="fp32"):
        spire.torch.compile(SiluMLP(), precision="half")


@pytest.mark.parametrize("policy", ["bf16", "f16"])
def test_half_inference_stays_within_its_bound_and_is_not_f32(device, policy):
    torch.manual_seed(4)
    model = seeded(SiluMLP).eval()
    x = torch.randn(8, 128)
    with torch.no_grad():
        want = model(x)
        compiled = spire.torch.compile(model, (x,), device=device, precision=policy)
        got = compiled(x)
        fp32 = spire.torch.compile(model, (x,), device=device)(x)
    assert got.dtype == torch.float32 and got.shape == want.shape  # the interface keeps eager's dtypes
    # Two products of 128 and 64 terms with half operands and half results: a few units of the half type's roundoff
    # (2^-8 for bf16, 2^-11 for f16) of the largest output; and not f32's 1e-6.
    bound = {"bf16": 3e-2, "f16": 4e-3}[policy]
    assert rel_err(got, want) <= bound
    assert rel_err(got, want) >= 1e-4 * bound / 3e-2, "the policy changed nothing: f32 ran"
    assert rel_err(fp32, want) <= 1e-5
    if policy == "bf16":
        # As torch.autocast's bf16 on the CPU computes it: linear layers on bf16 operands.
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            autocast = model(x).float()
        assert rel_err(got, autocast) <= bound


def test_bf16_training_step_follows_f32(device):
    torch.manual_seed(5)
    x, target = torch.randn(16, 20), torch.randint(0, 4, (16,))

    def losses(policy):
        torch.manual_seed(6)  # the same initial weights for both policies
        model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
        step = spire.torch.compile_step(model, nn.CrossEntropyLoss(),
                                        torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9), device=device,
                                        precision=policy)
        return [float(step(x, target)) for _ in range(6)]

    f32, bf16 = losses("fp32"), losses("bf16")
    assert bf16[-1] < 0.7 * bf16[0], "bf16 training makes progress"
    for a, b in zip(f32, bf16):
        assert abs(a - b) <= 3e-2 * abs(a) + 1e-3
    assert f32 != bf16, "the policy changed nothing: f32 ran"


@pytest.mark.parametrize("policy", ["bf16", "f16"])
def test_half_inference_stores_weights_in_half_and_takes_their_changes(device, policy):
    """Under bf16/f16 the weights only products read are stored in half alone (no f32 copy on the device): they are not
    raw float32 values any more, so spire.torch uploads them rounded, also after the module's weights change."""
    torch.manual_seed(7)
    model = seeded(SiluMLP).eval()
    x = torch.randn(8, 128)
    bound = {"bf16": 3e-2, "f16": 4e-3}[policy]
    with torch.no_grad():
        compiled = spire.torch.compile(model, (x,), device=device, precision=policy)
        assert rel_err(compiled(x), model(x)) <= bound
        model.linear1.weight.mul_(-2)  # in place: the same tensor, a new _version
        got, want = compiled(x), model(x)
    assert rel_err(got, want) <= bound, "the changed weights were not uploaded"

    g = spire.Graph()
    a = g.input("a", "f32", [4, 16])
    w = g.parameter("w", "f32", [16, 8])
    g.output("c", g.op("matmul", [a, w], {}))
    exe = spire.compile(g, device, precision=policy)
    if exe.precision_note:  # the device has no such half type: fp32, raw f32 as always
        assert exe.stores_f32("w")
        return
    assert not exe.stores_f32("w")
    assert exe.stores_f32("a") and exe.stores_f32("c")  # inputs and outputs keep float32
