"""One FX node to spire: finds the node's handler (nn module, torch function, tensor method or ATen op) and calls it."""
import operator

import torch

from . import aten_ops, torch_ops
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
    form where that is the same: when nothing reads the overwritten input after it and the input is not the caller's
    (a graph input), whose change the caller would see. Otherwise the op keeps its own name, which has no handler."""
    name = str(node.target)
    if not _writes_first_argument(node.target):
        return name
    packet, _, overload = name.rpartition(".")
    if not packet.endswith("_"):
        return name
    source = node.args[0] if node.args else None
    if not isinstance(source, torch.fx.Node) or source.op == "placeholder":
        return name
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    if any(order[u] > order[node] for u in source.users if u is not node):
        return name
    return f"{packet[:-1]}.{overload}"


def convert_node(b, node, gm, args, kwargs):
    """Converted arguments in; a SpireValue, a tuple of them, or a Python value out; Unsupported if spire cannot."""
    if node.op == "call_module":
        mod = fetch_attr(gm, node.target)
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
