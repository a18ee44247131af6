"""Handlers for ATen ops, what functorch's make_fx / aot_module record (torch.ops.aten.*), keyed by the overload's
name ("aten.convolution.default"). Same contract as torch_ops: converted arguments in, a spire value out, or
Unsupported with the reason."""
import torch
import torch.nn.functional as F

from spire import _spire

from . import nn_blocks as nb
from .builder import SpireValue, Unsupported, registrar
from .torch_ops import COMPARISONS, FUNCTIONS, METHODS, PADDING_OPS, padding_op, arg, upsample_op_names, upsample_overload

ATEN = {}


aten = registrar(ATEN)


# ATen overloads that take the arguments of a torch function or tensor method, in its order and under its names: that
# function's handler serves them.
for _overload, _handler in (
        ("aten.view.default", METHODS["view"]), ("aten._unsafe_view.default", METHODS["view"]),
        ("aten.reshape.default", METHODS["reshape"]), ("aten.permute.default", METHODS["permute"]),
        ("aten.expand.default", METHODS["expand"]), ("aten.flatten.using_ints", FUNCTIONS[torch.flatten]),
        ("aten.unsqueeze.default", FUNCTIONS[torch.unsqueeze]), ("aten.squeeze.dim", FUNCTIONS[torch.squeeze]),
        ("aten.select.int", METHODS["select"]), ("aten.slice_scatter.default", METHODS["slice_scatter"]),
        ("aten.select_scatter.default", METHODS["select_scatter"]), ("aten.unbind.int", METHODS["unbind"]),
        ("aten.split.Tensor", FUNCTIONS[torch.split]),
        ("aten.split_with_sizes.default", FUNCTIONS[torch.split]),
        ("aten.chunk.default", FUNCTIONS[torch.chunk]), ("aten.cat.default", FUNCTIONS[torch.cat]),
        ("aten.unsafe_split.Tensor", FUNCTIONS[torch.split]),
        ("aten.unsafe_split_with_sizes.default", FUNCTIONS[torch.split]),
        ("aten.stack.default", FUNCTIONS[torch.stack]), ("aten.repeat.default", METHODS["repeat"]),
        ("aten.softplus.default", FUNCTIONS[F.softplus]),
        ("aten.mish.default", FUNCTIONS[F.mish]), ("aten.prelu.default", FUNCTIONS[F.prelu]),
        ("aten._prelu_kernel.default", FUNCTIONS[F.prelu]),
        ("aten.pixel_shuffle.default", FUNCTIONS[F.pixel_shuffle]),
        ("aten.clone.default", METHODS["clone"]), ("aten.detach.default", METHODS["detach"]),
        ("aten.alias.default", METHODS["clone"]), ("aten.contiguous.default", METHODS["contiguous"]),
        ("aten.clamp.default", FUNCTIONS[torch.clamp]), ("aten.hardtanh.default", FUNCTIONS[F.hardtanh]),
        ("aten.gelu.default", FUNCTIONS[F.gelu]), ("aten.hardsigmoid.default", FUNCTIONS[F.hardsigmoid]),
        ("aten.dropout.default", FUNCTIONS.get(torch.dropout)),
        ("aten.max_pool2d.default", FUNCTIONS[F.max_pool2d]), ("aten.avg_pool2d.default", FUNCTIONS[F.avg_pool2d]),
        *((f"aten.{p}adaptive_avg_pool{d}.default", FUNCTIONS[getattr(F, f"adaptive_avg_pool{d}")])
          for p in ("_", "") for d in ("2d", "3d")), ("aten.avg_pool3d.default", FUNCTIONS[F.avg_pool3d]),
        ("aten.rsqrt.default", FUNCTIONS[torch.rsqrt]), ("aten.pow.Tensor_Scalar", FUNCTIONS[torch.pow]),
        ("aten.where.self", FUNCTIONS[torch.where]), ("aten.where.ScalarSelf", FUNCTIONS[torch.where]),
        ("aten.where.ScalarOther", FUNCTIONS[torch.where]), ("aten.where.Scalar", FUNCTIONS[torch.where]),
        ("aten.bitwise_and.Tensor", FUNCTIONS[torch.bitwise_and]),
        ("aten.bitwise_or.Tensor", FUNCTIONS[torch.bitwise_or]),
        ("aten.logical_and.default", FUNCTIONS[torch.logical_and]),
        ("aten.logical_or.default", FUNCTIONS[torch.logical_or]),
        ("aten.logical_not.default", FUNCTIONS[torch.logical_not]), ("aten.bitwise_not.default", FUNCTIONS[torch.bitwise_not]),
        ("aten.masked_fill.Scalar", FUNCTIONS[torch.masked_fill]), ("aten.masked_fill.Tensor", FUNCTIONS[torch.masked_fill]),
        ("aten.baddbmm.default", FUNCTIONS[torch.baddbmm]),
        ("aten.constant_pad_nd.default", FUNCTIONS[torch.constant_pad_nd]), ("aten.roll.default", FUNCTIONS[torch.roll]),
        ("aten.flip.default", FUNCTIONS[torch.flip]),
        ("aten.zeros_like.default", FUNCTIONS[torch.zeros_like]), ("aten.ones_like.default", FUNCTIONS[torch.ones_like]),
        ("aten.empty_like.default", FUNCTIONS[torch.empty_like]), ("aten.full_like.default", FUNCTIONS[torch.full_like]),
        ("aten.new_zeros.default", METHODS["new_zeros"]), ("aten.new_ones.default", METHODS["new_ones"]),
        ("aten.new_empty.default", METHODS["new_empty"]), ("aten.new_full.default", METHODS["new_full"]),
        ("aten.zeros.default", FUNCTIONS[torch.zeros]), ("aten.empty.memory_format", FUNCTIONS[torch.empty]), ("aten.ones.default", FUNCTIONS[torch.ones]),
        ("aten.full.default", FUNCTIONS[torch.full]), ("aten.scalar_tensor.default", FUNCTIONS[torch.scalar_tensor]),
        ("aten.arange.default", FUNCTIONS[torch.arange]), ("aten.arange.start", FUNCTIONS[torch.arange]),
        ("aten.arange.start_step", FUNCTIONS[torch.arange]), ("aten.embedding.default", FUNCTIONS[torch.embedding]),
        ("aten.linspace.default", FUNCTIONS[torch.linspace]),
        ("aten.grid_sampler_2d.default", FUNCTIONS[torch.grid_sampler]),
        ("aten.grid_sampler.default", FUNCTIONS[torch.grid_sampler]),
        # A copy of a constant tensor (make_fx's record of torch.tensor(...) in forward): the value itself.
        ("aten.lift_fresh_copy.default", METHODS["clone"]),
        # Functions a torch may lack (no handler registered then).
        ("aten.scaled_dot_product_attention.default", FUNCTIONS.get(getattr(F, "scaled_dot_product_attention", 0))),
        ("aten._transformer_encoder_layer_fwd.default",
         FUNCTIONS.get(getattr(torch, "_transformer_encoder_layer_fwd", 0)))):
    if _handler is not None:
        ATEN[_overload] = _handler
