"""spire inside PyTorch.

    import spire.torch
    fast = spire.torch.compile(model, example_inputs=(x,), device="vulkan:0")
    y = fast(x)                     # the model on spire: torch tensors of eager's dtypes and shapes
    loss_fn(fast(x), t).backward()  # fills .grad of model's own parameters
    print(spire.torch.explain(model, (x,)))   # what ran where, and why

Graphs come from torch.fx.symbolic_trace (functorch's make_fx where symbolic tracing cannot follow the model's
Python). What spire cannot run stays in eager PyTorch (never an error, never a wrong result).

On torch >= 2 importing this module also registers the torch.compile backend "spire" (dynamo_backend.py):
    torch.compile(model, backend="spire", options={"device": "vulkan:0"})

precision= picks the policy (docs/PRECISION.md): "fp32" (strict, the default), "tf32", "bf16" or "f16" (values stored
in half with f32 sums, probabilities, norms and losses in f32, as torch.autocast keeps them; inputs and outputs keep their
dtypes).
"""
from spire.torch.compiled_module import SpireModule
from spire.torch.custom_ops import CustomOp
from spire.torch.train_step import CompiledStep
from spire.torch import dynamo_backend as _dynamo_backend

_dynamo_backend.register()  # torch 1.x has no Dynamo: nothing happens, nothing is printed


def compile(module, example_inputs=None, device=None, dynamic=True, dump=None, precision="fp32"):
    """Returns a torch.nn.Module whose forward runs `module` on spire (on `device`, e.g. 'vulkan:0', or the best
    device present). example_inputs: a tuple of tensors to compile for now (else the first call compiles).
    dynamic: batches 1..64 share at most two plans (zero-padded rows, where the model's rows are independent).
    dump: a folder for the FX graph received, what ran where, each spire graph and its plan.
    precision: 'fp32' (the default), 'tf32', 'bf16' or 'f16' (docs/PRECISION.md); a device that cannot honour it runs
    fp32 and says so in a warning."""
    compiled = SpireModule(module, device=device, dynamic=dynamic, dump=dump, precision=precision)
    if example_inputs is not None:
        import torch
        with torch.no_grad():
            compiled(*example_inputs)
    return compiled


def compile_step(model, loss_fn, optimizer, device=None, dump=None, precision="fp32"):
    """One spire graph per batch shape computing forward, loss, backward and the optimizer's update:
    `step = compile_step(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))`,
    then `loss = step(x, target)` per minibatch. Parameters and optimizer state stay on the device; step.sync() or
    step.state_dict() brings them back to the torch module and optimizer. precision as for compile(): under bf16 or
    f16 the parameters and the optimizer's state stay f32 master copies."""
    return CompiledStep(model, loss_fn, optimizer, device=device, dump=dump, precision=precision)


def explain(module, example_inputs, device=None):
    """Text saying, node by node, what runs on spire (by segment), what stays in eager PyTorch and why, and which
    allocations nothing reads are not run ("unused": make_fx's unread buffers); also printed."""
    compiled = module if isinstance(module, SpireModule) else SpireModule(module, device=device)
    text = compiled.explain(*example_inputs)
    print(text)
    return text


__all__ = ["compile", "compile_step", "explain", "CustomOp", "SpireModule", "CompiledStep"]
