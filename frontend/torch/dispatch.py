"""One FX node to spire: finds the node's handler (nn module, torch function, tensor method or ATen op) and calls it."""
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
        if isinstance(t, torch._ops.OpOverload):
            handler = aten_ops.ATEN.get(str(t))
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
