"""spire custom ops inside torch models.

    spire.load_ops("examples/custom_ops/seed_relu.op")     # or spire.custom_op(name, reference=..., glsl=...)
    relu = spire.torch.CustomOp("seed_relu")               # an nn.Module: relu(x)

Inside spire.torch.compile the module is the op's node in the spire graph (its GLSL kernel runs on the device, its
gradient expression gives the backward). Called eagerly (a model not compiled, or a part spire.torch leaves in
PyTorch), it runs the op's float64 reference on the CPU through spire's evaluator, and its gradient the same way:
slow, but the same op."""
import torch
import torch.fx

import spire
from spire.torch.frontend import torch_ops
from spire.torch.frontend.builder import TORCH_TO_SPIRE, Unsupported
from spire.torch.frontend.dispatch import has_hooks
from spire.torch.tensors import to_numpy


class CustomOp(torch.nn.Module):
    def __init__(self, name, elementwise=True):
        super().__init__()
        if not spire.has_op(name):
            raise ValueError(f"spire has no op '{name}': register it first (spire.custom_op or spire.load_ops)")
        self.op_name, self.elementwise = name, elementwise

    def forward(self, *xs):
        return _EagerCustomOp.apply(self.op_name, *xs)

    def extra_repr(self):
        return self.op_name


def _graph_of(name, xs, with_grad):
    g = spire.Graph()
    ids = [g.input(f"x{i}", TORCH_TO_SPIRE[x.dtype], list(x.shape)) for i, x in enumerate(xs)]
    y = g.op(name, ids)
    g.output("y", y)
    if with_grad:
        dtype, shape = g.type(y)
        gin = g.input("grad", dtype, shape)
        loss = g.op("sum", [g.op("mul", [y, gin])], {"axes": list(range(len(shape))), "keepdim": False})
        for i, d in enumerate(g.grad(loss, ids)):
            g.output(f"dx{i}", d)
    return g


def _evaluate(g, feeds, like):
    out = g.evaluate({k: to_numpy(v) for k, v in feeds.items()}, "f64")
    return {k: torch.from_numpy(v).to(like.dtype) for k, v in out.items()}


class _EagerCustomOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, *xs):
        ctx.name = name
        ctx.save_for_backward(*xs)
        out = _evaluate(_graph_of(name, xs, False), {f"x{i}": x for i, x in enumerate(xs)}, xs[0])
        return out["y"]

    @staticmethod
    def backward(ctx, grad):
        xs = ctx.saved_tensors
        feeds = {f"x{i}": x for i, x in enumerate(xs)}
        feeds["grad"] = grad
        out = _evaluate(_graph_of(ctx.name, xs, True), feeds, xs[0])
        return (None,) + tuple(out[f"dx{i}"] for i in range(len(xs)))


def _convert(b, mod, path, args, kwargs):
    if kwargs:
        raise Unsupported(f"{mod.op_name} with keyword arguments")
    return b.op(mod.op_name, list(args), rows="pointwise" if mod.elementwise else "mixes")


# The converter knows the module by its type; the tracer keeps it as one node (a leaf) instead of tracing its
# forward, whose autograd.Function and evaluator calls symbolic tracing cannot follow.
torch_ops.MODULES[CustomOp] = _convert


class Tracer(torch.fx.Tracer):
    # A module with hooks is one node too: its hooks run only where PyTorch calls it, so it stays in eager PyTorch
    # (dispatch.py refuses it) instead of being traced through, hooks lost.
    def is_leaf_module(self, m, qualname):
        return isinstance(m, CustomOp) or has_hooks(m) or super().is_leaf_module(m, qualname)


# The checks torch.fx puts in a graph traced with concrete_args, that a call passes the values it was specialized to.
_SPECIALIZATION_CHECKS = (torch._assert, torch.fx._symbolic_trace._assert_is_none)


def symbolic_trace(module, concrete_args=None):
    """torch.fx.symbolic_trace with spire's custom ops as leaves. concrete_args: {parameter name: value} of arguments
    that are not tensors (None, numbers, flags), taken as constants so that the forward's Python branches on them;
    the graph keeps their placeholders but not fx's checks of them (the caller keys its traces by those values)."""
    graph = Tracer().trace(module, concrete_args)
    name = module.__class__.__name__ if isinstance(module, torch.nn.Module) else module.__name__
    gm = torch.fx.GraphModule(module, graph, name)
    if concrete_args:
        for n in list(gm.graph.nodes):
            if n.op == "call_function" and n.target in _SPECIALIZATION_CHECKS:
                gm.graph.erase_node(n)
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return gm


__all__ = ["CustomOp", "Tracer", "symbolic_trace"]