for _mode in COMPARISONS:
    aten(f"aten.{_mode}.Tensor", f"aten.{_mode}.Scalar")(FUNCTIONS[getattr(torch, _mode)])


@aten("aten.slice.Tensor")
def _slice(b, args, kwargs):
    return nb.slice_dim(b, args[0], arg(args, kwargs, 1, "dim", 0), arg(args, kwargs, 2, "start", None),
                        arg(args, kwargs, 3, "end", None), arg(args, kwargs, 4, "step", 1))


@aten("aten._to_copy.default")
def _to_copy(b, args, kwargs):
    # What .to(dtype) / .float() record; a move to a device stays in PyTorch.
    if kwargs.get("device") is not None:
        raise Unsupported("a copy to a device")
    x = nb.tensor(args[0], "the copied value")
    return x if kwargs.get("dtype") is None else nb.cast(b, x, kwargs["dtype"])


@aten("aten.convolution.default")
def _convolution(b, args, kwargs):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    if transposed:
        return nb.conv_transpose2d(b, x, w, bias, stride, padding, output_padding, groups, dilation)
    conv = nb.conv3d if isinstance(w, SpireValue) and w.rank == 5 else nb.conv2d
    return conv(b, x, w, bias, stride, padding, dilation, groups)


@aten("aten.elu.default")
def _elu(b, args, kwargs):
    # (self, alpha, scale, input_scale): F.elu's alpha, and the scales SELU and CELU decompose to.
    return nb.elu(b, args[0], arg(args, kwargs, 1, "alpha", 1.0), arg(args, kwargs, 2, "scale", 1.0),
                  arg(args, kwargs, 3, "input_scale", 1.0))


@aten("aten.celu.default")
def _celu(b, args, kwargs):
    alpha = arg(args, kwargs, 1, "alpha", 1.0)
    return nb.elu(b, args[0], alpha, 1.0, 1.0 / alpha)


@aten("aten.native_group_norm.default")
def _native_group_norm(b, args, kwargs):
    # (input, weight, bias, N, C, HxW, group, eps) -> (output, mean, rstd)
    x, w, bias, group, eps = args[0], args[1], args[2], args[6], args[7]
    return (nb.group_norm(b, x, group, w, bias, eps), None, None)


for _name, _mode in PADDING_OPS:
    aten(f"aten.{_name}.default")(padding_op(_mode))


