"""spire.torch.compile_step: forward, loss, backward and the optimizer's update in one spire graph."""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F

import spire.torch
from spire.torch.lenet import fashion_mnist, fashion_mnist_present
from models import LeNet, SiluMLP, rel_err, seeded


def optimizers(kind, a, b):
    if kind == "sgd":
        make = lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)  # noqa: E731
    else:
        make = lambda m: torch.optim.Adam(m.parameters(), lr=1e-3)  # noqa: E731
    return make(a), make(b)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_steps_match_eager(device, kind):
    model = seeded(LeNet, seed=50)
    eager = copy.deepcopy(model)
    opt, opt_eager = optimizers(kind, model, eager)
    step = spire.torch.compile_step(model, torch.nn.CrossEntropyLoss(), opt, device=device)
    gen = torch.Generator().manual_seed(51)
    for i in range(10):
        x, t = torch.randn(16, 1, 28, 28, generator=gen), torch.randint(0, 10, (16,), generator=gen)
        loss = step(x, t)
        opt_eager.zero_grad()
        want = F.cross_entropy(eager(x), t)
        want.backward()
        opt_eager.step()
        assert abs(loss.item() - want.item()) <= 1e-4 * abs(want.item()), (i, loss.item(), want.item())
    # The trained weights come back to the torch module, and its own forward agrees with eager's.
    step.sync()
    x = torch.randn(4, 1, 28, 28, generator=gen)
    with torch.no_grad():
        assert rel_err(model(x), eager(x)) <= 1e-3
    assert step.compilations == 1


def test_mse_and_a_new_batch_size_keep_training(device):
    model = seeded(SiluMLP, seed=52)
    eager = copy.deepcopy(model)
    opt, opt_eager = optimizers("sgd", model, eager)
    step = spire.torch.compile_step(model, torch.nn.MSELoss(), opt, device=device)
    gen = torch.Generator().manual_seed(53)
    for batch in (8, 8, 5, 8):  # the batch of 5 compiles a second graph, which starts from the first one's state
        x, t = torch.randn(batch, 128, generator=gen), torch.randn(batch, 128, generator=gen)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = step(x, t)
        opt_eager.zero_grad()
        want = F.mse_loss(eager(x), t)
        want.backward()
        opt_eager.step()
        assert abs(loss.item() - want.item()) <= 1e-4 * abs(want.item()), batch
    assert step.compilations == 2


def test_refuses_what_it_cannot_capture(device):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = spire.torch.compile_step(model, torch.nn.MSELoss(), opt, device=device)
    with pytest.raises(ValueError, match="dropout in training mode"):
        step(torch.randn(2, 4), torch.randn(2, 4))
    with pytest.raises(ValueError, match="loss"):
        spire.torch.compile_step(model, torch.nn.L1Loss(), opt, device=device)
    with pytest.raises(ValueError, match="RMSprop"):
        spire.torch.compile_step(model, torch.nn.MSELoss(), torch.optim.RMSprop(model.parameters()), device=device)


@pytest.mark.skipif(not fashion_mnist_present(), reason="dataset-fashion-mnist is not installed")
def test_lenet_learns_fashion_mnist(device):
    # `spire train lenet`'s short lavapipe run: 1 epoch on the first 10000 images, batch 64, SGD lr 0.05 momentum
    # 0.9; it reaches 75.36%. compile_step must reach 75% too.
    x, t = fashion_mnist("train", limit=10000)
    test_x, test_t = fashion_mnist("t10k")
    model = seeded(LeNet, seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = spire.torch.compile_step(model, torch.nn.CrossEntropyLoss(), opt, device=device)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    for i in range(len(x) // 64):
        idx = order[i * 64:(i + 1) * 64]
        step(x[idx], t[idx])
    model.load_state_dict(step.state_dict())
    with torch.no_grad():
        accuracy = (model(test_x).argmax(1) == test_t).float().mean().item()
    print(f"test accuracy after 1 epoch on 10000 images: {accuracy:.4f}")
    assert accuracy >= 0.75
