"""Runs one spire segment of a compiled module: compiles a plan per input signature (at most two for batches 1..64:
the first call's batch, then one plan for 64 rows that smaller batches run zero-padded, where the segment's rows are
independent), keeps parameters resident (uploaded again only when a parameter's _version, storage or shape changes),
and connects to torch autograd: backward runs the segment's gradient graph, built by spire's autograd."""
import torch

import spire
from spire.torch.frontend.builder import Unsupported
from spire.torch.frontend.convert import convert_segment, flatten_values
from spire.torch.frontend.dispatch import fetch_attr
from spire.torch.tensors import from_numpy, to_numpy

DYNAMIC_BATCH = 64  # the batch of the second plan: every batch up to it runs in one plan


def _next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


class _Plan:
    """One compiled graph of the segment: the conversion, the executable, and what each parameter was uploaded as."""

    def __init__(self, conv, exe, batch_to):
        self.conv, self.exe, self.batch_to = conv, exe, batch_to
        self.uploaded = {}

    def upload_params(self, gm):
        for name, path in self.conv.params.items():
            t = fetch_attr(gm, path)
            stamp = (t._version, t.data_ptr(), tuple(t.shape))
            if self.uploaded.get(name) != stamp:
                self.exe.set(name, to_numpy(t))
                self.uploaded[name] = stamp


