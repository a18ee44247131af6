"""Cutting an FX graph into what runs where: runs of consecutive supported nodes (in the graph's topological order)
become spire segments, every other node runs in eager PyTorch. A run of consecutive nodes is always a valid
partition: whatever a node of the run reads was computed before the run started, so running the whole run at the
place of its first node never reads a value early. get_attr nodes (weights) belong to no run: inside a segment they
become graph parameters, in eager code plain attribute reads."""
import operator

from .probe import TensorInfo


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


def _runs(gm, support):
    items, reasons, runs, run = [], {}, [], None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            items.append(("node", node))
            continue
        ok, reason = support[node]
        if not ok and not node.users and not node.is_impure():
            # A value nothing reads (make_fx keeps batch norm's unused buffers, aten.empty of uint8): it runs eagerly
            # after the run around it, which it does not cut in two (it reads only what came before).
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
    """Returns (items, reasons): items in execution order, each ("node", fx_node) or ("segment", Segment);
    reasons[node] says why a call node runs eagerly (absent for nodes in a segment). A region of values PyTorch
    computes from shapes (support.regions, constant_regions.py) must lie within one segment, whose conversion computes
    it: one that does not (an eager node between its nodes) is unfolded, and the runs are cut again."""
    verdict, regions = dict(support), list(getattr(support, "regions", []))
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
    final, kept = [], 0
    for kind, x in items:
        if kind == "node":
            final.append((kind, x))
            continue
        seg, members = x, set(x.nodes)
        idle = None
        if not any(_has_tensor(results.get(n)) for n in seg.nodes):
            idle = "Python arithmetic on sizes (no tensor work)"
        elif all(n.op == "call_function" and n.target is operator.getitem and
                 not isinstance(results.get(n.args[0]), TensorInfo) for n in seg.nodes):
            idle = "only picks results of a multi-result op (no tensor work)"
        if idle:  # nothing for a device to do
            for n in seg.nodes:
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
