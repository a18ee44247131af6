"""One segment to a spire graph, at the types of one call.

Inputs are the segment's input values of that call (tensors, or Python values such as sizes, which are baked into
the graph). A tensor input marked batched may be given a larger batch (`batch_to`): the graph is built for that many
rows, and the builder's rows_independent flag says whether running it on zero-padded inputs gives the real rows
exactly. With `grad` the graph also computes, from one more input per float output (its incoming gradient), the
gradient of sum(output * incoming gradient) with respect to every input and parameter asked for: the backward of
the segment, by spire's autograd (every op's VJP rule, the same ones `spire graph grad` uses)."""
import torch

from .builder import FLOATS, TORCH_TO_SPIRE, Builder, SpireValue, Unsupported
from .constant_regions import dummy_for_metadata, evaluate
from .dispatch import convert_node, fetch_attr


class ConvertedSegment:
    def __init__(self, builder):
        self.builder = builder
        self.graph = builder.g
        self.inputs = []        # per flattened tensor input: spire input name
        self.outputs = []       # per segment output: a structure of ("tensor", name, batched) / ("value", v)
        self.params = builder.params  # spire parameter name -> attribute path in the GraphModule
        self.constants = builder.constants  # spire parameter name -> tensor computed by the converter
        self.output_values = {}  # spire output name -> SpireValue
        self.grad_inputs = []   # with grad: spire input names of the incoming gradients, per float tensor output
        self.grad_outputs = {}  # with grad: spire output name -> ("input", flat index) or ("param", spire name)

    @property
    def rows_independent(self):
        return self.builder.rows_independent


def flatten_values(v):
    """The tensors of a (possibly nested) value, in order."""
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
        return [t for x in v for t in flatten_values(x)]
    return []


def _make_input(b, v, name, batched, batch_to, seg_inputs):
    if isinstance(v, torch.Tensor):
        if v.dtype not in TORCH_TO_SPIRE:
            raise Unsupported(f"input {name} is {v.dtype}")
        shape = list(v.shape)
        if batched and batch_to is not None:
            shape[0] = batch_to
        sv = b.input(name, TORCH_TO_SPIRE[v.dtype], shape, batched=batched)
        seg_inputs.append(b.g.name(sv.id))
        return sv
    if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
        return type(v)(_make_input(b, x, f"{name}_{i}", batched, batch_to, seg_inputs) for i, x in enumerate(v))
    return v


def convert_segment(seg, gm, input_values, batch=None, batch_to=None, grad=None):
    """input_values: per seg.inputs, this call's value. batch: the call's batch size (tensor inputs whose dim 0 is
    `batch` are batched), batch_to: the batch the graph is built for (None: the call's own). grad: None, or
    (wants_input_grad per flattened tensor input, parameter paths to differentiate)."""
    b = Builder()
    conv = ConvertedSegment(b)
    values = {}
    for node, v in zip(seg.inputs, input_values):
        batched = isinstance(v, torch.Tensor) and batch is not None and v.dim() > 0 and v.shape[0] == batch
        values[node] = _make_input(b, v, f"in.{node.name}", batched, batch_to, conv.inputs)
    members = set(seg.nodes)
    real, constants = {}, {}  # folded nodes' values in PyTorch; (node, tensor version) -> the constant spire reads

    def spire_of(n):
        """A folded node's value as spire reads it at this point of the graph (a later in-place change of it, folded
        too, makes another constant)."""
        def one(v):
            if not isinstance(v, torch.Tensor):
                return v
            key = (n, id(v), v._version)
            if key not in constants:
                constants[key] = b.const_tensor(f"folded.{n.name}", v.detach().clone())
            return constants[key]
        v = real[n]
        return type(v)(one(x) for x in v) if isinstance(v, (tuple, list)) else one(v)

    for node in seg.nodes:
        if node in seg.folded:
            a, kw = torch.fx.node.map_arg(
                (node.args, node.kwargs), lambda n: real[n] if n in real else fetch_attr(gm, n.target)
                if n.op == "get_attr" else dummy_for_metadata(values.get(n)))
            real[node] = evaluate(node, a, kw)
            continue

        def lookup(n):
            if n in real:
                return spire_of(n)
            if n in values:
                return values[n]
            if n.op == "get_attr":
                t = fetch_attr(gm, n.target)
                return b.param(n.target, t) if isinstance(t, torch.Tensor) else t
            raise Unsupported(f"{n.name} is read before it is computed")
        a, kw = torch.fx.node.map_arg((node.args, node.kwargs), lookup)
        values[node] = convert_node(b, node, gm, a, kw)
    for n in seg.outputs:
        if n in real:
            values[n] = spire_of(n)
    outputs_flat = []

    def export(v):
        if isinstance(v, SpireValue):
            name = f"out{len(outputs_flat)}"
            b.g.output(name, v.id)
            outputs_flat.append((name, v))
            return ("tensor", name, v.batched)
        if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
            return ("tuple", [export(x) for x in v])
        if not isinstance(v, (int, float, bool, str, torch.Size, torch.dtype, type(None))):
            raise Unsupported(f"segment output of type {type(v).__name__}")
        b.mixes_rows("a segment returns a Python value (a size would be the padded one)")
        return ("value", v)

    for node in seg.outputs:
        conv.outputs.append(export(values[node]))
    conv.output_values = dict(outputs_flat)
    assert all(n in members for n in seg.outputs)
    if grad is not None:
        _append_backward(b, conv, outputs_flat, grad)
    return conv


def _append_backward(b, conv, outputs_flat, grad):
    wants_input, param_paths = grad
    g = b.g
    loss = None
    for name, v in outputs_flat:
        if v.dtype not in FLOATS:
            continue
        gin = b.input(f"grad.{name}", v.dtype, v.shape, batched=v.batched)
        conv.grad_inputs.append((name, g.name(gin.id)))
        term = b.op("sum", [b.op("mul", [v, gin], rows="pointwise")],
                    {"axes": list(range(v.rank)), "keepdim": False}, rows="first")
        loss = term if loss is None else b.op("add", [loss, term], rows="pointwise")
    if loss is None:
        raise Unsupported("no float output to differentiate")
    wrt, targets = [], []
    for i, name in enumerate(conv.inputs):
        if wants_input[i]:
            vid = g.find(name)
            if g.type(vid)[0] in FLOATS:
                wrt.append(vid)
                targets.append(("input", i))
    path_to_name = {path: name for name, path in conv.params.items()}
    for path in param_paths:
        if path in path_to_name:
            vid = g.find(path_to_name[path])
            if g.type(vid)[0] in FLOATS:
                wrt.append(vid)
                targets.append(("param", path_to_name[path]))
    if not wrt:
        return
    for vid, target in zip(g.grad(loss.id, wrt), targets):
        name = f"grad{len(conv.grad_outputs)}"
        g.output(name, vid)
        conv.grad_outputs[name] = target
