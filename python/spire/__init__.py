"""spire: a portable GPU compute compiler and runtime (Vulkan, CUDA), from Python.

    import spire
    spire.devices()                  # what `spire devices` lists
    g = spire.Graph.parse(text)      # graph text (see `spire graph print`)
    exe = spire.compile(g, "vulkan:0")    # precision="bf16": the policy (docs/PRECISION.md)
    exe.set("x", x); exe.step(); y = exe.get("y")

spire.torch compiles PyTorch modules (see spire/torch/__init__.py).
"""
from ._spire import (Device, DeviceError, DeviceInfo, Executable, Graph, GraphError, compile, custom_op, devices,
                     has_op, load_ops, open_device, precision)

__all__ = ["Device", "DeviceError", "DeviceInfo", "Executable", "Graph", "GraphError", "compile", "custom_op",
           "devices", "has_op", "load_ops", "open_device", "device", "precision"]

_opened = {}


def device(name=None):
    """The open device of that name ('vulkan:0', 'cuda:0'; None or 'default': the best present), opened once per
    process and shared. A name not present raises ValueError naming the devices that are."""
    key = name or "default"
    if key not in _opened:
        d = open_device("" if key == "default" else key)
        _opened.setdefault(d.id, d)
        _opened[key] = _opened[d.id]
    return _opened[key]
