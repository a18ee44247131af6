"""The models the suite checks against eager PyTorch, with random weights from torch.manual_seed (nothing
downloaded)."""
import torch
import torch.nn as nn

from spire.torch.lenet import LeNet  # noqa: F401 (the seed's LeNet, for the tests that import it from here)


class SiluMLP(nn.Module):
    """Seed 001's model: Linear(128 -> 64), SiLU, Linear(64 -> 128)."""

    def __init__(self, features=128, hidden=64):
        super().__init__()
        self.linear1 = nn.Linear(features, hidden)
        self.linear2 = nn.Linear(hidden, features)

    def forward(self, x):
        return self.linear2(torch.nn.functional.silu(self.linear1(x)))


class WithUnsupportedOp(nn.Module):
    """A cumulative sum (no spire op) between two supported parts: the middle must run in eager PyTorch."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.cumsum(h, dim=1)
        return self.b(h).tanh()


def seeded(cls, *args, seed=0, **kwargs):
    torch.manual_seed(seed)
    return cls(*args, **kwargs)


def rel_err(got, want):
    """Largest absolute difference over the largest magnitude of the reference."""
    got, want = got.detach().double(), want.detach().double()
    assert got.shape == want.shape, (got.shape, want.shape)
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def train_side_by_side(compiled, eager, optimizers, seed, steps, tol):
    """LeNet-sized SGD steps on the same random batches (batch 8, 10 classes) through a spire-compiled module and its
    eager twin, each with its own optimizer; asserts every step's losses agree within `tol` relative. Returns the
    largest relative difference seen and the last batch."""
    import torch.nn.functional as F
    gen = torch.Generator().manual_seed(seed)
    worst = 0.0
    for step in range(steps):
        x, t = torch.randn(8, 1, 28, 28, generator=gen), torch.randint(0, 10, (8,), generator=gen)
        losses = []
        for m, o in zip((compiled, eager), optimizers):
            o.zero_grad()
            loss = F.cross_entropy(m(x), t)
            loss.backward()
            o.step()
            losses.append(loss.item())
        worst = max(worst, abs(losses[0] - losses[1]) / abs(losses[1]))
        assert worst <= tol, (step, losses)
    return worst, x


def step_gradients(model, x, target, params, device):
    """The gradients of `params` (tensors of model) and of x after one mean-squared-error step, eagerly and through
    spire.torch.compile on device: (eager's list, spire's list)."""
    import spire.torch
    grads = []
    for run in (model, spire.torch.compile(model, device=device)):
        model.zero_grad()
        xi = x.clone().requires_grad_()
        torch.nn.functional.mse_loss(run(xi), target).backward()
        grads.append([p.grad.clone() for p in params] + [xi.grad.clone()])
    return grads
