"""spire.torch.compile's result: an nn.Module that runs the traced module's graph with its supported segments on
spire and every other node in eager PyTorch.

Per kind of call (each submodule's train/eval mode, the inputs' dtypes and ranks, whether autograd records) the FX
graph is probed once (one eager run recording types) and cut into segments; each segment compiles its own plans.
Parameters stay where they are, in the wrapped module: its .parameters(), .state_dict() and optimizers see the same
tensors, and .grad is filled by backward."""
import inspect
import operator
import os
import warnings

import torch
import torch.fx

import spire
from spire.torch.autograd_function import run_with_grad
from spire.torch.custom_ops import symbolic_trace
from spire.torch.frontend.dispatch import describe, hook_dicts
from spire.torch.frontend.functionalize import functionalized
from spire.torch.frontend.probe import probe, record
from spire.torch.frontend.segments import split_segments
from spire.torch.frontend.value_sized import value_sized
from spire.torch.segment_runner import SegmentRefused, SegmentRunner
from spire.torch.stand_ins import compiled_children, stand_in_parent
from spire.torch.tensors import CONSTANT_TYPES, SUPPORTED_DTYPES


_TRAINING = operator.attrgetter("training")


def trace(module, concrete_args=None):
    """The module's FX graph from torch.fx.symbolic_trace (spire custom ops kept as nodes), its non-tensor arguments
    `concrete_args` taken as constants; None when symbolic tracing cannot follow its Python control flow (then each
    call traces with real tensors through functorch's make_fx)."""
    try:
        return symbolic_trace(module, concrete_args)
    except Exception:  # torch.fx.proxy.TraceError and whatever the module's Python raises on proxies
        return None


class _Untraced(torch.nn.Module):
    """A module neither trace can follow (control flow on tensor values: `if x.sum() > 0`, detection heads), as the
    one node of a graph: called with the call's tensors flattened as make_fx's graphs take them, it runs the module
    on them in eager PyTorch (its stand-in, whose children run on spire: stand_ins.py)."""

    def __init__(self, module, spec):
        super().__init__()
        self.module, self.spec = module, spec

    def forward(self, *leaves):
        return self.module(*torch.utils._pytree.tree_unflatten(list(leaves), self.spec))


def _untraced_graph(module, args, why):
    """A graph calling the whole module eagerly (_Untraced), its one node kept in PyTorch for `why`."""
    root = torch.nn.Module()
    leaves, spec = torch.utils._pytree.tree_flatten(args)
    root.untraced = _Untraced(module, spec)
    g = torch.fx.Graph()
    inputs = [g.placeholder(f"arg{i}") for i in range(len(leaves))]
    node = g.call_module("untraced", tuple(inputs))
    g.output(node)
    gm = torch.fx.GraphModule(root, g)
    gm.spire_forced = {node: why}
    return gm


def _parameters_of(module):
    """The forward's parameters by name, in order, where a call can be bound to them (no *args, **kwargs or
    keyword-only parameters); None else (calls then pass positional arguments only)."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    return params


def _leaf_shapes(args):
    """What a make_fx trace of `args` holds for: their nesting, and each tensor's shape anywhere in it (make_fx's
    graph takes the tensors of tuples, lists and dicts as placeholders of their own)."""
    leaves, spec = torch.utils._pytree.tree_flatten(args)
    return str(spec), tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else
                            a if isinstance(a, CONSTANT_TYPES) else type(a) for a in leaves)


def _copies(args):
    """The call's tensors copied, for the runs made while compiling (the probe's, make_fx's): a graph that writes into
    its inputs (x.add_(1)) would otherwise write into the caller's tensors once per run, before the call itself."""
    return tuple(torch.utils._pytree.tree_map(lambda a: a.detach().clone() if isinstance(a, torch.Tensor) else a,
                                              list(args)))


