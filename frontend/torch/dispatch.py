"""One FX node to spire: finds the node's handler (nn module, torch function, tensor method or ATen op) and calls it."""
import operator

import torch

from . import aten_ops, library_ops, torch_ops  # noqa: F401 (library_ops registers its handlers)
from .aliasing import returns_view
from .builder import SpireValue, Unsupported


def fetch_attr(gm, path):
    obj = gm
    for atom in path.split("."):
        if not hasattr(obj, atom):
            raise Unsupported(f"the module has no attribute {path}")
        obj = getattr(obj, atom)
    return obj


def target_name(node):
    t = node.target
    if node.op == "call_function":
        return str(t) if isinstance(t, torch._ops.OpOverload) else getattr(t, "__name__", str(t))
    return str(t)


def describe(node, gm):
    """'call_module conv1 (Conv2d)', 'call_function relu', 'call_method view', 'call_function aten.relu.default'."""
    if node.op == "call_module":
        return f"call_module {node.target} ({type(fetch_attr(gm, node.target)).__name__})"
    return f"{node.op} {target_name(node)}"


def _writes_first_argument(op):
    schema = getattr(op, "_schema", None)
    args = schema.arguments if schema is not None else []
    return bool(args) and args[0].alias_info is not None and args[0].alias_info.is_write


def _functional_name(node):
    """An in-place ATen op (aten.relu_.default, what make_fx records for inplace=True modules) maps as its functional
    form: the partition has already left in PyTorch every in-place op where the two differ (aliasing.py)."""
    name = str(node.target)
    if not _writes_first_argument(node.target):
        return name
    packet, _, overload = name.rpartition(".")
    return f"{packet[:-1]}.{overload}" if packet.endswith("_") else name


def _feeds_strided_view(node):
    """Whether an ATen view that reads its input's memory layout (as_strided) takes this node's result, directly or
    through other views (select, expand, ...): such a view stays in eager PyTorch, and a spire result (contiguous, at
    offset 0) would not have the layout it addresses, so the whole chain of views stays there too. (_reshape_alias,
    which make_fx records for reshape on torch 1.x, also carries strides, but spire maps every one as the reshape it
    stands for: aten_ops._reshape_alias.)"""
    for u in node.users:
        if u.op != "call_function" or not u.args or u.args[0] is not node or \
                not isinstance(u.target, torch._ops.OpOverload):
            continue
        name = str(u.target)
        if name.startswith("aten.as_strided"):
            return True
        if returns_view(u.target) and _feeds_strided_view(u):
            return True
    return False


# A module's own hooks: called by nn.Module.__call__, so only where PyTorch calls the module (eager), never inside a
# spire segment. Backward pre-hooks exist from torch 2.0.
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")


def hook_dicts(module):
    """The module's hook dictionaries (those this torch has)."""
    return [d for d in (getattr(module, name, None) for name in _HOOK_DICTS) if d is not None]


def has_hooks(module):
    return any(hook_dicts(module))


def convert_node(b, node, gm, args, kwargs):
    """Converted arguments in; a SpireValue, a tuple of them, or a Python value out; Unsupported if spire cannot."""
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and returns_view(node.target) and \
            _feeds_strided_view(node):
        raise Unsupported("its result feeds a strided view (as_strided, _reshape_alias) that stays in eager PyTorch")
    if node.op == "call_module":
        mod = fetch_attr(gm, node.target)
        if has_hooks(mod):
            raise Unsupported(f"nn.{type(mod).__name__} has hooks, which PyTorch calls only where it runs the module")
        handler = torch_ops.MODULES.get(type(mod))
        if handler is None:
            raise Unsupported(f"no spire mapping for nn.{type(mod).__name__}")
        return handler(b, mod, node.target, args, kwargs)
    if node.op == "call_function":
        t = node.target
        if t is operator.getitem and not node.users and isinstance(args[0], tuple):
            return None  # an unread result of a multi-result op (pooling indices, batch norm's saved statistics)
        if isinstance(t, torch._ops.OpOverload):
            handler = aten_ops.ATEN.get(_functional_name(node))
        else:
            try:
                handler = torch_ops.FUNCTIONS.get(t)
            except TypeError:  # an unhashable callable
                handler = None
            if handler is None:
                handler = torch_ops.FUNCTIONS_BY_NAME.get(f"{getattr(t, '__module__', '')}.{getattr(t, '__name__', '')}")
        if handler is None:
            raise Unsupported(f"no spire mapping for {target_name(node)}")
        return handler(b, args, kwargs)
    if node.op == "call_method":
        handler = torch_ops.METHODS.get(node.target)
        if handler is None:
            raise Unsupported(f"no spire mapping for the tensor method .{node.target}()")
        if not args or not isinstance(args[0], SpireValue):
            raise Unsupported(f".{node.target}() of a non-tensor")
        return handler(b, args, kwargs)
    raise Unsupported(f"{node.op} nodes run in Python")
