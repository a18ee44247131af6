"""What runs a module neither trace can follow: its own Python in eager PyTorch, each of its children on spire.

A module whose forward branches on tensor values (detection models between their backbone, heads and box selection)
cannot be one graph. Rather than run all of it in eager PyTorch, spire runs its forward eagerly on a stand-in whose
children are stand-ins too, each calling a SpireModule of its child (which, where the child cannot be traced either,
does the same one level down), as Dynamo's graph breaks split such a forward.

A stand-in is an instance of a subclass of the module's own class that shares the module's state (its __dict__: the
parameters, the submodules, the training flag, whatever forward sets), so isinstance checks, attributes, other methods
and mode changes all see the module itself; nothing of the user's module is changed or wrapped. A child's stand-in
runs a call as a parent's (its own Python in PyTorch, its children's stand-ins called) where spire could not take the
call exactly:
- an argument that is not a tensor, a plain constant (None, bool, int, float, str) or a tuple, list or dict of those
  (torchvision's ImageList): a trace would take the tensors inside such an object for constants;
- hooks on the child, which a trace of its forward would leave out."""
import torch

from spire.torch.frontend.dispatch import has_hooks
from spire.torch.tensors import CONSTANT_TYPES


def _plain_call(args, kwargs):
    """Whether every value in the call is a tensor or a plain constant, nested only in tuples, lists and dicts."""
    leaves, _ = torch.utils._pytree.tree_flatten((args, kwargs))
    return all(isinstance(a, (torch.Tensor,) + CONSTANT_TYPES) for a in leaves)


def _share_state(cls, module):
    """An instance of `cls` (a subclass of the module's class) sharing the module's __dict__."""
    obj = object.__new__(cls)
    obj.__dict__ = module.__dict__
    return obj


class _Children:
    """The stand-ins of one module's children, made on first use and again when the child they stand for is
    replaced."""

    def __init__(self, make):
        self.make = make  # (name, child module) -> its SpireModule
        self.made = {}    # name -> (child, stand-in)

    def get(self, name, child):
        made = self.made.get(name)
        if made is None or made[0] is not child:
            made = (child, stand_in_child(name, child, self.make))
            self.made[name] = made
        return made[1]


def _child_getattr(base):
    """A __getattr__ giving the stand-in of a child wherever the module's own would give the child."""
    def __getattr__(self, name):
        modules = self.__dict__.get("_modules", {})
        if name in modules and modules[name] is not None:
            return type(self)._spire_children.get(name, modules[name])
        return base.__getattr__(self, name)
    return __getattr__


def stand_in_parent(module, make):
    """The module with every child (attribute, ModuleList or ModuleDict item) a stand-in; its forward, hooks and call
    are the module's own, run in eager PyTorch."""
    cls = type(module)
    attrs = {"__getattr__": _child_getattr(cls), "_spire_children": _Children(make), "__module__": cls.__module__}
    if isinstance(module, torch.nn.ModuleList):
        attrs["__getitem__"] = lambda self, i: (
            torch.nn.ModuleList([getattr(self, k) for k in list(self._modules)[i]]) if isinstance(i, slice) else
            getattr(self, str(torch.nn.ModuleList._get_abs_string_index(self, i))))
        attrs["__iter__"] = lambda self: iter([getattr(self, k) for k in self._modules])
    elif isinstance(module, torch.nn.ModuleDict):
        attrs["__getitem__"] = lambda self, key: getattr(self, key)
        attrs["values"] = lambda self: [getattr(self, k) for k in self._modules]
        attrs["items"] = lambda self: [(k, getattr(self, k)) for k in self._modules]
        attrs["__iter__"] = lambda self: iter(list(self._modules))
    return _share_state(type(f"SpireStandIn{cls.__name__}", (cls,), attrs), module)


def stand_in_child(name, child, make):
    """A child's stand-in: a container's (ModuleList, ModuleDict: no forward of their own) lends its items stand-ins;
    anything else calls make(name, child), its SpireModule, made on the first call spire takes, and runs the calls
    spire cannot take as a parent: the child's own Python in PyTorch, its children's stand-ins called."""
    def make_item(item, module):
        return make(f"{name}.{item}", module)

    if isinstance(child, (torch.nn.ModuleList, torch.nn.ModuleDict)):
        return stand_in_parent(child, make_item)
    cls = type(child)
    compiled, descended = [], []

    def __call__(self, *args, **kwargs):
        if has_hooks(child) or not _plain_call(args, kwargs):
            if not descended:
                descended.append(stand_in_parent(child, make_item))
            return descended[0](*args, **kwargs)
        if not compiled:
            compiled.append(make(name, child))
        return compiled[0](*args, **kwargs)

    attrs = {"__call__": __call__, "_spire_compiled": compiled, "_spire_descended": descended,
             "__module__": cls.__module__}
    return _share_state(type(f"SpireStandIn{cls.__name__}", (cls,), attrs), child)


def compiled_children(stand_in):
    """The SpireModules a parent's stand-in has made so far, by their path under it (for explain)."""
    found = {}
    for name, (_, s) in type(stand_in)._spire_children.made.items():
        kind = type(s)
        parents = [s] if hasattr(kind, "_spire_children") else kind._spire_descended  # a container, a call run as one
        for p in parents:
            found.update({f"{name}.{k}": m for k, m in compiled_children(p).items()})
        if getattr(kind, "_spire_compiled", None):
            found[name] = kind._spire_compiled[0]
    return found