class _Partition:
    """One probe's result: the items to run in order and the runner of each segment."""

    def __init__(self, owner, gm, args, forced=None):
        self.owner = owner
        self.forced = dict(forced or {})  # nodes kept in PyTorch whatever the probe says: node -> why
        self.recut = {}                   # nodes a refused segment found for the next partition to keep there
        state = _snapshot(gm)
        try:
            # In-place writes into tensors the graph made become new values, in a copy of the graph (functionalize.py)
            self.gm = gm = functionalized(gm, lambda g: record(g, _copies(args)))
            self.results, self.support = probe(gm, _copies(args))
        finally:
            _restore(gm, state)
        for n, why in self.forced.items():
            self.support[n] = (False, why)
        self.items, self.reasons = split_segments(gm, self.support, self.results)
        self.runners = {seg.index: SegmentRunner(seg, gm, owner) for kind, seg in self.items if kind == "segment"}
        self.interp = torch.fx.Interpreter(gm)
        # make_fx's graph of a call with nested arguments returns its results flattened, and its code rebuilds them.
        info = getattr(gm.graph._codegen, "pytree_info", None)
        self.out_spec = info.out_spec if info is not None else None
        # What a call runs: a get_attr node (a weight) only where eager PyTorch or the output reads it. Segments read
        # their weights themselves, and through Dynamo every weight is one (hundreds in a CNN, each a run_node).
        in_segments = {n for kind, x in self.items if kind == "segment" for n in x.nodes}
        # A segment's item carries its runner, found here once rather than by index each call.
        self.run_items = [(kind, self.runners[x.index] if kind == "segment" else x) for kind, x in self.items
                          if kind == "segment" or (kind == "node" and (x.op != "get_attr" or
                                                                       any(u not in in_segments for u in x.users)))]

    def run(self, args):
        env = {}
        placeholders = iter(args)
        batch = _batch_of(args)
        for kind, x in self.run_items:
            if kind == "segment":
                runner, x = x, x.seg
                if runner.refused is None:
                    try:
                        outs = self._run_segment(runner, [env[n] for n in x.inputs], batch)
                        for n, v in zip(x.outputs, outs):
                            env[n] = v
                        continue
                    except SegmentRefused as e:
                        runner.refused = f"segment {x.index} does not compile on {self.owner.spire_device.id}: {e}"
                        # This call runs the segment in PyTorch; later calls cut it again with only the nodes that
                        # read the weights the device named in PyTorch (SpireModule.forward).
                        self.recut.update({n: f"its weight does not fit {self.owner.spire_device.id}: {e}"
                                           for n in x.nodes if _reads_weight(n, e.weights)})
                        warnings.warn(f"spire: {runner.refused}; it runs in eager PyTorch", stacklevel=4)
                self._run_eagerly(x, env)
                continue
            n = x
            if n.op == "placeholder":
                env[n] = next(placeholders)
            elif n.op == "output":
                out = torch.fx.node.map_arg(n.args[0], lambda a: env[a])
                return _plain(out if self.out_spec is None else torch.utils._pytree.tree_unflatten(out, self.out_spec))
            else:
                self.interp.env = env
                env[n] = self.interp.run_node(n)
        raise RuntimeError("the graph has no output node")

    def direct_call(self):
        """For a graph that is one spire segment taking the graph's inputs as they are (what Dynamo hands a backend
        for a CNN): a function running an inference call straight through the segment's C++ call, or returning None
        where that does not describe the call (another shape or dtype, a weight changed in a way it does not
        upload, gradients wanted), for the full path to run. None when the graph is anything else."""
        segments = [x for kind, x in self.run_items if kind == "segment"]
        placeholders = [x for kind, x in self.run_items if kind != "segment" and x.op == "placeholder"]
        if len(segments) != 1 or len(self.run_items) != len(placeholders) + 2 or self.out_spec is not None:
            return None
        runner = segments[0]
        if runner.refused is not None or list(runner.seg.inputs) != placeholders:
            return None
        output = self.run_items[-1][1]
        names = {n: i for i, n in enumerate(runner.seg.outputs)}
        if not all(n in names for n in output.all_input_nodes):
            return None
        spec = torch.fx.node.map_arg(output.args[0], lambda n: names[n])  # the output with result indices

        def call(args):
            if torch.is_grad_enabled():
                return None
            outs = runner.forward_described(args, _batch_of(args))
            return None if outs is None else _plain(torch.fx.node.map_aggregate(spec, outs.__getitem__)
                                                    if not isinstance(spec, int) else outs[spec])
        return call

    @staticmethod
    def _run_segment(runner, inputs, batch):
        params = torch.is_grad_enabled() and list(zip(runner._param_paths(), runner.weights()))
        if params is not False and (any(t.requires_grad for _, t in params) or
                                    any(isinstance(v, torch.Tensor) and v.requires_grad for v in inputs)):
            return run_with_grad(runner, inputs, batch, params)
        return runner.forward(inputs, batch)

    def _run_eagerly(self, seg, env):
        """A segment the device refused, node by node in PyTorch (its weights read here: run_items skips them)."""
        self.interp.env = env
        for n in seg.nodes:
            for a in n.all_input_nodes:
                if a.op == "get_attr" and a not in env:
                    env[a] = self.interp.run_node(a)
            env[n] = self.interp.run_node(n)

    def explain(self):
        lines = []
        for kind, x in self.items:
            if kind == "segment" and self.runners[x.index].refused:
                lines.extend(f"eager  {n.name}: {describe(n, self.gm)}: {self.runners[x.index].refused}"
                             for n in x.nodes)
            elif kind == "segment":
                lines.append(f"spire segment {x.index}: {len(x.nodes)} nodes, inputs "
                             f"{[n.name for n in x.inputs]}, outputs {[n.name for n in x.outputs]}")
                for n in x.nodes:
                    folded = " (a constant: PyTorch computes it from the shapes)" if n in x.folded else ""
                    lines.append(f"    spire  {n.name}: {describe(n, self.gm)}{folded}")
            elif kind == "unused":
                lines.append(f"unused {x.name}: {describe(x, self.gm)}: {self.reasons.get(x, '')}")
            elif x.op not in ("placeholder", "output", "get_attr"):
                lines.append(f"eager  {x.name}: {describe(x, self.gm)}: {self.reasons.get(x, '')}")
        return "\n".join(lines)


