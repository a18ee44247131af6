"""A spire segment as one torch.autograd.Function: forward runs the segment's plan; backward runs its gradient graph
(spire's autograd appended to the segment's forward, so the forward is computed again inside it rather than kept
from the forward call) and hands torch the gradients of the segment's inputs and parameters, which torch then
accumulates into .grad as for any other op."""
import torch

from spire.torch.frontend.convert import flatten_values


class _Call:
    """What one call of a segment needs beyond its tensors: the inputs' structure and the batch."""

    def __init__(self, runner, inputs, batch, n_flat, param_paths):
        self.runner, self.inputs, self.batch, self.n_flat, self.param_paths = runner, inputs, batch, n_flat, param_paths
        self.out_structure = None


def _rebuild(template, flat_iter):
    if isinstance(template, torch.Tensor):
        return next(flat_iter)
    if isinstance(template, (tuple, list)) and not isinstance(template, torch.Size):
        return type(template)(_rebuild(x, flat_iter) for x in template)
    return template


class SegmentFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, call, *tensors):
        flat_inputs = tensors[: call.n_flat]
        outs = call.runner.forward(_restore(call.inputs, iter(flat_inputs)), call.batch)
        flat_outs = flatten_values(outs)
        call.out_structure = outs
        ctx.call = call
        ctx.save_for_backward(*flat_inputs)
        ctx.mark_non_differentiable(*[t for t in flat_outs if not t.is_floating_point()])
        return tuple(flat_outs)

    @staticmethod
    def backward(ctx, *grad_outs):
        call = ctx.call
        flat_inputs = ctx.saved_tensors
        wants = [bool(ctx.needs_input_grad[1 + i]) and t.is_floating_point() for i, t in enumerate(flat_inputs)]
        params = [p for i, p in enumerate(call.param_paths) if ctx.needs_input_grad[1 + call.n_flat + i]]
        float_grads = [g for g, t in zip(grad_outs, flatten_values(call.out_structure)) if t.is_floating_point()]
        inputs = _restore(call.inputs, iter(flat_inputs))
        input_grads, param_grads = call.runner.backward(inputs, call.batch, float_grads, wants, params)
        result = [None] + list(input_grads) + [param_grads.get(p) for p in call.param_paths]
        return tuple(result)


def _restore(template, flat_iter):
    return [_rebuild(v, flat_iter) for v in template]


def run_with_grad(runner, inputs, batch, gm_params):
    """Runs the segment through SegmentFunction, so that torch's autograd reaches its inputs and parameters.
    gm_params: (path, tensor) of every parameter the segment reads."""
    flat = flatten_values(inputs)
    paths = [p for p, _ in gm_params]
    call = _Call(runner, inputs, batch, len(flat), paths)
    flat_outs = SegmentFunction.apply(call, *flat, *[t for _, t in gm_params])
    return list(_restore(call.out_structure, iter(flat_outs)))
