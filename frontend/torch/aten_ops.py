"""Handlers for ATen ops, what functorch's make_fx / aot_module record (torch.ops.aten.*), keyed by the overload's
name ("aten.convolution.default"). Same contract as torch_ops: converted arguments in, a spire value out, or
Unsupported with the reason."""
from spire import _spire

from . import nn_blocks as nb
from .builder import SpireValue, Unsupported, registrar
from .torch_ops import METHODS, arg

ATEN = {}


aten = registrar(ATEN)


@aten("aten.convolution.default")
def _convolution(b, args, kwargs):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    if transposed:
        raise Unsupported("transposed convolution")
    return nb.conv2d(b, x, w, bias, stride, padding, dilation, groups)


@aten("aten.addmm.default")
def _addmm(b, args, kwargs):
    bias, x, w = args[:3]
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        raise Unsupported("addmm with alpha or beta")
    return b.op("add", [nb.matmul(b, x, w), bias], rows="pointwise")


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(b, args, kwargs):
    return nb.matmul(b, args[0], args[1])


# ATen's t and transpose take the tensor methods' arguments.
aten("aten.t.default")(METHODS["t"])
aten("aten.transpose.int")(METHODS["transpose"])


@aten("aten.permute.default")
def _permute(b, args, kwargs):
    return b.permute(args[0], args[1])