def _reads_weight(node, paths):
    """Whether the node reads a weight at one of these attribute paths (a module call owning it, or a get_attr)."""
    if node.op == "call_module" and any(p.rpartition(".")[0] == node.target for p in paths):
        return True
    return any(a.op == "get_attr" and a.target in paths for a in node.all_input_nodes)


def _snapshot(gm):
    """The probe runs the module once; batch norm in training mode would update its running statistics and dropout
    would draw random numbers. Both are put back afterwards, so compiling changes nothing eager would see."""
    return ([(b, b.detach().clone()) for b in gm.buffers()], torch.get_rng_state())


def _restore(gm, state):
    buffers, rng = state
    with torch.no_grad():
        for b, saved in buffers:
            b.copy_(saved)
    torch.set_rng_state(rng)


class _ModuleTree:
    """Every (parent, attribute name, submodule) link of a module tree as traced. symbolic_trace's graph calls the
    submodules it found, so a submodule the user replaces since (model.fc = nn.Linear(...)) leaves that graph stale:
    intact() tells, in C-level calls only (tens of nanoseconds a link)."""

    def __init__(self, module):
        links = [(parent._modules, name, child) for parent in module.modules() for name, child in parent._modules.items()]
        self.dicts = [d for d, _, _ in links]
        self.names = [n for _, n, _ in links]
        self.children = [c for _, _, c in links]
        # And every module's hooks: the trace keeps a module with hooks as one node that runs in eager PyTorch, so a
        # hook added or removed since calls for another trace.
        self.hooks = [d for m in module.modules() for d in hook_dicts(m)]
        self.hook_counts = list(map(len, self.hooks))

    def intact(self):
        return (all(map(operator.is_, map(dict.get, self.dicts, self.names), self.children)) and
                list(map(len, self.hooks)) == self.hook_counts)


