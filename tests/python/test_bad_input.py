"""Bad input gives clear Python exceptions, never a crash."""
import pytest
import torch

import spire
import spire.torch
from models import SiluMLP, rel_err, seeded


def test_wrong_device_names_the_devices_present():
    with pytest.raises(ValueError) as e:
        spire.torch.compile(seeded(SiluMLP), device="vulkan:42")
    assert "vulkan:42" in str(e.value)
    for d in spire.devices():
        assert d.id in str(e.value)


def test_complex_input_is_refused(device):
    compiled = spire.torch.compile(torch.nn.Identity(), device=device)
    with pytest.raises(TypeError, match="complex64"):
        compiled(torch.randn(2, 3, dtype=torch.complex64))


def test_parameter_shapes_changing_recompiles(device):
    model = seeded(SiluMLP, seed=40).eval()
    compiled = spire.torch.compile(model, device=device)
    x = torch.randn(4, 128)
    with torch.no_grad():
        compiled(x)
        # The second layer replaced by one with fewer outputs: a new plan, eager's results.
        model.linear2 = torch.nn.Linear(64, 32)
        compiled2 = spire.torch.compile(model, device=device)
        assert rel_err(compiled2(x), model(x)) <= 1e-4
        model.linear2.weight = torch.nn.Parameter(torch.randn(16, 64))
        model.linear2.bias = torch.nn.Parameter(torch.randn(16))
        with pytest.warns(UserWarning, match="compiled again"):
            y = compiled2(x)
        assert y.shape == (4, 16) and rel_err(y, model(x)) <= 1e-4
        # Shapes that no longer fit together: a clear error, as eager gives one too.
        model.linear2.weight = torch.nn.Parameter(torch.randn(16, 60))
        with pytest.raises((ValueError, RuntimeError)):
            compiled2(x)


def test_parameters_uploaded_again_only_when_changed(device):
    model = seeded(SiluMLP, seed=41).eval()
    x = torch.randn(2, 128)
    compiled = spire.torch.compile(model, (x,), device=device)
    with torch.no_grad():
        before = compiled(x)
        model.linear1.weight.mul_(2)  # in place: _version changes
        after = compiled(x)
        assert rel_err(after, model(x)) <= 1e-4
        assert rel_err(before, after) > 1e-3
