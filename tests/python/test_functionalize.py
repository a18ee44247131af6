"""In-place writes into tensors a graph made itself, rewritten as new values (frontend/torch/functionalize.py): each
model runs on spire with nothing in eager PyTorch, through both traces, and gives eager's results; writes whose
change the caller or an earlier view would see stay in PyTorch, with eager's results too."""
import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spire.torch
from models import seeded, step_gradients
from test_decoders import compiled_both_ways, eager_lines
from test_more_ops import assert_close


class BiasWithZeroedThird(nn.Module):
    """Swin v2's attention: a copy of the q/k/v bias with its key third zeroed, the length from the tensor's size."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        bias = self.qkv.bias.clone()
        n = bias.numel() // 3
        bias[n:2 * n].zero_()
        return F.linear(x, self.qkv.weight, bias)


class SlicesWritten(nn.Module):
    """Writes into a tensor the graph made, through views: copy_ into strided slices, fill_ at an int and at ..., add_
    through a view, and an augmented assignment and relu_ read afterwards."""

    def forward(self, x):
        y = x.new_zeros(x.shape[0], 6, 8)
        y[:, 0::2].copy_(torch.sin(x[:, :3]))
        y[:, 1::2].copy_(torch.cos(x[:, 3:]))
        y[:, :, 1].fill_(5.0)
        y[..., -1].fill_(-2.0)
        y[:, 2:4, 3:7].copy_(x[:, :2, :4] * 3)
        y[:, 4].add_(x[:, 0])
        z = x * 2
        z += y
        z.relu_()
        return y, z + x


class ReadAfterInPlace(nn.Module):
    """A tensor read again after an in-place op changed it (the op's result unused)."""

    def forward(self, x):
        y = x * 2
        y.add_(1)
        y.mul_(x)
        return y + x, y.sum(-1)


class PartsWritten(nn.Module):
    """Writes into parts of split, chunk and unbind, each part read before its write only."""

    def forward(self, x):
        y = x * 2
        parts = torch.split(y, [2, 3], dim=1)
        a, b = torch.tanh(parts[0]), parts[1]
        b.relu_()
        y.chunk(2, -1)[1].mul_(3)
        y.unbind(0)[0].add_(1)
        return a, y + 1


class CircularPad(nn.Module):
    def forward(self, x):
        return F.pad(x, (2, 1, 1, 3), mode="circular") * 2


class ReluOfAViewReadOn(nn.Module):
    """make_fx's instance norm then ReLU(inplace=True) (RAFT's encoders): a reshaping view of a tensor the graph made,
    relu_ on it, and the relu_'s result (the view itself) read on, nothing changing any of them afterwards."""

    def forward(self, x):
        y = (x * 2 - 1).view(x.shape[0] * x.shape[1], -1)
        r = y.view(x.shape).relu_()
        return r * 3 + 1, y.sum(-1)


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
@pytest.mark.parametrize("model, shape", [(BiasWithZeroedThird, (3, 8)), (SlicesWritten, (2, 6, 8)),
                                          (ReadAfterInPlace, (2, 5)), (CircularPad, (2, 3, 4, 5)),
                                          (PartsWritten, (2, 5)), (ReluOfAViewReadOn, (2, 3, 4))])
def test_writes_become_new_values(device, trace, model, shape):
    torch.manual_seed(5)
    want, got, text = compiled_both_ways(seeded(model), (torch.randn(*shape),), trace, device)
    assert_close(got, want)
    assert eager_lines(text) == [], text
    assert text.count("spire segment") == 1, text


class ViewWrittenTwice(nn.Module):
    """A view written, then changed again (directly, through its write's result, through a view of it), or read after
    the tensor changed through another view: PyTorch shows each change in both, so these stay there."""

    def forward(self, x):
        y = x * 2
        v = y[:, 0]
        v.add_(1)
        v.mul_(2)
        z = y[:, 1].add_(1)
        z.mul_(3)
        w = y[:, 2]
        w.sub_(1)
        w[1:].zero_()
        u = y[:, 3]
        u.add_(1)
        y[:, 3].mul_(2)  # through another view: u shows it in PyTorch
        return y + 1, u * 1


class CallersTensorWritten(nn.Module):
    """Writes the caller sees (into its input), and through a view made before the write and read after it: both
    stay in PyTorch."""

    def forward(self, x):
        x[:, 0].fill_(1.0)
        y = x * 2
        early = y[:, 1:3]
        y[:, 2:4].zero_()
        return x + 1, early * 3, y


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_a_view_written_twice_stays_in_eager(device, trace):
    torch.manual_seed(8)
    want, got, text = compiled_both_ways(ViewWrittenTwice(), (torch.randn(2, 5),), trace, device)
    assert_close(got, want)


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_writes_others_see_stay_in_eager(device, trace):
    torch.manual_seed(6)
    x = torch.randn(2, 5)
    want, got, text = compiled_both_ways(CallersTensorWritten(), (x.clone(),), trace, device)
    assert_close(got, want)
    eager = eager_lines(text)
    assert any("in place" in line for line in eager), text


def test_setitem_as_dynamo_records_it(device):
    """Dynamo records `y[:, 0::2] = t`, `y[1] = 2.5` and `y[:, 0::2, 5:7] = t` as operator.setitem nodes
    (symbolic_trace cannot): a graph written so, given to spire as the backend's pieces are."""
    from spire.torch.compiled_module import SpireModule
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_method("new_zeros", (x, (2, 6, 8)))
    g.call_function(operator.setitem, (y, (slice(None), slice(0, None, 2)), g.call_function(torch.sin, (x,))))
    g.call_function(operator.setitem, (y, 1, 2.5))
    head = g.call_function(operator.getitem, (x, (Ellipsis, slice(0, 2))))
    g.call_function(operator.setitem, (y, (slice(None), slice(0, None, 2), slice(5, 7)), g.call_method("exp", (head,))))
    g.output((g.call_function(operator.mul, (y, 3.0)),))
    gm = torch.fx.GraphModule(nn.Module(), g)
    torch.manual_seed(7)
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        want = gm(x)
        compiled = SpireModule(gm, device=device, graph=gm)
        got = compiled(x)
    assert_close(got, want)
    text = compiled.explain(x)
    assert eager_lines(text) == [] and text.count("spire segment") == 1, text


class WritesThroughFloat(nn.Module):
    def forward(self, x):
        same = x.float()  # x itself (a float tensor): the write changes the caller's tensor in PyTorch
        same[:, 3].fill_(7.0)
        return same * 2, x + 1


@pytest.mark.parametrize("trace", ["symbolic", "make_fx"])
def test_a_write_into_x_float_changes_x(device, trace):
    from functorch import make_fx
    torch.manual_seed(9)
    x = torch.randn(2, 5)
    want_x, got_x = x.clone(), x.clone()
    want = WritesThroughFloat()(want_x)
    traced = make_fx(WritesThroughFloat())(x.clone()) if trace == "make_fx" else WritesThroughFloat()
    with torch.no_grad():
        compiled = spire.torch.compile(traced, device=device)
        got = compiled(got_x)
    assert_close(got, want)
    assert torch.equal(got_x, want_x), "the caller's tensor was not written as in eager"


def test_gradients_through_a_rewritten_write(device):
    # A training step through BiasWithZeroedThird's slice_scatter: the weight's and the bias's gradients (the zeroed
    # third none) and the input's, against eager.
    model = seeded(BiasWithZeroedThird)
    torch.manual_seed(10)
    x, target = torch.randn(3, 8), torch.randn(3, 24)
    grads = step_gradients(model, x, target, [model.qkv.weight, model.qkv.bias], device)
    for want, got in zip(*grads):
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-6)
    assert torch.count_nonzero(grads[1][1][8:16]) == 0