for _name, _aligns in upsample_op_names():
    _packet = getattr(torch.ops.aten, _name, None)
    for _overload in ("vec", "default"):
        if _packet is not None and hasattr(_packet, _overload):
            aten(f"aten.{_name}.{_overload}")(upsample_overload(getattr(_packet, _overload), _overload, _aligns))


@aten("aten.addmm.default")
def _addmm(b, args, kwargs):
    bias, x, w = args[:3]
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        raise Unsupported("addmm with alpha or beta")
    return b.op("add", [nb.matmul(b, x, w), bias], rows="pointwise")


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(b, args, kwargs):
    return nb.matmul(b, args[0], args[1])


# ATen's t and transpose take the tensor methods' arguments; aten.transpose.default is dispatch's functional name for
# the in-place aten.transpose_.default (allowed where nothing reads the transposed tensor after it).
aten("aten.t.default")(METHODS["t"])
aten("aten.transpose.int", "aten.transpose.default")(METHODS["transpose"])


@aten("aten._reshape_alias.default")
def _reshape_alias(b, args, kwargs):
    # What aten.reshape(x, size) records where the reshape can be a view: the strides are those ATen computed from
    # x's own layout for that view, so on x the result is x.reshape(size) whatever they are (non-contiguous ones,
    # [40, 1, 8] for a transposed and expanded x, would address other elements of a contiguous copy of x; checked
    # with torch 1.13). spire values are logical tensors, without strides: a reshape, exactly.
    return b.reshape(nb.tensor(args[0], "the input"), list(args[1]))


for _name, _op in (("relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("exp", "exp"), ("log", "log"),
                   ("sqrt", "sqrt"), ("neg", "neg"), ("abs", "abs"), ("silu", "silu"), ("erf", "erf"),
                   ("reciprocal", "reciprocal"), ("hardswish", "hard_swish"), ("cos", "cos"), ("sin", "sin")):
    aten(f"aten.{_name}.default")(lambda b, args, kwargs, _op=_op: nb.unary(b, _op, args[0]))


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


# Ops with several results: the handler returns a tuple whose other entries are None; a getitem of one of those
# raises Unsupported (the indices of a max pooling, the saved statistics of a batch norm).
@aten("aten.max_pool2d_with_indices.default")
def _max_pool2d_with_indices(b, args, kwargs):
    x, kernel = args[0], args[1]
    y = nb.max_pool2d(b, x, kernel, arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                      arg(args, kwargs, 4, "dilation", 1), arg(args, kwargs, 5, "ceil_mode", False))
    return (y, None)


@aten("aten.max_pool3d_with_indices.default")
def _max_pool3d_with_indices(b, args, kwargs):
    y = nb.pool3d(b, "max", args[0], args[1], arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                  arg(args, kwargs, 4, "dilation", 1), arg(args, kwargs, 5, "ceil_mode", False))
    return (y, None)


@aten("aten.native_batch_norm.default", "aten._native_batch_norm_legit_no_training.default",
      "aten.miopen_batch_norm.default")
def _native_batch_norm(b, args, kwargs):
    x, w, bias, mean, var = args[:5]
    if len(args) == 8:  # native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
        training, eps = args[5], args[7]
    else:               # _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps)
        training, eps = False, args[6]
    if training and mean is None and var is None:
        return (nb.batch_stats_norm(b, x, w, bias, eps), None, None)  # instance norm's record: no stats to update
    if training:
        raise Unsupported("batch norm in training mode (batch statistics, running-stat updates)")
    return (nb.batch_norm_eval(b, x, w, bias, mean, var, eps), None, None)


@aten("aten.cudnn_batch_norm.default")
def _cudnn_batch_norm(b, args, kwargs):
    """What make_fx records for batch norm on CUDA tensors (MIOpen's on ROCm, above): native_batch_norm's arguments,
    and a fourth result, cuDNN's workspace, which no later op reads."""
    return _native_batch_norm(b, args, kwargs) + (None,)


@aten("aten.native_layer_norm.default")
def _native_layer_norm(b, args, kwargs):
    x, shape, w, bias, eps = args[:5]
    return (nb.layer_norm(b, x, list(shape), w, bias, eps), None, None)


@aten("aten.unbind.int")
def _unbind(b, args, kwargs):
    x = nb.tensor(args[0], "unbind's input")
    dim = arg(args, kwargs, 1, "dim", 0)
    return tuple(nb.select(b, x, dim, i) for i in range(x.shape[dim]))


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


@aten("aten.index.Tensor")
def _index_tensor(b, args, kwargs):
    # (self, indices: one optional tensor per leading dimension): one integer tensor for dim 0, as x[indices] records.
    indices = list(args[1])
    if len(indices) != 1 or indices[0] is None:
        raise Unsupported("advanced indexing other than x[one index tensor]")
    return nb.index(b, args[0], indices[0])
