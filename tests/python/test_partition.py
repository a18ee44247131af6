"""An op spire lacks runs in eager PyTorch, the rest on spire: results equal eager's, and explain() says where."""
import torch

import spire.torch
from models import WithUnsupportedOp, rel_err, seeded


def test_unsupported_op_falls_back_to_eager(device, capsys):
    model = seeded(WithUnsupportedOp, seed=20).eval()
    x = torch.randn(5, 16)
    compiled = spire.torch.compile(model, device=device)
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) <= 1e-4
    text = spire.torch.explain(compiled, (x,))
    assert "printed" or capsys.readouterr().out == text + "\n"
    eager_lines = [l for l in text.splitlines() if l.startswith("eager")]
    assert len(eager_lines) == 1 and "cumsum" in eager_lines[0] and "no spire mapping" in eager_lines[0]
    assert text.count("spire segment") == 2


def test_unsupported_op_trains(device):
    model = seeded(WithUnsupportedOp, seed=21)
    eager = seeded(WithUnsupportedOp, seed=21)
    compiled = spire.torch.compile(model, device=device)
    x = torch.randn(5, 16)
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    for (n, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        assert rel_err(p.grad, q.grad) <= 1e-4, n


def test_dropout_in_training_stays_eager(device):
    torch.manual_seed(22)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2)).train()
    text = spire.torch.explain(model, (torch.randn(3, 8),), device=device)
    assert "dropout in training mode" in text
    model.eval()
    compiled = spire.torch.compile(model, device=device)
    x = torch.randn(3, 8)
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) <= 1e-4