class SegmentRunner:
    def __init__(self, seg, gm, owner):
        self.seg, self.gm, self.owner = seg, gm, owner
        self.plans = {}          # exact key -> _Plan
        self.families = {}       # key without the batch -> [(batch_to, _Plan)]
        self.rows_ok = {}        # key without the batch -> bool
        self.backward_plans = {}
        self._paths = None

    # ---- keys
    def _signature(self, inputs, batch):
        def sig(v):
            if isinstance(v, torch.Tensor):
                batched = batch is not None and v.dim() > 0 and v.shape[0] == batch
                return ("T", v.dtype, ("B",) + tuple(v.shape[1:]) if batched else tuple(v.shape))
            if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
                return tuple(sig(x) for x in v)
            return ("V", v)
        params = tuple((p, tuple(fetch_attr(self.gm, p).shape)) for p in self._param_paths())
        return (tuple(sig(v) for v in inputs), params)

    def _param_paths(self):
        """Every weight the segment may read (a module's own parameters and buffers, get_attr tensors): their shapes
        are part of a plan's key, so a module whose parameter shapes change gets a new plan, not a wrong one."""
        if self._paths is None:
            paths = []
            for node in self.seg.nodes:
                if node.op == "call_module":
                    mod = fetch_attr(self.gm, node.target)
                    for n, t in list(mod.named_parameters(recurse=False)) + list(mod.named_buffers(recurse=False)):
                        if t is not None:
                            paths.append(f"{node.target}.{n}")
                for a in node.all_input_nodes:
                    if a.op == "get_attr" and isinstance(fetch_attr(self.gm, a.target), torch.Tensor):
                        paths.append(a.target)
            self._paths = tuple(dict.fromkeys(paths))
        return self._paths

    # ---- compiling
    def _compile(self, inputs, batch, batch_to, why):
        try:
            conv = convert_segment(self.seg, self.gm, inputs, batch, batch_to)
        except Unsupported as e:
            raise ValueError(f"spire cannot convert segment {self.seg.index} at these inputs: {e}") from e
        except spire.GraphError as e:
            raise ValueError(f"spire cannot build segment {self.seg.index} at these inputs: {e}") from e
        exe = spire.compile(conv.graph, self.owner.spire_device)
        self.owner.note_compilation(self.seg.index, why)
        plan = _Plan(conv, exe, batch_to)
        self.owner.dump_plan(self.seg.index, plan)
        return plan

    def _rows_independent(self, inputs, batch):
        """Whether zero-padded rows leave the real rows' results exact: the segment converted as if the batch were 89
        and 97 (primes no other dimension is likely to equal by chance, so a reshape that keeps dim 0 is told from
        one that moves the batch elsewhere) must keep every row on its own both times. A segment that cannot even be
        built at those batches (a literal batch size in a view) is not padded."""
        try:
            return all(convert_segment(self.seg, self.gm, inputs, batch, rows).rows_independent for rows in (89, 97))
        except Exception:
            return False

    def plan_for(self, inputs, batch):
        key = self._signature(inputs, batch)
        exact = (key, batch)
        if exact in self.plans:
            return self.plans[exact]
        family = self.families.setdefault(key, [])
        dynamic = self.owner.dynamic and batch is not None
        if dynamic and family:
            fits = [(bt, p) for bt, p in family if bt is not None and bt >= batch]
            if key not in self.rows_ok:
                self.rows_ok[key] = self._rows_independent(inputs, batch)
            if self.rows_ok[key]:
                if fits:
                    plan = min(fits, key=lambda x: x[0])[1]
                else:
                    bt = max(DYNAMIC_BATCH, _next_pow2(batch))
                    plan = self._compile(inputs, batch, bt, f"batch {batch} (one plan for batches up to {bt})")
                    family.append((bt, plan))
                self.plans[exact] = plan
                return plan
        why = "the first call" if not family and not self.plans else (
            f"batch {batch}" if family else "new input or parameter shapes")
        if family and dynamic and not self.rows_ok.get(key, False):
            why += " (exact batch: rows of this segment depend on each other)"
        plan = self._compile(inputs, batch, batch, why)
        family.append((batch, plan))
        self.plans[exact] = plan
        return plan

    # ---- running
    def _feed(self, plan, flat, batch):
        for name, t in zip(plan.conv.inputs, flat):
            batched = batch is not None and t.dim() > 0 and t.shape[0] == batch
            plan.exe.set(name, to_numpy(t, plan.batch_to if batched else None))

    def _torch_device(self, flat):
        """Where the segment's results go: the device of its first tensor input, else of its first weight (a model on
        torch's CUDA gets CUDA tensors back, whichever spire device ran it)."""
        for t in flat:
            if isinstance(t, torch.Tensor):
                return t.device
        for p in self._param_paths():
            t = fetch_attr(self.gm, p)
            if isinstance(t, torch.Tensor):
                return t.device
        return None

    def _outputs(self, plan, batch, device):
        # Rows are cut off only where the plan ran padded: then the segment's rows are independent and each value's
        # batched flag is exact (where they are not, a flag may follow a batch dimension a transpose moved).
        padded = plan.batch_to != batch
        g = plan.conv.graph

        def build(spec):
            if spec[0] == "tensor":
                _, name, batched = spec
                return _to(from_numpy(plan.exe.get(name), _output_dtype(g, name), batch if batched and padded else None),
                           device)
            if spec[0] == "tuple":
                return tuple(build(s) for s in spec[1])
            return spec[1]
        return [build(s) for s in plan.conv.outputs]

    def forward(self, inputs, batch):
        plan = self.plan_for(inputs, batch)
        flat = flatten_values(inputs)
        self._feed(plan, flat, batch)
        plan.upload_params(self.gm)
        plan.exe.step()
        return self._outputs(plan, batch, self._torch_device(flat))

    def backward(self, inputs, batch, grad_outs, wants_input, param_paths):
        """Gradients of the segment's float outputs (grad_outs: per flattened float output, or None) with respect to
        the flattened tensor inputs that want one and the parameters at param_paths."""
        fplan = self.plan_for(inputs, batch)
        key = (id(fplan), tuple(wants_input), tuple(param_paths))
        plan = self.backward_plans.get(key)
        if plan is None:
            conv = convert_segment(self.seg, self.gm, inputs, batch, fplan.batch_to,
                                   grad=(wants_input, param_paths))
            exe = spire.compile(conv.graph, self.owner.spire_device)
            self.owner.note_compilation(self.seg.index, "the backward graph", backward=True)
            plan = _Plan(conv, exe, fplan.batch_to)
            self.owner.dump_plan(self.seg.index, plan, backward=True)
            self.backward_plans[key] = plan
        flat = flatten_values(inputs)
        self._feed(plan, flat, batch)
        plan.upload_params(self.gm)
        g = plan.conv.graph
        for (out_name, gname), go in zip(plan.conv.grad_inputs, grad_outs):
            dtype, shape = g.type(g.find(gname))
            padded = plan.batch_to != batch and _is_batched(plan, out_name)
            if go is None:
                go = torch.zeros((batch,) + tuple(shape[1:]) if padded else tuple(shape), dtype=torch.float32)
            plan.exe.set(gname, to_numpy(go, plan.batch_to if padded else None))
        plan.exe.step()
        input_grads = [None] * len(flat)
        param_grads = {}
        for name, (kind, target) in plan.conv.grad_outputs.items():
            if kind == "input":
                t = flat[target]
                padded = plan.batch_to != batch and t.dim() > 0 and t.shape[0] == batch
                input_grads[target] = _to(from_numpy(plan.exe.get(name), _output_dtype(g, name),
                                                     batch if padded else None), t.device)
            else:
                path = plan.conv.params[target]
                param_grads[path] = _to(from_numpy(plan.exe.get(name), _output_dtype(g, name)),
                                        fetch_attr(self.gm, path).device)
        return input_grads, param_grads


def _to(t, device):
    return t if device is None or device.type == "cpu" else t.to(device)


def _is_batched(plan, out_name):
    def find(spec):
        if spec[0] == "tensor":
            return spec[2] if spec[1] == out_name else None
        if spec[0] == "tuple":
            for s in spec[1]:
                r = find(s)
                if r is not None:
                    return r
        return None
    for s in plan.conv.outputs:
        r = find(s)
        if r is not None:
            return r
    return False


def _output_dtype(g, name):
    """The dtype of a graph output (outputs are named out<k> / grad<k>; their values carry the type)."""
    return g.output_type(name)[0]
