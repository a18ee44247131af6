"""Cutting an FX graph into what runs where: runs of consecutive supported nodes (in the graph's topological order)
become spire segments, every other node runs in eager PyTorch. A run of consecutive nodes is always a valid
partition: whatever a node of the run reads was computed before the run started, so running the whole run at the
place of its first node never reads a value early. get_attr nodes (weights) belong to no run: inside a segment they
become graph parameters, in eager code plain attribute reads."""
import math
import operator

import torch
import torch.fx

from .aliasing import is_view
from .constant_regions import traced_constant
from .probe import TensorInfo


# Ops that only allocate: one nothing reads computes nothing anyone sees (make_fx records batch norm's unused uint8
# buffers so), so it is not run. Any other unread op still runs: torch 1.13's Node.is_impure does not see in-place
# writes (setitem, copy_), which are unread nodes too.
_ALLOCATIONS = {torch.empty, torch.empty_like, torch.ops.aten.empty.memory_format, torch.ops.aten.empty_like.default,
                torch.ops.aten.new_empty.default, torch.ops.aten.empty_strided.default}


class Segment:
    def __init__(self, index):
        self.index = index
        self.nodes = []     # in topological order
        self.inputs = []    # nodes outside the segment (not get_attr) whose values it reads
        self.outputs = []   # nodes of the segment whose values are read outside it (or returned)
        self.folded = set()  # its nodes PyTorch computes from shapes when it is converted (constant_regions.py)

    def __repr__(self):
        return f"Segment({self.index}: {[n.name for n in self.nodes]})"


def _has_tensor(info):
    if isinstance(info, TensorInfo):
        return True
    if isinstance(info, (tuple, list)):
        return any(_has_tensor(x) for x in info)
    return False


# A segment this small, reading neither the call's inputs nor weights, runs in PyTorch (_small_between_eager).
SMALL_NODES, SMALL_ELEMENTS = 8, 16384


def _elements(info):
    if isinstance(info, TensorInfo):
        return math.prod(info.shape)
    if isinstance(info, (tuple, list)):
        return max((_elements(x) for x in info), default=0)
    return 0


def _small_between_eager(seg, results):
    """Whether a segment is a few ops on small tensors whose every input comes from other nodes, no graph input,
    weight or module (a detector's per-class selection between its topk, nonzero and nms, which make_fx records 90
    times over): PyTorch runs such ops for less than a device call costs, and on spire each would be a plan of its
    own."""
    if len(seg.nodes) > SMALL_NODES:
        return False
    if any(n.op == "call_module" for n in seg.nodes) or any(
            a.op == "placeholder" or (a.op == "get_attr" and not traced_constant(a))
            for n in seg.nodes for a in n.all_input_nodes):
        return False  # a module's weights, or the call's inputs
    # Views (x[:, k] of a detector's [anchors, classes] scores) cost PyTorch nothing: their sizes do not count.
    tensors = lambda n: isinstance(results.get(n), TensorInfo)  # noqa: E731
    return max((_elements(results.get(n)) for n in seg.nodes if not is_view(n, tensors)), default=0) <= SMALL_ELEMENTS


def _runs(gm, support):
    items, reasons, runs, run = [], {}, [], None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            items.append(("node", node))
            continue
        ok, reason = support[node]
        if not ok and not node.users and node.op == "call_function" and node.target in _ALLOCATIONS:
            # An allocation nothing reads: not run at all, so it neither cuts the run around it in two nor costs a
            # call anything.
            reasons[node] = f"nothing reads it, so it is not run ({reason})"
            items.append(("unused", node))
            continue
        if not ok and not node.users and not node.is_impure():
            # A value nothing reads: it runs eagerly after the run around it, which it does not cut in two (it reads
            # only what came before).
            reasons[node] = reason
            items.append(("node", node))
            continue
        if ok:
            if run is None:
                run = Segment(len(runs))
                runs.append(run)
                items.append(("segment", run))
            run.nodes.append(node)
        else:
            run = None
            reasons[node] = reason
            items.append(("node", node))
    return items, reasons, runs


def split_segments(gm, support, results):
    """Returns (items, reasons): items in execution order, each ("node", fx_node) or ("segment", Segment), and
    ("unused", fx_node) for an allocation nothing reads, which nothing runs;
    reasons[node] says why a call node runs eagerly (absent for nodes in a segment). A region of values PyTorch
    computes from shapes (support.regions, constant_regions.py) must lie within one segment, whose conversion computes
    it: one that does not (an eager node between its nodes) is unfolded, and the runs are cut again."""
    verdict, regions = dict(support), list(getattr(support, "regions", []))
    for node in gm.graph.nodes:
        # A part of a tuple PyTorch computes (an eager op with several results) is taken in PyTorch too, for nothing:
        # a segment then reads that tensor alone, not the whole tuple (whose other parts may be of types spire lacks,
        # cuDNN's uint8 workspace, or tensors the segment would upload for nothing).
        if node.op == "call_function" and node.target is operator.getitem and verdict.get(node, (False,))[0]:
            source = node.args[0]
            eager = isinstance(source, torch.fx.Node) and source.op.startswith("call") and \
                not verdict.get(source, (True,))[0]
            if eager:
                verdict[node] = (False, f"a part of {source.name}'s results, which PyTorch computes: taken there")
    while True:
        items, reasons, runs = _runs(gm, verdict)
        run_of = {n: r for r in runs for n in r.nodes}
        split = [(region, why) for region, why in regions
                 if any(n not in run_of for n in region) or len({id(run_of[n]) for n in region}) != 1]
        if not split:
            break
        for region, why in split:
            regions.remove((region, why))
            for n in region:
                verdict[n] = (False, why[n]) if n in why else (True, "")
    for region, _ in regions:
        run_of[next(iter(region))].folded |= region
    final, kept, placed = [], 0, set()
    for kind, x in items:
        if kind == "unused":
            final.append((kind, x))
            continue
        if kind == "node":
            if x not in placed:
                placed.add(x)
                final.append((kind, x))
            continue
        seg, members = x, set(x.nodes)
        idle = None
        if not any(_has_tensor(results.get(n)) for n in seg.nodes):
            idle = "Python arithmetic on sizes (no tensor work)"
        elif all(n.op == "call_function" and n.target is operator.getitem and
                 not isinstance(results.get(n.args[0]), TensorInfo) for n in seg.nodes):
            idle = "only picks results of a multi-result op (no tensor work)"
        elif _small_between_eager(seg, results):
            idle = (f"at most {SMALL_NODES} ops on at most {SMALL_ELEMENTS} elements between ops that stay in PyTorch: "
                    "cheaper there than a device call")
        if idle:  # nothing for a device to do, or too little
            for n in seg.nodes:
                # A constant the run read may come after the run's first node (get_attr items do not cut runs): now
                # read in PyTorch, it goes before its reader.
                for a in n.all_input_nodes:
                    if a.op == "get_attr" and a not in placed:
                        placed.add(a)
                        final.append(("node", a))
                reasons[n] = idle
                final.append(("node", n))
            continue
        for n in seg.nodes:
            for a in n.all_input_nodes:
                if a not in members and a.op != "get_attr" and a not in seg.inputs:
                    seg.inputs.append(a)
            if any(u not in members for u in n.users):
                seg.outputs.append(n)
        if not seg.outputs:
            continue  # nothing reads it
        seg.index = kept
        kept += 1
        final.append(("segment", seg))
    return final, reasons