@aten("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _view(b, args, kwargs):
    return b.reshape(nb.tensor(args[0], "view's input"), args[1])


@aten("aten._reshape_alias.default")
def _reshape_alias(b, args, kwargs):
    x, size, stride = args[0], list(args[1]), list(args[2])
    expected, step = [], 1
    for s in reversed(size):
        expected.insert(0, step)
        step *= max(int(s), 1)
    if any(st != e for st, e, s in zip(stride, expected, size) if s != 1):
        raise Unsupported(f"_reshape_alias with strides {stride} (not a contiguous view)")
    return b.reshape(nb.tensor(x, "the input"), size)


@aten("aten.flatten.using_ints")
def _flatten(b, args, kwargs):
    return b.flatten(args[0], arg(args, kwargs, 1, "start_dim", 0), arg(args, kwargs, 2, "end_dim", -1))


@aten("aten.unsqueeze.default")
def _unsqueeze(b, args, kwargs):
    return nb.unsqueeze(b, args[0], args[1])


@aten("aten.squeeze.dim")
def _squeeze(b, args, kwargs):
    return nb.squeeze(b, args[0], args[1])


@aten("aten.expand.default")
def _expand(b, args, kwargs):
    return nb.expand(b, args[0], args[1])


@aten("aten.clone.default", "aten.detach.default", "aten.alias.default", "aten.contiguous.default")
def _identity(b, args, kwargs):
    return nb.tensor(args[0], "the input")


for _name, _op in (("relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("exp", "exp"), ("log", "log"),
                   ("sqrt", "sqrt"), ("neg", "neg"), ("abs", "abs"), ("silu", "silu"), ("erf", "erf"),
                   ("reciprocal", "reciprocal"), ("hardswish", "hard_swish")):
    aten(f"aten.{_name}.default")(lambda b, args, kwargs, _op=_op: nb.unary(b, _op, args[0]))


@aten("aten.hardtanh.default")
def _hardtanh(b, args, kwargs):
    return nb.clamp(b, args[0], arg(args, kwargs, 1, "min_val", -1.0), arg(args, kwargs, 2, "max_val", 1.0))


@aten("aten.clamp.default")
def _clamp(b, args, kwargs):
    return nb.clamp(b, args[0], arg(args, kwargs, 1, "min", None), arg(args, kwargs, 2, "max", None))


@aten("aten.gelu.default")
def _gelu(b, args, kwargs):
    return nb.gelu(b, args[0], kwargs.get("approximate", "none"))


def _binary(op):
    def handler(b, args, kwargs):
        a, c = args[0], args[1]
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            c = b.binary("mul", c, alpha) if isinstance(c, SpireValue) else c * alpha
        return b.binary(op, a, c)
    return handler


for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div")):
    aten(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_binary(_op))


@aten("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(b, args, kwargs):
    return b.binary("sub", args[1], args[0])


def _reduction(op, input_of):
    """A reduction over the dims given (`aten.<op>.dim*`, keepdim optional) or over everything (`.default`)."""
    def over_dims(b, args, kwargs):
        return b.reduce(op, input_of(args[0], f"{op}'s input"), args[1], arg(args, kwargs, 2, "keepdim", False))

    def over_all(b, args, kwargs):
        return b.reduce(op, input_of(args[0], f"{op}'s input"), None, False)
    return over_dims, over_all


# mean takes floats only (an integer mean is an error in PyTorch too); sum takes any tensor.
for _op, _dims, _input_of in (("mean", "aten.mean.dim", nb.float_tensor), ("sum", "aten.sum.dim_IntList", nb.tensor)):
    _over_dims, _over_all = _reduction(_op, _input_of)
    aten(_dims)(_over_dims)
    aten(f"aten.{_op}.default")(_over_all)


@aten("aten.cat.default")
def _cat(b, args, kwargs):
    return nb.concat(b, list(args[0]), arg(args, kwargs, 1, "dim", 0))


# Ops with several results: the handler returns a tuple whose other entries are None; a getitem of one of those
# raises Unsupported (the indices of a max pooling, the saved statistics of a batch norm).
@aten("aten.max_pool2d_with_indices.default")
def _max_pool2d_with_indices(b, args, kwargs):
    x, kernel = args[0], args[1]
    y = nb.max_pool2d(b, x, kernel, arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                      arg(args, kwargs, 4, "dilation", 1), arg(args, kwargs, 5, "ceil_mode", False))
    return (y, None)


@aten("aten.max_pool2d.default")
def _max_pool2d(b, args, kwargs):
    return nb.max_pool2d(b, args[0], args[1], arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                         arg(args, kwargs, 4, "dilation", 1), arg(args, kwargs, 5, "ceil_mode", False))


@aten("aten.avg_pool2d.default")
def _avg_pool2d(b, args, kwargs):
    return nb.avg_pool2d(b, args[0], args[1], arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                         arg(args, kwargs, 4, "ceil_mode", False), arg(args, kwargs, 5, "count_include_pad", True),
                         arg(args, kwargs, 6, "divisor_override", None))


@aten("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(b, args, kwargs):
    return nb.adaptive_avg_pool2d(b, args[0], args[1])


@aten("aten.native_batch_norm.default", "aten._native_batch_norm_legit_no_training.default")
def _native_batch_norm(b, args, kwargs):
    x, w, bias, mean, var = args[:5]
    if len(args) == 8:  # native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
        training, eps = args[5], args[7]
    else:               # _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps)
        training, eps = False, args[6]
    if training:
        raise Unsupported("batch norm in training mode (batch statistics)")
    return (nb.batch_norm_eval(b, x, w, bias, mean, var, eps), None, None)


@aten("aten.split.Tensor", "aten.split_with_sizes.default")
def _split(b, args, kwargs):
    return nb.split(b, args[0], args[1], arg(args, kwargs, 2, "dim", 0))


@aten("aten.native_layer_norm.default")
def _native_layer_norm(b, args, kwargs):
    x, shape, w, bias, eps = args[:5]
    return (nb.layer_norm(b, x, list(shape), w, bias, eps), None, None)


@aten("aten.dropout.default")
def _dropout(b, args, kwargs):
    if arg(args, kwargs, 2, "train", True) and args[1] > 0:
        raise Unsupported("dropout in training mode (random masks stay in PyTorch)")
    return args[0]


@aten("aten.select.int")
def _select(b, args, kwargs):
    return nb.select(b, args[0], args[1], args[2])


@aten("aten.unbind.int")
def _unbind(b, args, kwargs):
    x = nb.tensor(args[0], "unbind's input")
    dim = arg(args, kwargs, 1, "dim", 0)
    return tuple(nb.select(b, x, dim, i) for i in range(x.shape[dim]))


@aten("aten._transformer_encoder_layer_fwd.default")
def _encoder_layer(b, args, kwargs):
    return nb.transformer_encoder_layer(b, {name: arg(args, kwargs, i, name, None)
                                            for i, name in enumerate(nb.ENCODER_LAYER_ARGS)})


@aten("aten.scaled_dot_product_attention.default")
def _sdpa(b, args, kwargs):
    return nb.scaled_dot_product_attention(b, args[0], args[1], args[2], arg(args, kwargs, 3, "attn_mask", None),
                                           arg(args, kwargs, 4, "dropout_p", 0.0), arg(args, kwargs, 5, "is_causal", False),
                                           kwargs.get("scale"))


@aten("aten._scaled_dot_product_flash_attention_for_cpu.default")
def _sdpa_flash_cpu(b, args, kwargs):
    # (query, key, value, dropout_p, is_causal, *, attn_mask, scale) -> (output, logsumexp)
    out = nb.scaled_dot_product_attention(b, args[0], args[1], args[2], kwargs.get("attn_mask"),
                                          arg(args, kwargs, 3, "dropout_p", 0.0), arg(args, kwargs, 4, "is_causal", False),
                                          kwargs.get("scale"))
    return (out, None)


# Ops along one axis (torch_ops.py's rule): ATen records f(input, dim, half_to_float) as aten._f.default.
def _along_axis(op):
    return lambda b, args, kwargs: nb.along_axis(b, op, args[0], args[1])


for _op in _spire.ops_along_one_axis():
    aten(f"aten._{_op}.default")(_along_axis(_op))
