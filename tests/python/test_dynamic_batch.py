"""Batches 1..64 cost at most two compilations, and a recompile is reported once, not per call."""
import warnings

import torch

import spire.torch
from models import LeNet, rel_err, seeded


def test_batches_1_to_64_compile_at_most_twice(device):
    model = seeded(LeNet, seed=30).eval()
    compiled = spire.torch.compile(model, (torch.randn(8, 1, 28, 28),), device=device)
    assert compiled.compilations == 1
    gen = torch.Generator().manual_seed(31)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            for batch in (1, 3, 8, 17, 64, 2, 33, 5):
                x = torch.randn(batch, 1, 28, 28, generator=gen)
                got = compiled(x)
                assert got.shape == (batch, 10)
                assert rel_err(got, model(x)) <= 1e-4, batch
    assert compiled.compilations == 2
    recompiles = [w for w in caught if "compiled again" in str(w.message)]
    assert len(recompiles) == 1, [str(w.message) for w in caught]


def test_static_batch_compiles_per_batch(device):
    model = seeded(LeNet, seed=32).eval()
    compiled = spire.torch.compile(model, device=device, dynamic=False)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for batch in (2, 3, 2):
            compiled(torch.randn(batch, 1, 28, 28))
    assert compiled.compilations == 2


def test_rows_mixing_model_is_not_padded(device):
    class BatchMean(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x - x.mean(dim=0, keepdim=True))

    model = BatchMean()
    compiled = spire.torch.compile(model, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for batch in (4, 3):
            x = torch.randn(batch, 6)
            assert rel_err(compiled(x), model(x)) <= 1e-4


def test_padded_batches_train_like_eager(device):
    # A batch smaller than the compiled one runs padded with zero rows, forward and backward: zero incoming
    # gradients for the padded rows leave the parameters' gradients exactly those of the real rows.
    import copy
    import torch.nn.functional as F
    model = seeded(LeNet, seed=33)
    eager = copy.deepcopy(model)
    compiled = spire.torch.compile(model, device=device)
    gen = torch.Generator().manual_seed(34)
    for batch in (8, 3, 5):
        for p in list(model.parameters()) + list(eager.parameters()):
            p.grad = None
        x = torch.randn(batch, 1, 28, 28, generator=gen)
        t = torch.randint(0, 10, (batch,), generator=gen)
        F.cross_entropy(compiled(x), t).backward()
        F.cross_entropy(eager(x), t).backward()
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            assert rel_err(p.grad, q.grad) <= 1e-4, (batch, name)
    assert compiled.compilations == 1 and compiled.backward_compilations == 1


def test_literal_batch_in_a_view_is_not_padded(device):
    # x.reshape(4, -1) hard-codes the batch: a plan for 64 rows could not even be built, and padding would be wrong.
    class Literal(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(12, 3)

        def forward(self, x):
            return self.fc(x.reshape(4, -1))

    model = seeded(Literal, seed=35).eval()
    compiled = spire.torch.compile(model, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((4, 3, 4), (2, 6, 4)):
            x = torch.randn(*shape)
            assert rel_err(compiled(x), model(x)) <= 1e-4
