"""In-place changes the partition must leave to PyTorch.

spire computes every value anew: a view (a slice, a transpose, a reshape) is a copy on spire, and an in-place op (add_,
copy_, setitem, masked_fill_) a new value. That is PyTorch's meaning only where nothing observes the difference, which
an FX graph does not promise: make_fx records F.pad(mode="circular") as copies into slices of one new_empty tensor
(the slices are views, the copies change the tensor through them), and any graph may read a tensor again after an
in-place op changed it. functionalize.py first rewrites what it can (writes into tensors the graph made, through
slices). Where an in-place op changes a tensor that has views, or that some node reads after the change, or that is
the caller's (a graph input, a weight), the views and the in-place op run in PyTorch (on real tensors that alias as
PyTorch's do), and what reads the tensor afterwards reads it from there. An in-place op whose
result is the only way the changed tensor is read again (`out += identity`, `relu_(x)`) stays on spire."""
import operator

import torch

# Torch-level ops that may return a view of their first argument (symbolic_trace and Dynamo record these), or the
# argument itself: x.float() of a float tensor, x.to(its own dtype), x.cpu() of a CPU tensor.
VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "transpose", "swapaxes", "permute", "expand",
    "expand_as", "unsqueeze", "squeeze", "t", "narrow", "select", "split", "chunk", "unbind", "contiguous", "detach",
    "as_strided", "diagonal", "unfold", "movedim", "__getitem__", "real", "imag",
    "to", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long", "bool", "cpu", "cuda"})
VIEW_FUNCTIONS = frozenset(f for f in (
    torch.reshape, torch.flatten, torch.transpose, torch.swapaxes, torch.permute, torch.unsqueeze,
    torch.squeeze, torch.t, torch.narrow, torch.select, torch.split, torch.chunk, torch.unbind, torch.detach,
    torch.as_strided, torch.diagonal, torch.movedim, getattr(torch, "unflatten", None)) if f is not None)
# In-place functions whose names do not end in "_" (the rest are found by name: torch.relu_, torch._C._nn.hardtanh_).
IN_PLACE_FUNCTIONS = frozenset({operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                operator.iand, operator.ior, operator.ixor})


def contains(functions, target):
    """target in functions, False for an unhashable callable."""
    try:
        return target in functions
    except TypeError:  # an unhashable callable
        return False


def _schema(node):
    t = node.target
    return t._schema if node.op == "call_function" and isinstance(t, torch._ops.OpOverload) else None


def returns_view(op):
    """Whether an ATen overload's schema says its result may alias an argument (a view)."""
    schema = getattr(op, "_schema", None)
    return schema is not None and any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def is_view(node, tensors):
    """Whether the node's result may share memory with its first argument. tensors(n): whether node n's result is a
    tensor; picking an element of a tuple (operator.getitem) is a view only of a tuple of views (split's, chunk's),
    not of an op's several results (batch norm's), nor is tensor indexing anything but a view."""
    if node.op == "call_function" and node.target is operator.getitem:
        container = node.args[0] if node.args else None
        return isinstance(container, torch.fx.Node) and (tensors(container) or is_view(container, tensors))
    if _schema(node) is not None:
        return returns_view(node.target)
    if node.op == "call_method":
        return node.target in VIEW_METHODS
    return node.op == "call_function" and contains(VIEW_FUNCTIONS, node.target)


def mutated(node):
    """The argument nodes the node changes in place."""
    first = node.args[0] if node.args else None
    if node.op == "call_module":  # nn.ReLU(inplace=True) and the like; dropout in evaluation changes nothing
        module = node.graph.owning_module.get_submodule(node.target) if node.graph.owning_module else None
        writes = getattr(module, "inplace", False) is True and not (
            isinstance(module, torch.nn.modules.dropout._DropoutNd) and not module.training)
        return [first] if writes and isinstance(first, torch.fx.Node) else []
    schema = _schema(node)
    if schema is not None:
        return [a for a, s in zip(node.args, schema.arguments)
                if isinstance(a, torch.fx.Node) and s.alias_info is not None and s.alias_info.is_write]
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    # By name: a tensor method, or a torch function (operator.and_ is no in-place op).
    by_name = node.op == "call_method" or str(getattr(node.target, "__module__", "") or "").startswith("torch")
    in_place = node.op == "call_function" and contains(IN_PLACE_FUNCTIONS, node.target) or (
        by_name and isinstance(name, str) and name.endswith("_") and not name.startswith("__")) or (
        node.kwargs.get("inplace") is True and node.kwargs.get("training") is not False)  # F.relu(x, inplace=True)
    if in_place and "dropout" in str(name):  # torch.dropout_(x, p, train): no change outside training
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", node.kwargs.get("training", True))
        in_place = train is not False
    return [first] if in_place and isinstance(first, torch.fx.Node) else []


def base_of(node, tensors):
    """The tensor a node's result is a view of (through views of views), or the node itself."""
    while is_view(node, tensors) and node.args and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    return node


def _writes_only_in_training(node):
    """Batch norm's ATen ops declare the running statistics written, which they are only in training mode."""
    name = str(node.target) if _schema(node) is not None else ""
    return name.startswith("aten.native_batch_norm") and len(node.args) > 5 and node.args[5] is False


def in_place_hazards(gm, tensors):
    """{node: reason} for every node that must run in PyTorch because of an in-place change (the module comment).
    tensors(n): whether node n's result is a tensor (the probe's record)."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    hazards = {}
    for node in gm.graph.nodes:
        for target in mutated(node):
            base = base_of(target, tensors)
            family, todo = {base}, [base]  # the base and every view of it, views of views included
            while todo:
                for user in todo.pop().users:
                    if user not in family and is_view(user, tensors) and user.args and user.args[0] in family:
                        family.add(user)
                        todo.append(user)
            views = family - {base}
            read_after = any(order[u] > order[node] for f in family for u in f.users if u is not node)
            callers = base.op in ("placeholder", "get_attr") and not _writes_only_in_training(node)
            if not views and not read_after and not callers:
                continue  # only the in-place op's own result is read again: a new value is the same
            whose = "a graph input or weight, " if callers else ""
            what = f"{node.name} changes {'a view of ' if target is not base else ''}{whose}{base.name} in place"
            hazards.setdefault(node, what)
            for v in views:
                hazards.setdefault(v, f"a view of {base.name}, which {node.name} changes in place")
    return hazards
