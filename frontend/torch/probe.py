"""Which FX nodes spire can take: the graph runs once in eager PyTorch (recording every node's result type and its
Python values, such as sizes), then each node is converted on its own with its inputs as fresh graph inputs of the
recorded types. A node whose handler succeeds is supported; any other gets the handler's reason, or the error that
stopped it."""
import torch
import torch.fx

from spire import _spire

from .aliasing import in_place_hazards, mutated
from .builder import Builder, TORCH_TO_SPIRE, SpireValue, Unsupported
from .constant_regions import Support, folded_regions, input_free
from .dispatch import convert_node, fetch_attr, has_hooks


class TensorInfo:
    """What the eager run recorded for a tensor result."""
    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape = dtype, tuple(shape)

    def __repr__(self):
        return f"{self.dtype}{list(self.shape)}"


class Opaque:
    """A value spire cannot hold (a complex tensor, a tensor list the converter does not know): any handler given
    one refuses the node."""

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return self.what


def summarize(v):
    if isinstance(v, torch.Tensor):
        return TensorInfo(v.dtype, v.shape)
    if isinstance(v, torch.Size):
        return v
    if isinstance(v, (tuple, list)):
        return type(v)(summarize(x) for x in v)
    return v


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.results = {}

    def run_node(self, n):
        r = super().run_node(n)
        self.results[n] = summarize(r)
        return r

    def call_module(self, target, args, kwargs):
        # A module's hooks run once a call, where the module runs for real: this dry run calls its forward alone
        # (a hook that changes the result's type or shape would mislead it; one that looks or scales does not).
        module = self.fetch_attr(target)
        if has_hooks(module):
            return module.forward(*args, **kwargs)
        return super().call_module(target, args, kwargs)


def leaf(b, info, name):
    """A fresh graph input standing for a recorded result (Python values stand for themselves)."""
    if isinstance(info, TensorInfo):
        if info.dtype not in TORCH_TO_SPIRE:
            return Opaque(f"a {info.dtype} tensor")
        return b.input(name, TORCH_TO_SPIRE[info.dtype], info.shape, batched=False)
    if isinstance(info, (tuple, list)) and not isinstance(info, torch.Size):
        return type(info)(leaf(b, x, f"{name}_{i}") for i, x in enumerate(info))
    return info


def _acceptable(r):
    if isinstance(r, SpireValue) or r is None or isinstance(r, (int, float, bool, str, torch.Size, torch.dtype)):
        return True
    if isinstance(r, (tuple, list)):
        return all(_acceptable(x) for x in r)
    return False


def record(gm, args):
    """{node: summary of its result} from one eager run of gm on args."""
    rec = _Recorder(gm)
    with torch.no_grad():
        rec.run(*args)
    return rec.results


def probe(gm, args):
    """Runs gm on args eagerly; returns (results, support): results[node] is the recorded result summary,
    support[node] = (True, "") or (False, reason) for every call node."""
    results, support, values = record(gm, args), Support(), {}
    tensors = lambda n: isinstance(results.get(n), TensorInfo)  # noqa: E731
    free = input_free(gm, tensors)
    all_hazards = in_place_hazards(gm, tensors)
    hazards = {n: why for n, why in all_hazards.items() if n not in free}
    in_place_nodes = {n for n in free if mutated(n)}
    b = Builder()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            values[node] = leaf(b, results.get(node), node.name)
            continue
        if node.op == "output":
            continue
        if node.op == "get_attr":
            t = fetch_attr(gm, node.target)
            values[node] = b.param(node.target, t) if isinstance(t, torch.Tensor) and t.dtype in TORCH_TO_SPIRE \
                else leaf(b, summarize(t), node.name)
            continue
        if node in hazards:
            support[node] = (False, hazards[node])
            values[node] = leaf(b, results.get(node), node.name)
            continue
        a, kw = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
        try:
            r = convert_node(b, node, gm, a, kw)
            if not _acceptable(r):
                raise Unsupported(f"the result is {type(r).__name__}")
            support[node] = (True, "")
            values[node] = r
        except Unsupported as e:
            support[node] = (False, str(e))
        except (_spire.GraphError, ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
            support[node] = (False, f"spire refused it: {type(e).__name__}: {e}")
        if not support[node][0]:
            values[node] = leaf(b, results.get(node), node.name)
    # Input-free values spire cannot take as they are (or their in-place changes, which a free region keeps in
    # PyTorch's meaning) come from PyTorch as constants (constant_regions.py).
    for region in folded_regions(gm, free, lambda n: not support[n][0] or n in in_place_nodes):
        # Why each node would run in PyTorch were the region not folded (split_segments may unfold it).
        support.regions.append((region, {n: support[n][1] if not support[n][0] else all_hazards[n]
                                         for n in region if not support[n][0] or n in all_hazards}))
        for n in region:
            support[n] = (True, "")
    return results, support