def _plain(v):
    """FX's read-only containers of a graph's output as the dicts and lists the module's forward returns."""
    if isinstance(v, torch.fx.immutable_collections.immutable_dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, torch.fx.immutable_collections.immutable_list):
        return [_plain(x) for x in v]
    if type(v) is tuple:
        return tuple(_plain(x) for x in v)
    return v


def _batch_of(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.shape[0] if a.dim() > 0 else None
    return None


class SpireModule(torch.nn.Module):
    def __init__(self, module, device=None, dynamic=True, dump=None, graph=None, precision="fp32"):
        """graph: an FX GraphModule of `module` already made (Dynamo's), used as it is instead of tracing."""
        super().__init__()
        self.module = module
        self.spire_device = spire.device(device)  # opened now: a bad name is a ValueError here
        self.precision = spire.precision(precision)  # checked now too
        self._precision_warned = False
        self.dynamic = dynamic
        self.dump = dump
        self.compilations = 0           # forward plans compiled, over every segment
        self.backward_compilations = 0  # gradient graphs compiled
        self._gm = trace(module) if graph is None else graph
        # Calls bound to the forward's parameters (keywords, defaults), and symbolic traces by the values of the
        # arguments that are not tensors (a graph given, Dynamo's, is called as Dynamo calls it).
        self._params = _parameters_of(module) if graph is None else None
        self._sig = inspect.Signature(self._params) if self._params is not None else None
        # The defaults, and how many leading parameters have none (a call passes at least those).
        self._defaults = tuple(p.default for p in self._params or ())
        self._required = sum(1 for p in self._params or () if p.default is p.empty)
        self._traces = {}
        # The module's submodules as traced (a graph given, Dynamo's, has Dynamo's own guards).
        self._tree = _ModuleTree(module) if graph is None else None
        self._partitions = {}
        self._direct = None  # run_direct's call, made when the partitions change
        self._untraced = None  # why make_fx could not trace the module (then its Python runs in eager PyTorch)
        self._stand_in = None  # the module's stand-in then, whose children run on spire (stand_ins.py)
        self._modules_list = None  # self.module's modules, listed once: their .training flags are part of a call's key
        self._dumped = 0
        if dump:
            os.makedirs(dump, exist_ok=True)

    # ---- what the runners report
    def note_compilation(self, segment, why, backward=False):
        if backward:
            self.backward_compilations += 1
            return
        self.compilations += 1
        if self.compilations > 1 and why != "the first call":
            # Once per plan compiled; calls that reuse a plan say nothing.
            warnings.warn(f"spire: segment {segment} of {type(self.module).__name__} compiled again for {why}",
                          stacklevel=4)

    def compile_graph(self, graph, **options):
        """spire.compile of one of this module's graphs under its precision policy, warning once where the device
        runs another."""
        exe = spire.compile(graph, self.spire_device, precision=self.precision, **options)
        if exe.precision_note and not self._precision_warned:
            self._precision_warned = True
            warnings.warn(f"spire: {exe.precision_note}", stacklevel=5)
        return exe

    def dump_plan(self, segment, plan, backward=False):
        if not self.dump:
            return
        self._dumped += 1
        stem = os.path.join(self.dump, f"segment{segment}.{'backward' if backward else 'forward'}."
                                       f"batch{plan.batch_to}.{self._dumped}")
        with open(stem + ".graph", "w") as f:
            f.write(plan.conv.graph.text())
        with open(stem + ".plan.txt", "w") as f:
            f.write(plan.exe.plan_text())

    # ---- calls
    def _graph_module(self, args):
        if self._gm is None:
            from functorch import make_fx
            if self._untraced is None:
                try:
                    return make_fx(self.module)(*_copies(args))  # make_fx runs the module: not on the caller's tensors
                except Exception as e:  # what make_fx cannot follow either: the module's Python runs eagerly
                    self._split(f"neither symbolic_trace nor make_fx traces {type(self.module).__name__}: "
                                f"{type(e).__name__}: {e}", stacklevel=6)
            if self._stand_in is None:
                self._stand_in = stand_in_parent(self.module, self._compile_child)
            return _untraced_graph(self._stand_in, args, self._untraced)
        constants = {p.name: a for p, a in zip(self._params or (), args) if isinstance(a, CONSTANT_TYPES)}
        if not constants:
            return self._gm
        key = tuple(constants.items())
        if key not in self._traces:
            self._traces[key] = trace(self.module, constants) or self._gm
        return self._traces[key]

    def _split(self, why, stacklevel):
        """From now on the module runs split (stand_ins.py) for `why`, said once as a warning."""
        self._untraced = why
        warnings.warn(f"spire: {why}; its own Python runs in eager PyTorch, its submodules on spire",
                      stacklevel=stacklevel)

    def _compile_child(self, name, child):
        """The SpireModule a child of an untraceable module runs as (stand_ins.py), with this one's options."""
        dump = os.path.join(self.dump, name) if self.dump else None
        return SpireModule(child, device=self.spire_device.id, dynamic=self.dynamic, dump=dump,
                           precision=self.precision)

    def _bind(self, args, kwargs):
        """The call's arguments in the forward's order, defaults filled in (the traces' placeholders)."""
        if self._params is None:
            if kwargs:
                raise TypeError(f"spire: {type(self.module).__name__}.forward takes *args, **kwargs or keyword-only "
                                "parameters, so its compiled module takes positional arguments only")
            return args
        if not kwargs and len(args) == len(self._params):
            return args
        if not kwargs and self._required <= len(args) < len(self._params):  # the rest by default: no binding machinery
            return args + self._defaults[len(args):]
        bound = self._sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _graph_args(self, args):
        """The call's arguments as its graph's placeholders take them: make_fx's graph takes the tensors of nested
        tuples and lists flattened, symbolic_trace's the forward's own arguments."""
        if self._gm is not None or not any(isinstance(a, (tuple, list, dict)) for a in args):
            return args
        return tuple(torch.utils._pytree.tree_flatten(args)[0])

    def partition(self, args):
        if self._modules_list is None:  # listed again only when a submodule is replaced (forward's _trace_again)
            self._modules_list = list(self.module.modules())
        key = (tuple(map(_TRAINING, self._modules_list)),
               # A value that is not a tensor is a constant of the trace (None, a number, a flag), else its type.
               tuple((a.dtype, a.dim()) if isinstance(a, torch.Tensor) else
                     a if isinstance(a, CONSTANT_TYPES) else type(a) for a in args),
               # make_fx traces with real tensors: its graph holds for these shapes and this grad mode only.
               self._gm is None and (torch.is_grad_enabled(), _leaf_shapes(args)))
        part = self._partitions.get(key)
        if part is None:
            # The key holds the inputs' dtypes: a partition found was made for supported ones, so only a new one checks.
            for a in args:
                if isinstance(a, torch.Tensor) and a.dtype not in SUPPORTED_DTYPES:
                    names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
                    raise TypeError(f"spire has no {str(a.dtype).replace('torch.', '')} tensors; it takes {names}")
            gm = self._graph_module(args)
            part = _Partition(self, gm, self._graph_args(args), getattr(gm, "spire_forced", None))
            if self._gm is None and self._untraced is None:
                node = value_sized(part.gm, part.results)
                if node is not None:  # make_fx's graph holds sizes of this call's values: not to be run again
                    self._split(f"make_fx's trace of {type(self.module).__name__} holds sizes computed from one "
                                f"call's values ({node.name}: {describe(node, part.gm)})", stacklevel=4)
                    gm = self._graph_module(args)
                    part = _Partition(self, gm, self._graph_args(args), gm.spire_forced)
            self._partitions[key] = part
            self._direct = self._direct_call()
            if self.dump:
                with open(os.path.join(self.dump, f"fx_graph.{len(self._partitions)}.txt"), "w") as f:
                    f.write(str(gm.graph) + "\n\n" + gm.code)
                if part.gm is not gm:  # in-place writes rewritten as new values (functionalize.py): what runs
                    with open(os.path.join(self.dump, f"fx_graph.{len(self._partitions)}.functional.txt"), "w") as f:
                        f.write(str(part.gm.graph) + "\n\n" + part.gm.code)
                with open(os.path.join(self.dump, f"explain.{len(self._partitions)}.txt"), "w") as f:
                    f.write(part.explain() + "\n")
        return part

    def forward(self, *args, **kwargs):
        if not kwargs:
            out = self.run_direct(args)
            if out is not None:
                return out
        args = self._bind(args, kwargs)
        if self._tree is not None and not self._tree.intact():
            self._trace_again()
        part = self.partition(args)
        graph_args = self._graph_args(args)
        out = part.run(graph_args)
        if part.recut and len(part.recut) < sum(1 for n in part.gm.graph.nodes if n.op.startswith("call")):
            # A segment the device refused for a weight: partitioned again with only that weight's readers in
            # PyTorch, the rest on spire, from the next call on.
            key = next(k for k, v in self._partitions.items() if v is part)
            self._partitions[key] = _Partition(self, part.gm, graph_args, {**part.forced, **part.recut})
            self._direct = self._direct_call()
        return out

    def run_direct(self, args):
        """An inference call of a module that is one spire segment, straight to the segment's C++ call (skipping the
        binding, the partition's lookup and its item loop: tens of microseconds a call, before the step is launched),
        with positional arguments as the graph takes them; None where that does not describe the call (the module
        changed, another shape or dtype, gradients wanted, ...): forward's full path then runs it."""
        if self._direct is None or (self._tree is not None and not self._tree.intact()):
            return None
        return self._direct(args)

    def _direct_call(self):
        """The direct call of the module's one partition (_Partition.direct_call), which also returns None where the
        modules' training flags are no longer the partition's; None where there are several partitions."""
        if len(self._partitions) != 1:
            return None
        (key, part), = self._partitions.items()
        call, flags, modules = part.direct_call(), key[0], self._modules_list
        if call is None:
            return None
        return lambda args: call(args) if tuple(map(_TRAINING, modules)) == flags else None

    def _trace_again(self):
        """A submodule was replaced, or a hook added or removed, since the module was traced: its graph and every plan
        made from it are dropped, and the module as it is now traced and compiled again (as torch.compile recompiles
        when its guards fail)."""
        warnings.warn(f"spire: a submodule or a hook of {type(self.module).__name__} was replaced, added or removed; "
                      "traced and compiled again", stacklevel=3)
        self._gm = trace(self.module)  # None again where symbolic tracing failed: make_fx then traces per key
        self._tree = _ModuleTree(self.module)
        self._traces = {}
        self._partitions = {}
        self._direct = None
        self._untraced = None
        self._stand_in = None
        self._modules_list = None

    def explain(self, *args, **kwargs):
        """What runs where for a call of these arguments; for a module neither trace can follow, its submodules' too,
        after running the call once (on copies of the arguments) so that each has compiled what it runs."""
        args = self._bind(args, kwargs)
        text = self.partition(args).explain()
        if self._stand_in is not None:
            with torch.no_grad():
                self.forward(*_copies(args))
        return text + self._submodules_text()

    def explain_last(self):
        """explain() of the last kind of call made; '' before any call."""
        if not self._partitions:
            return ""
        return list(self._partitions.values())[-1].explain() + self._submodules_text()

    def _submodules_text(self):
        """For a module neither trace can follow: what ran where in each submodule spire ran (its last call)."""
        if self._stand_in is None:
            return ""
        return "".join(f"\n  its submodule {name} ({type(c.module).__name__}):\n" +
                       "\n".join("    " + line for line in c.explain_last().splitlines())
                       for name, c in compiled_children(self._stand_in).items())
