"""The torch.compile backend "spire" (torch >= 2, registered when spire.torch is imported):

    model = torch.compile(model, backend="spire", options={"device": "vulkan:0"})

Dynamo hands the backend one FX graph per piece of Python it could trace (a graph break gives several, and so does
DDPOptimizer, which cuts a DistributedDataParallel model's graph at its gradient buckets): each piece is compiled on
its own, as spire.torch.compile compiles a traced module, so what spire lacks runs in eager PyTorch between spire
segments.

Weights. Older Dynamo keeps a module's parameters and buffers as get_attr / call_module nodes, which the converter
reads as weights already. Newer Dynamo (inlined nn modules) passes them as graph inputs, one placeholder each; those
placeholders become get_attr nodes here, set to the tensors of each call, so that spire keeps them resident (uploaded
again only when torch changes them) and their batch is never mistaken for the data's.

Training. The backend hands torch no AOTAutograd graphs: each spire segment is a torch.autograd.Function whose
backward runs spire's own gradient graph of that segment (spire.torch.compile's path), so forward and backward both
run on spire. AOTAutograd's backward graphs hold ATen backward ops (convolution_backward, native_batch_norm_backward,
threshold_backward, ...) that the converter does not map: through aot_autograd those would all run in eager PyTorch.

Options: device ('vulkan:0', 'cuda:0', ...; default: cuda:N when the graph's tensors are on torch's cuda:N and spire
has that device, else the best device present), dynamic (spire.torch.compile's batch padding, default True), dump (a
folder for every stage), precision ('fp32', the default, 'tf32', 'bf16' or 'f16': spire.torch.compile's). `mode` is accepted and ignored."""
import copy
import operator
import re
import weakref

import torch
import torch.fx

import spire
from spire.torch.compiled_module import SpireModule
from spire.torch.tensors import SUPPORTED_DTYPES

OPTIONS = ("device", "dynamic", "dump", "precision")
_pieces = []  # (number, weak reference) of every SpireModule the backend made, for compiled_pieces()


def pieces_made():
    """How many graphs Dynamo has handed the backend in this process."""
    return len(_pieces)


def compiled_pieces(since=0):
    """The SpireModule of each graph Dynamo handed the backend (the since-th on) that is still alive, oldest first (its
    .compilations say what spire compiled)."""
    return [m for m in (r() for r in _pieces[since:]) if m is not None]


def _source_name(node):
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", None)
    try:
        return (name() if callable(name) else name) or ""
    except Exception:
        return ""


_WEIGHT_NAME = re.compile(r"(^|_)(parameters|buffers)_")


def _is_weight(node, example):
    """Whether a placeholder stands for a module's parameter or buffer: Dynamo marks those as static inputs
    (tensor_dict's _dynamo_static_input_type); a Parameter is one; their sources and names read
    L['self']._modules['fc']._parameters['weight'] / l_self_modules_fc_parameters_weight_."""
    if (node.meta.get("tensor_dict") or {}).get("_dynamo_static_input_type"):
        return True
    if isinstance(example, torch.nn.Parameter) or getattr(example, "_dynamo_static_input_type", None):
        return True
    source = _source_name(node)
    if "._parameters[" in source or "._buffers[" in source:
        return True
    return bool(_WEIGHT_NAME.search(node.name.lower()))


class _Piece:
    """The callable Dynamo gets for one graph: puts each call's weights in place, runs the rest on spire."""

    def __init__(self, gm, example_inputs, device, dynamic, dump, precision="fp32"):
        graph = copy.deepcopy(gm.graph)
        self.gm = torch.fx.GraphModule(gm, graph)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        examples = list(example_inputs) + [None] * (len(placeholders) - len(example_inputs))
        self.weights = []   # (argument index, attribute name)
        self.data = []      # argument indices of everything else
        last = placeholders[-1] if placeholders else None
        for i, (node, example) in enumerate(zip(placeholders, examples)):
            if isinstance(example, torch.Tensor) and _is_weight(node, example):
                name = f"_spire_weight{len(self.weights)}"
                self.gm.register_buffer(name, None, persistent=False)
                with graph.inserting_after(last):
                    attr = graph.get_attr(name)
                attr.meta = dict(node.meta)
                node.replace_all_uses_with(attr)
                graph.erase_node(node)
                if node is last:
                    last = attr
                self.weights.append((i, name))
            else:
                self.data.append(i)
        self.gm.recompile()
        # The weights of the last call: Dynamo passes the same tensor objects every call, and while they are the
        # ones the dictionaries hold, putting them in place again (a hundred dictionary writes in a CNN) is skipped.
        self._weight_args = operator.itemgetter(*[i for i, _ in self.weights]) if self.weights else None
        self._placed = ()
        self.dtypes_ok = set()
        self.spire = SpireModule(self.gm, device=device, dynamic=dynamic, dump=dump, graph=self.gm, precision=precision)
        _pieces.append(weakref.ref(self.spire))

    def _set_weights(self, args):
        if self._weight_args is None:
            return
        now = self._weight_args(args)
        now = now if len(self.weights) > 1 else (now,)
        if len(now) == len(self._placed) and all(map(operator.is_, now, self._placed)):
            return
        self._placed = now
        params, buffers = self.gm._parameters, self.gm._buffers
        for i, name in self.weights:
            t = args[i]
            if isinstance(t, torch.nn.Parameter):
                params[name] = t
                buffers.pop(name, None)
            else:
                buffers[name] = t
                params.pop(name, None)

    def __call__(self, *args):
        self._set_weights(args)
        data = [args[i] for i in self.data]
        out = self.spire.run_direct(data)  # an inference call of a one-segment graph, straight to its C++ call
        if out is not None:
            return out
        dtypes = tuple(a.dtype for a in data if isinstance(a, torch.Tensor))
        if dtypes not in self.dtypes_ok:
            if any(d not in SUPPORTED_DTYPES for d in dtypes):
                return self.gm(*data)  # a dtype spire has no tensors of: this graph stays eager PyTorch
            self.dtypes_ok.add(dtypes)
        # forward, not __call__: nobody hooks this inner module, and nn.Module's hook dispatch costs microseconds.
        return self.spire.forward(*data)


def _default_device(example_inputs):
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.device.type == "cuda":
            name = f"cuda:{t.device.index or 0}"
            if name in [d.id for d in spire.devices()]:
                return name
            break
    return None


def spire_backend(gm, example_inputs, options=None, mode=None):
    """The backend function: (FX GraphModule, example inputs) -> a callable taking the graph's inputs."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"spire backend: unknown options {unknown}; it takes {list(OPTIONS)}")
    device = options.get("device") or _default_device(example_inputs)
    return _Piece(gm, example_inputs, device, options.get("dynamic", True), options.get("dump"),
                  options.get("precision", "fp32"))


def register():
    """Registers the backend "spire" with Dynamo; False on a torch without Dynamo (1.x), where nothing happens."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if "spire" not in list_backends(exclude_tags=()):
        register_backend(spire_backend, name="spire")
    return True
