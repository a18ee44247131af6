"""Training through spire.torch.compile: loss.backward() fills .grad of the module's own parameters, and a plain SGD
loop gives eager's losses."""
import copy

import torch
import torch.nn.functional as F

import spire.torch
from models import LeNet, SiluMLP, rel_err, seeded, train_side_by_side


def grads_match(model, x, loss_of, device):
    eager = copy.deepcopy(model)
    compiled = spire.torch.compile(model, device=device)
    loss_of(compiled(x)).backward()
    loss_of(eager(x)).backward()
    names = [n for n, _ in eager.named_parameters()]
    assert names
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        assert p.grad is not None, name
        assert rel_err(p.grad, q.grad) <= 1e-4, name
    return compiled


def test_lenet_gradients(device):
    torch.manual_seed(10)
    x, t = torch.randn(4, 1, 28, 28), torch.randint(0, 10, (4,))
    grads_match(seeded(LeNet), x, lambda y: F.cross_entropy(y, t), device)


def test_silu_mlp_gradients(device):
    torch.manual_seed(11)
    x = torch.randn(8, 128)
    grads_match(seeded(SiluMLP), x, lambda y: (y * y).mean(), device)


def test_input_gradient(device):
    torch.manual_seed(12)
    model = seeded(SiluMLP)
    compiled = spire.torch.compile(model, device=device)
    x = torch.randn(3, 128, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    compiled(x).sum().backward()
    model(x2).sum().backward()
    assert rel_err(x.grad, x2.grad) <= 1e-4


def test_lenet_100_sgd_steps_match_eager(device):
    torch.manual_seed(13)
    model = seeded(LeNet, seed=13)
    eager = copy.deepcopy(model)
    compiled = spire.torch.compile(model, device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.05)
    train_side_by_side(compiled, eager, (opt, opt_eager), seed=14, steps=100, tol=1e-4)
    # It learned something (the same thing eager learned), and compiled once forward and once backward.
    assert compiled.compilations == 1 and compiled.backward_compilations == 1


def test_transformer_encoder_layer_gradients(device):
    torch.manual_seed(15)
    model = seeded(torch.nn.TransformerEncoderLayer, 32, 4, 64, dropout=0.0, batch_first=True).eval()
    x, w = torch.randn(2, 5, 32), torch.randn(2, 5, 32)
    # A random weighting, not sum(y^2): the sum of squares of a layer norm's output barely depends on its input, so
    # its gradients would be rounding noise on both sides.
    grads_match(model, x, lambda y: (y * w).sum(), device)
