"""Ops whose results' sizes depend on their inputs' values, which make a make_fx graph hold for its trace's data only.

make_fx traces with real tensors, and every size the module's Python reads becomes a constant of the graph: after
`keep = scores > t; scores = scores[keep]`, a detector's `scores.topk(min(scores.size(0), 300))` is recorded as
topk(..., 300), right only for calls where as many scores pass. Such a graph gives other calls wrong results or
errors, so spire.torch does not use it: the module runs as one neither trace follows (stand_ins.py)."""
import operator

import torch

from .probe import TensorInfo

# Ops whose result sizes are counts of values: aten's and torchvision's names (make_fx records those).
_COUNTING = ("aten.nonzero", "aten.argwhere", "aten.masked_select", "aten._unique", "aten.unique",
             "aten._unique2", "aten.unique_dim", "aten.unique_consecutive", "torchvision.nms",
             "torchvision.batched_nms")


def _mask(results, value):
    """Whether an index argument is a tensor of bools (or bytes, the older masks): x[mask] keeps a count of rows."""
    info = results.get(value) if isinstance(value, torch.fx.Node) else None
    return isinstance(info, TensorInfo) and info.dtype in (torch.bool, torch.uint8)


def value_sized(gm, results):
    """The first node of gm whose result's size depends on values, given the probe's recorded results; else None."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = str(node.target)
        if name.startswith(_COUNTING):
            return node
        if name.startswith("aten.index.Tensor") or node.target is operator.getitem:
            indices = node.args[1] if len(node.args) > 1 else ()
            if any(_mask(results, i) for i in (indices if isinstance(indices, (tuple, list)) else (indices,))):
                return node
    return None
