"""Values a graph computes from shapes alone, which spire takes from PyTorch as constants.

A model may build a tensor that depends on no input's values, only on sizes, with ops spire does not map or ways it
cannot follow: Swin's shifted-window mask is `x.new_zeros(size)` written region by region in place
(`mask[h0:h1, w0:w1] = count`), then viewed and compared. Left in PyTorch, such nodes cut the graph into segments
around them (Swin through Dynamo: 6 segments, 70 small eager nodes). Here they are found and computed by PyTorch itself
when a segment is converted (per input shapes), in graph order on real tensors, so that in-place changes and views
mean what they mean in eager; whatever spire reads of them is a constant of the segment's graph (Builder.const_tensor).

A node is input-free when it is a call that reads no input's or weight's values: all its node arguments are
input-free, except that ops reading only a tensor's dtype and shape (new_zeros, zeros_like, size, ...) may take any
tensor. Random ops (and empty's unwritten memory) are never constants. A tensor an op changes in place with a value
that is not input-free (a copy of input data into it) is not input-free, nor is anything computed from it. Only what a
node spire cannot take, or an in-place change of it, needs is folded: the input-free nodes connected to such a node
(its whole region, so that PyTorch computes each value the region reads)."""
import torch

from .aliasing import base_of, contains, mutated

# Ops that read only their tensor argument's dtype, shape and device (its first argument), not its values.
METADATA_METHODS = frozenset({"new_zeros", "new_ones", "new_full", "size", "dim", "numel"})
METADATA_FUNCTIONS = frozenset({torch.zeros_like, torch.ones_like, torch.full_like, torch.numel})
METADATA_ATEN = ("aten.new_zeros.", "aten.new_ones.", "aten.new_full.", "aten.zeros_like.", "aten.ones_like.",
                 "aten.full_like.", "aten.sym_size", "aten.sym_numel", "aten.numel")
# Never constants: values that differ from call to call, or memory left unwritten.
RANDOM_NAMES = ("rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "exponential", "poisson", "empty")


def _name(node):
    t = node.target
    return t if isinstance(t, str) else str(t) if isinstance(t, torch._ops.OpOverload) else getattr(t, "__name__", "")


def _reads_only_metadata(node):
    if node.op == "call_function" and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in ("shape", "dtype", "device", "ndim")
    if node.op == "call_method":
        return node.target in METADATA_METHODS
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target).startswith(METADATA_ATEN)
    return contains(METADATA_FUNCTIONS, node.target)


def traced_constant(node):
    """A number the trace made a tensor of (make_fx's _tensor_constant for `mask[...] = 1.0`): a get_attr, no weight."""
    return node.op == "get_attr" and str(node.target).startswith("_tensor_constant")


def input_free(gm, tensors):
    """The input-free call nodes (the module comment). tensors(n): whether node n's result is a tensor."""
    free = set()
    for node in gm.graph.nodes:
        if traced_constant(node):
            free.add(node)  # a number make_fx made a tensor of (mask[...] = 1.0): no weight
            continue
        if node.op not in ("call_function", "call_method") or any(r in _name(node) for r in RANDOM_NAMES):
            continue
        metadata_of = node.args[0] if node.args and _reads_only_metadata(node) else None
        if all(d in free for d in node.all_input_nodes if d is not metadata_of):
            free.add(node)
    # A tensor changed in place by a node that is not input-free (input data copied into it) is not input-free, nor
    # is any view of it or anything computed from them.
    changed = True
    while changed:
        changed = False
        for node in gm.graph.nodes:
            if node in free:
                continue
            for target in mutated(node):
                tainted, todo = set(), [base_of(target, tensors)]
                while todo:
                    n = todo.pop()
                    if n in free and n not in tainted:
                        tainted.add(n)
                        todo.extend(u for u in n.users)
                if tainted:
                    free -= tainted
                    changed = True
    return free


def folded_regions(gm, free, needs_folding):
    """The regions PyTorch computes, each a set of input-free nodes connected by their arguments and users, holding
    a node that needs_folding(node) says spire cannot take as it is. In graph order of their first nodes."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    regions, folded = [], set()
    for start in sorted(free, key=order.get):
        if start in folded or start.op == "get_attr" or not needs_folding(start):
            continue
        region, todo = set(), [start]
        while todo:
            n = todo.pop()
            if n in region:
                continue
            region.add(n)
            todo.extend(m for m in n.all_input_nodes + list(n.users)
                        if m in free and m not in region and m.op != "get_attr")
        folded |= region
        regions.append(region)
    return regions


def evaluate(node, args, kwargs):
    """Runs one folded node in PyTorch on real values (args and kwargs already mapped)."""
    if node.op == "call_method":
        return getattr(args[0], node.target)(*args[1:], **kwargs)
    return node.target(*args, **kwargs)


class Support(dict):
    """probe's verdict: support[node] = (True, "") or (False, reason) for every call node, and `regions`, the folded
    regions, each (its nodes, {node: why it would run in PyTorch otherwise}). split_segments unfolds a region that
    does not lie within one segment: those nodes then run in PyTorch for those reasons, the others on spire."""

    def __init__(self):
        super().__init__()
        self.regions = []


def dummy_for_metadata(v):
    """What a metadata-only op (new_zeros, size, ...) of a folded region reads in place of a spire value: a tensor of
    its dtype and shape (the values are never read)."""
    from .builder import SPIRE_TO_TORCH, SpireValue
    return torch.zeros(v.shape, dtype=SPIRE_TO_TORCH[v.dtype]) if isinstance(v, SpireValue) else v
