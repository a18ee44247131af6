"""Handlers for what torch.fx.symbolic_trace records: nn modules (call_module), torch functions and operators
(call_function) and tensor methods (call_method). Each takes the builder and the node's arguments, already converted
(spire values for tensors, Python values for the rest), and returns a spire value or a Python value; a node it cannot
map raises Unsupported with the reason explain() prints."""
import builtins
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from spire import _spire

from . import nn_blocks as nb
from .builder import SPIRE_TO_TORCH, SpireValue, Unsupported, registrar

_REQUIRED = object()


def arg(args, kwargs, i, name, default=_REQUIRED):
    if i < len(args):
        return args[i]
    if name in kwargs:
        return kwargs[name]
    if default is _REQUIRED:
        raise Unsupported(f"argument '{name}' is missing")
    return default


# ---------------------------------------------------------------------------------------------------------------
# nn modules: fn(builder, module, path, args, kwargs)

MODULES = {}


module = registrar(MODULES)


def _param(b, mod, path, name):
    t = getattr(mod, name, None)
    return None if t is None else b.param(f"{path}.{name}", t)


@module(nn.Conv2d, nn.Conv3d)
def _conv2d(b, m, path, args, kwargs):
    x, padding = args[0], m.padding
    if m.padding_mode != "zeros":
        # reflect, replicate, circular: the input padded first (as Conv2d does), the convolution without padding
        x, padding = nb.pad(b, x, m._reversed_padding_repeated_twice, m.padding_mode), 0
    conv = nb.conv3d if isinstance(m, nn.Conv3d) else nb.conv2d
    return conv(b, x, _param(b, m, path, "weight"), _param(b, m, path, "bias"), m.stride, padding, m.dilation,
                m.groups)


@module(nn.ReflectionPad1d, nn.ReflectionPad2d, nn.ReplicationPad1d, nn.ReplicationPad2d, nn.ReplicationPad3d,
        nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d, nn.ConstantPad3d)
def _pad_module(b, m, path, args, kwargs):
    mode = "reflect" if "Reflection" in type(m).__name__ else "replicate" if "Replication" in type(m).__name__ else \
        "constant"
    return nb.pad(b, args[0], m.padding, mode, getattr(m, "value", 0.0))


@module(nn.Linear)
def _linear(b, m, path, args, kwargs):
    return nb.linear(b, args[0], _param(b, m, path, "weight"), _param(b, m, path, "bias"))


@module(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batch_norm(b, m, path, args, kwargs):
    if m.training and m.track_running_stats or m.running_mean is None:
        raise Unsupported(f"{type(m).__name__} in training mode (batch statistics, running-stat updates)")
    x = args[0]
    if isinstance(m, nn.BatchNorm1d) and isinstance(x, SpireValue) and x.rank == 3:
        raise Unsupported("BatchNorm1d of a rank-3 input")
    return nb.batch_norm_eval(b, x, _param(b, m, path, "weight"), _param(b, m, path, "bias"),
                              _param(b, m, path, "running_mean"), _param(b, m, path, "running_var"), m.eps)


@module(nn.LayerNorm)
def _layer_norm(b, m, path, args, kwargs):
    return nb.layer_norm(b, args[0], m.normalized_shape, _param(b, m, path, "weight"), _param(b, m, path, "bias"),
                         m.eps)


@module(nn.ReLU)
def _relu(b, m, path, args, kwargs):
    return nb.unary(b, "relu", args[0])


@module(nn.ReLU6)
def _relu6(b, m, path, args, kwargs):
    return nb.clamp(b, args[0], 0.0, 6.0)


@module(nn.Hardtanh)
def _hardtanh(b, m, path, args, kwargs):
    return nb.clamp(b, args[0], m.min_val, m.max_val)


@module(nn.SiLU)
def _silu(b, m, path, args, kwargs):
    return nb.unary(b, "silu", args[0])


@module(nn.Sigmoid)
def _sigmoid(b, m, path, args, kwargs):
    return nb.unary(b, "sigmoid", args[0])


@module(nn.Tanh)
def _tanh(b, m, path, args, kwargs):
    return nb.unary(b, "tanh", args[0])


@module(nn.GELU)
def _gelu(b, m, path, args, kwargs):
    return nb.gelu(b, args[0], getattr(m, "approximate", "none"))


@module(nn.Embedding)
def _embedding(b, m, path, args, kwargs):
    if m.max_norm is not None:
        raise Unsupported("Embedding with max_norm (renormalizes the table in place)")
    return nb.embedding(b, _param(b, m, path, "weight"), args[0])


@module(nn.LeakyReLU)
def _leaky_relu(b, m, path, args, kwargs):
    return b.op("leaky_relu", [nb.float_tensor(args[0], "leaky_relu's input")], {"alpha": float(m.negative_slope)},
                rows="pointwise")


@module(nn.Hardsigmoid)
def _hardsigmoid(b, m, path, args, kwargs):
    return nb.hardsigmoid(b, args[0])


@module(nn.Hardswish)
def _hardswish(b, m, path, args, kwargs):
    return nb.unary(b, "hard_swish", args[0])


@module(nn.Identity)
def _identity(b, m, path, args, kwargs):
    return args[0]


@module(nn.Dropout, nn.Dropout2d)
def _dropout(b, m, path, args, kwargs):
    if m.training and m.p > 0:
        raise Unsupported("dropout in training mode (random masks stay in PyTorch)")
    return args[0]


@module(nn.Flatten)
def _flatten(b, m, path, args, kwargs):
    return b.flatten(nb.tensor(args[0], "flatten's input"), m.start_dim, m.end_dim)


@module(nn.MaxPool2d)
def _max_pool2d(b, m, path, args, kwargs):
    if m.return_indices:
        raise Unsupported("MaxPool2d with return_indices")
    return nb.max_pool2d(b, args[0], m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)


@module(nn.MaxPool3d, nn.AvgPool3d)
def _pool3d(b, m, path, args, kwargs):
    if isinstance(m, nn.MaxPool3d):
        if m.return_indices:
            raise Unsupported("MaxPool3d with return_indices")
        return nb.pool3d(b, "max", args[0], m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)
    return nb.pool3d(b, "avg", args[0], m.kernel_size, m.stride, m.padding, 1, m.ceil_mode, m.count_include_pad,
                     m.divisor_override)


@module(nn.AvgPool2d)
def _avg_pool2d(b, m, path, args, kwargs):
    return nb.avg_pool2d(b, args[0], m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad,
                         m.divisor_override)


@module(nn.AdaptiveAvgPool2d)
def _adaptive_avg_pool2d(b, m, path, args, kwargs):
    return nb.adaptive_avg_pool2d(b, args[0], m.output_size)


@module(nn.AdaptiveAvgPool3d)
def _adaptive_avg_pool3d(b, m, path, args, kwargs):
    return nb.adaptive_avg_pool3d(b, args[0], m.output_size)


@module(nn.GroupNorm)
def _group_norm(b, m, path, args, kwargs):
    return nb.group_norm(b, args[0], m.num_groups, _param(b, m, path, "weight"), _param(b, m, path, "bias"), m.eps)


def _instance_norm(b, x, mean, var, weight, bias, use_input_stats, eps):
    """F.instance_norm: each sample's channels standardized over their spatial positions (group norm with a group per
    channel); with use_input_stats=False (eval with running statistics) batch norm's inference form."""
    if not use_input_stats:
        return nb.batch_norm_eval(b, x, weight, bias, mean, var, eps)
    nb.float_tensor(x, "instance_norm's input")
    return nb.group_norm(b, x, x.shape[1] if x.rank >= 2 else 1, weight, bias, eps)


@module(nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
def _instance_norm_module(b, m, path, args, kwargs):
    use_input_stats = m.training or not m.track_running_stats
    if use_input_stats and m.track_running_stats:
        raise Unsupported(f"{type(m).__name__} in training mode with running statistics (updates them)")
    x = nb.tensor(args[0], "instance_norm's input")
    if x.rank != m._get_no_batch_dim() + 1:
        raise Unsupported(f"{type(m).__name__} of an unbatched rank-{x.rank} input")
    return _instance_norm(b, x, _param(b, m, path, "running_mean"), _param(b, m, path, "running_var"),
                          _param(b, m, path, "weight"), _param(b, m, path, "bias"), use_input_stats, m.eps)


@module(nn.ELU)
def _elu(b, m, path, args, kwargs):
    return nb.elu(b, args[0], m.alpha)


# SELU's fixed constants, as PyTorch's (aten/src/ATen/native/Activation.cpp).
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


@module(nn.SELU)
def _selu(b, m, path, args, kwargs):
    return nb.elu(b, args[0], SELU_ALPHA, SELU_SCALE)


@module(nn.CELU)
def _celu(b, m, path, args, kwargs):
    return nb.elu(b, args[0], m.alpha, 1.0, 1.0 / m.alpha)


@module(nn.Softplus)
def _softplus(b, m, path, args, kwargs):
    return nb.softplus(b, args[0], m.beta, m.threshold)


@module(nn.Mish)
def _mish(b, m, path, args, kwargs):
    return nb.mish(b, args[0])


@module(nn.PReLU)
def _prelu(b, m, path, args, kwargs):
    return nb.prelu(b, args[0], _param(b, m, path, "weight"))


@module(nn.PixelShuffle)
def _pixel_shuffle(b, m, path, args, kwargs):
    return nb.pixel_shuffle(b, args[0], m.upscale_factor)


def _interpolate(b, x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias=False):
    """F.interpolate / nn.Upsample, every mode: nb.resize, each axis's coefficients from F.interpolate itself."""
    x = nb.float_tensor(x, "the interpolated input")
    axes = nb.interpolate_axes(x.shape[2:], size, scale_factor, recompute_scale_factor)
    extra = {"antialias": True} if antialias else {}

    def axis_call(probe, d):
        size_d, scale_d = axes[d]
        if scale_d is None:
            return F.interpolate(probe, size=[size_d if i == d else nb.PROBE_OTHER for i in range(len(axes))],
                                 mode=mode, align_corners=align_corners, **extra)
        return F.interpolate(probe, scale_factor=[scale_d if i == d else 1.0 for i in range(len(axes))], mode=mode,
                             align_corners=align_corners, recompute_scale_factor=False, **extra)
    return nb.resize(b, x, axis_call)


def upsample_overload(op, overload, aligns):
    """A handler for PyTorch's upsample ops (aten.upsample_bilinear2d and the like, and the torch._C._nn functions
    F.interpolate calls, which Dynamo records): .vec (input, output_size, [align_corners,] scale_factors), .default
    (input, output_size, [align_corners,] *scales). `aligns`: the op takes align_corners (the interpolating modes).
    Each axis's coefficients come from `op` itself (nb.resize)."""
    def handler(b, args, kwargs):
        if kwargs:
            raise Unsupported(f"an upsample op with keyword arguments {sorted(kwargs)}")
        x = nb.float_tensor(args[0], "the upsampled input")
        n = x.rank - 2
        output_size = args[1]
        corners = list(args[2:3]) if aligns else []
        rest = list(args[3:] if aligns else args[2:])

        def axis_call(probe, d):
            sizes = [int(output_size[i]) if i == d else nb.PROBE_OTHER for i in range(n)] if output_size else None
            if overload == "default":
                scales = (rest + [None] * n)[:n]
                return op(probe, sizes, *corners, *[scales[i] if i == d else None for i in range(n)])
            factors = rest[0] if rest else None
            if output_size is not None:
                return op(probe, sizes, *corners, None)
            return op(probe, None, *corners, [float(factors[i]) if i == d else 1.0 for i in range(n)])
        return nb.resize(b, x, axis_call)
    return handler


# Each upsample op: (name, aligns), spatial dims 1-3 where PyTorch has them.
UPSAMPLE_OPS = (("upsample_nearest{}d", False), ("_upsample_nearest_exact{}d", False), ("upsample_linear1d", True),
                ("upsample_bilinear2d", True), ("upsample_bicubic2d", True), ("upsample_trilinear3d", True),
                ("_upsample_bilinear2d_aa", True), ("_upsample_bicubic2d_aa", True))


def upsample_op_names():
    """(name, aligns) of every upsample op, the nearest ones per spatial rank."""
    for name, aligns in UPSAMPLE_OPS:
        for dims in ((1, 2, 3) if "{}" in name else (None,)):
            yield (name.format(dims) if dims else name), aligns


@module(nn.Upsample)
def _upsample(b, m, path, args, kwargs):
    return _interpolate(b, args[0], m.size, m.scale_factor, m.mode, m.align_corners, m.recompute_scale_factor)


@module(nn.ConvTranspose2d)
def _conv_transpose2d(b, m, path, args, kwargs):
    if m.padding_mode != "zeros":
        raise Unsupported(f"ConvTranspose2d with padding_mode='{m.padding_mode}'")
    if arg(args, kwargs, 1, "output_size", None) is not None:
        raise Unsupported("ConvTranspose2d with output_size")
    return nb.conv_transpose2d(b, args[0], _param(b, m, path, "weight"), _param(b, m, path, "bias"), m.stride,
                               m.padding, m.output_padding, m.groups, m.dilation)


@module(nn.MultiheadAttention)
def _multihead_attention(b, m, path, args, kwargs):
    """nn.MultiheadAttention in evaluation (or without dropout), batched: nb.multi_head_attention with the module's
    projections."""
    query, key, value = (nb.float_tensor(arg(args, kwargs, i, n), f"attention's {n}")
                         for i, n in enumerate(("query", "key", "value")))
    if arg(args, kwargs, 7, "is_causal", False):
        raise Unsupported("MultiheadAttention with is_causal (a hint PyTorch may take instead of attn_mask)")
    if m.training and m.dropout > 0:
        raise Unsupported("MultiheadAttention with dropout in training mode")
    if m.bias_k is not None or m.bias_v is not None or m.add_zero_attn:
        raise Unsupported("MultiheadAttention with bias_k, bias_v or add_zero_attn")
    embed = m.embed_dim
    if m._qkv_same_embed_dim:
        w = _param(b, m, path, "in_proj_weight")
        weights = [nb.slice_run(b, w, 0, i * embed, embed) for i in range(3)]
    else:
        weights = [_param(b, m, path, f"{n}_proj_weight") for n in "qkv"]
    bias = _param(b, m, path, "in_proj_bias")
    biases = [None] * 3 if bias is None else [nb.slice_run(b, bias, 0, i * embed, embed) for i in range(3)]
    if not m.batch_first:
        query, key, value = (b.permute(t, [1, 0, 2]) if t.rank == 3 else t for t in (query, key, value))
    out, probs = nb.multi_head_attention(
        b, query, key, value, m.num_heads, weights, biases, _param(b, m.out_proj, f"{path}.out_proj", "weight"),
        _param(b, m.out_proj, f"{path}.out_proj", "bias"), arg(args, kwargs, 5, "attn_mask", None),
        arg(args, kwargs, 3, "key_padding_mask", None), arg(args, kwargs, 4, "need_weights", True),
        arg(args, kwargs, 6, "average_attn_weights", True))
    return (out if m.batch_first else b.permute(out, [1, 0, 2]), probs)


# ---------------------------------------------------------------------------------------------------------------
# torch functions and Python operators: fn(builder, args, kwargs)

FUNCTIONS = {}


function = registrar(FUNCTIONS)


# Functions of libraries spire does not import (torchvision's ops, which symbolic_trace keeps as calls), by their
# qualified names "module.name": a model using one has imported it already.
FUNCTIONS_BY_NAME = {}


function_named = registrar(FUNCTIONS_BY_NAME)


# Tensor methods, fn(builder, args, kwargs) with args[0] the tensor: a method that takes its function's arguments
# shares its handler (@function(torch.f) @method("f")).
METHODS = {}


method = registrar(METHODS)


# What Dynamo records on torch >= 2, where it inlines nn modules and torch.nn.functional's Python: the functions
# those call (torch.batch_norm, torch._C._nn.*, the in-place forms of inplace=True). Looked up by name, so a torch
# without one of them simply has no entry.
def _torch_fn(path):
    obj = torch
    for atom in path.split("."):
        obj = getattr(obj, atom, None)
        if obj is None:
            return None
    return obj


def _functions(*paths):
    fns = [f for f in (_torch_fn(p) for p in paths) if f is not None]
    return function(*fns) if fns else (lambda fn: fn)


for _name, _aligns in upsample_op_names():
    _fn = _torch_fn(f"_C._nn.{_name}")
    if _fn is not None:
        function(_fn)(upsample_overload(_fn, "vec", _aligns))


def _binary(op, reverse=False):
    def handler(b, args, kwargs):
        a, c = arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "other")
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            if not isinstance(c, SpireValue):
                c = c * alpha
            else:
                c = b.binary("mul", c, alpha)
        return b.binary(op, c, a) if reverse else b.binary(op, a, c)
    return handler


for _fns, _op in (((operator.add, operator.iadd, torch.add), "add"), ((operator.sub, operator.isub, torch.sub), "sub"),
                  ((operator.mul, operator.imul, torch.mul), "mul"),
                  ((operator.truediv, operator.itruediv, torch.div, torch.true_divide), "div")):
    function(*_fns)(_binary(_op))
function(torch.rsub)(_binary("sub", reverse=True))


# The binary methods (x.add(y), x.add_(y)) take the functions' arguments, x first.
def _binary_methods():
    for names, op in ((("add", "add_"), "add"), (("mul", "mul_"), "mul"), (("sub",), "sub"), (("div",), "div")):
        method(*names)(_binary(op))


_binary_methods()


@function(operator.getitem)
def _getitem(b, args, kwargs):
    container, index = args
    if isinstance(container, SpireValue):
        return nb.index(b, container, index)
    result = container[index]
    if result is None and isinstance(container, tuple) and any(isinstance(c, SpireValue) for c in container):
        raise Unsupported("this result of a multi-result op (pooling indices, saved statistics) has no spire mapping")
    return result


@function(getattr)
def _getattr(b, args, kwargs):
    x, name = args[0], args[1]
    if isinstance(x, SpireValue):
        if name == "shape":
            return torch.Size(x.shape)
        if name == "ndim":
            return x.rank
        raise Unsupported(f"tensor attribute '{name}'")
    return getattr(x, name)


@function(operator.floordiv, operator.mod, builtins.len)
def _python_arith(b, args, kwargs):
    raise Unsupported("Python arithmetic on values stays in Python")


@function(torch.relu, F.relu)
@_functions("relu_")
def _f_relu(b, args, kwargs):
    return nb.unary(b, "relu", args[0])


@function(F.relu6)
@_functions("_C._nn.relu6")
def _f_relu6(b, args, kwargs):
    return nb.clamp(b, args[0], 0.0, 6.0)


@function(F.hardtanh)
@_functions("_C._nn.hardtanh", "_C._nn.hardtanh_")
def _f_hardtanh(b, args, kwargs):
    return nb.clamp(b, args[0], arg(args, kwargs, 1, "min_val", -1.0), arg(args, kwargs, 2, "max_val", 1.0))


@function(torch.clamp, torch.clip)
@method("clamp", "clip")
def _f_clamp(b, args, kwargs):
    lo, hi = arg(args, kwargs, 1, "min", None), arg(args, kwargs, 2, "max", None)
    if isinstance(lo, SpireValue) or isinstance(hi, SpireValue):
        raise Unsupported("clamp with tensor bounds")
    return nb.clamp(b, args[0], lo, hi)


for _f, _op in ((F.silu, "silu"), (torch.sigmoid, "sigmoid"), (F.sigmoid, "sigmoid"), (torch.tanh, "tanh"),
                (F.tanh, "tanh"), (torch.exp, "exp"), (torch.log, "log"), (torch.sqrt, "sqrt"), (torch.neg, "neg"),
                (operator.neg, "neg"), (torch.abs, "abs"), (torch.erf, "erf"), (torch.reciprocal, "reciprocal"),
                (F.hardswish, "hard_swish"), (torch.cos, "cos"), (torch.sin, "sin")):
    function(_f)(lambda b, args, kwargs, _op=_op: nb.unary(b, _op, args[0]))


@function(torch.rsqrt)
@method("rsqrt")
def _f_rsqrt(b, args, kwargs):
    return nb.rsqrt(b, args[0])


@function(torch.pow, operator.pow)
@method("pow")
def _f_pow(b, args, kwargs):
    return nb.pow_scalar(b, nb.tensor(args[0], "pow's base"), arg(args, kwargs, 1, "exponent"))


# Comparisons: torch.lt(input, other), operator.lt, Tensor.lt take the same arguments (ATen's lt.Tensor / lt.Scalar
# too); symbolic_trace records `constant_tensor < proxy` as the method __lt__, likewise & and | below.
COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
               "ne": operator.ne}
for _mode, _operator in COMPARISONS.items():
    function(_operator, getattr(torch, _mode))(
        lambda b, args, kwargs, _mode=_mode: nb.compare(b, _mode, args[0], arg(args, kwargs, 1, "other")))
    method(_mode, f"__{_mode}__")(FUNCTIONS[_operator])


@function(operator.and_, torch.logical_and, torch.bitwise_and)
@method("logical_and", "bitwise_and", "__and__")
def _f_and(b, args, kwargs):
    return nb.logical(b, "and", args[0], arg(args, kwargs, 1, "other"))


@function(operator.or_, torch.logical_or, torch.bitwise_or)
@method("logical_or", "bitwise_or", "__or__")
def _f_or(b, args, kwargs):
    return nb.logical(b, "or", args[0], arg(args, kwargs, 1, "other"))


@function(torch.where)
def _f_where(b, args, kwargs):
    if len(args) + len(kwargs) == 1:
        raise Unsupported("torch.where(condition) (nonzero: a data-dependent shape)")
    return nb.where(b, arg(args, kwargs, 0, "condition"), arg(args, kwargs, 1, "input"), arg(args, kwargs, 2, "other"))


MHA_FORWARD_ARGS = (("query", None), ("key", None), ("value", None), ("embed_dim_to_check", None), ("num_heads", None),
                    ("in_proj_weight", None), ("in_proj_bias", None), ("bias_k", None), ("bias_v", None),
                    ("add_zero_attn", None), ("dropout_p", None), ("out_proj_weight", None), ("out_proj_bias", None),
                    ("training", True), ("key_padding_mask", None), ("need_weights", True), ("attn_mask", None),
                    ("use_separate_proj_weight", False), ("q_proj_weight", None), ("k_proj_weight", None),
                    ("v_proj_weight", None), ("static_k", None), ("static_v", None), ("average_attn_weights", True),
                    ("is_causal", False))


@function(F.multi_head_attention_forward)
def _f_multi_head_attention_forward(b, args, kwargs):
    """F.multi_head_attention_forward, what Dynamo records of nn.MultiheadAttention (its inputs [tokens, batch,
    embed], batch_first's transposes around it): nb.multi_head_attention."""
    a = {name: arg(args, kwargs, i, name, default) for i, (name, default) in enumerate(MHA_FORWARD_ARGS)}
    if a["is_causal"]:
        raise Unsupported("multi_head_attention_forward with is_causal (a hint PyTorch may take instead of attn_mask)")
    if a["training"] and a["dropout_p"] > 0:
        raise Unsupported("multi_head_attention_forward with dropout in training mode")
    if any(a[n] is not None for n in ("bias_k", "bias_v", "static_k", "static_v")) or a["add_zero_attn"]:
        raise Unsupported("multi_head_attention_forward with bias_k, bias_v, static_k, static_v or add_zero_attn")
    embed = int(a["embed_dim_to_check"])
    if a["use_separate_proj_weight"]:
        weights = [a[f"{n}_proj_weight"] for n in "qkv"]
    else:
        weights = [nb.slice_run(b, nb.tensor(a["in_proj_weight"], "in_proj_weight"), 0, i * embed, embed)
                   for i in range(3)]
    bias = a["in_proj_bias"]
    biases = [None] * 3 if bias is None else [nb.slice_run(b, bias, 0, i * embed, embed) for i in range(3)]
    query, key, value = (b.permute(nb.float_tensor(a[n], f"attention's {n}"), [1, 0, 2])
                         if isinstance(a[n], SpireValue) and a[n].rank == 3 else a[n] for n in ("query", "key", "value"))
    out, probs = nb.multi_head_attention(b, query, key, value, int(a["num_heads"]), weights, biases,
                                         a["out_proj_weight"], a["out_proj_bias"], a["attn_mask"],
                                         a["key_padding_mask"], a["need_weights"], a["average_attn_weights"])
    return (b.permute(out, [1, 0, 2]), probs)


@function(torch.logical_not, torch.bitwise_not, operator.invert)
@method("logical_not", "bitwise_not", "__invert__")
def _f_not(b, args, kwargs):
    x = nb.tensor(args[0], "a negated value")
    if x.dtype != "bool":
        raise Unsupported(f"logical or bitwise not of {x.dtype} (spire maps it on bool tensors only)")
    return b.op("where", [x, b.const(0, "bool"), b.const(1, "bool")], rows="pointwise")


@function(torch.masked_fill)
@method("masked_fill", "masked_fill_")
def _f_masked_fill(b, args, kwargs):
    # x.masked_fill(mask, value): where(mask, value, x), the value a number or a 0-d tensor of x's dtype
    # (F.multi_head_attention_forward's bool masks become -inf this way).
    value = arg(args, kwargs, 2, "value")
    if isinstance(value, SpireValue) and value.rank:
        raise Unsupported("masked_fill with a value that is not a scalar")
    return nb.where(b, arg(args, kwargs, 1, "mask"), value, nb.tensor(args[0], "masked_fill's input"))


@function(torch.baddbmm)
@method("baddbmm")
def _f_baddbmm(b, args, kwargs):
    # beta * input + alpha * (batch1 @ batch2)
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    product = nb.matmul(b, arg(args, kwargs, 1, "batch1"), arg(args, kwargs, 2, "batch2"))
    if alpha != 1:
        product = b.binary("mul", product, alpha)
    if beta == 0:
        return product
    base = nb.tensor(args[0], "baddbmm's input")
    return b.op("add", [base if beta == 1 else b.binary("mul", base, beta), product], rows="pointwise")


@method("unflatten")
def _m_unflatten(b, args, kwargs):
    x = nb.tensor(args[0], "unflatten's input")
    dim, sizes = b.normalize_dim(x, arg(args, kwargs, 1, "dim")), list(arg(args, kwargs, 2, "sizes"))
    return b.reshape(x, list(x.shape[:dim]) + sizes + list(x.shape[dim + 1:]))


if hasattr(torch, "unflatten"):
    function(torch.unflatten)(METHODS["unflatten"])


def _like(fill):
    """zeros_like / ones_like / empty_like (fill a number), full_like (fill None: the argument): x's shape, its dtype
    unless one is given."""
    def handler(b, args, kwargs):
        x = nb.tensor(args[0], "a *_like factory's input")
        value = arg(args, kwargs, 1, "fill_value") if fill is None else fill
        return nb.full(b, list(x.shape), value, kwargs.get("dtype") or SPIRE_TO_TORCH[x.dtype])
    return handler


for _fn, _fill in ((torch.zeros_like, 0.0), (torch.empty_like, 0.0), (torch.ones_like, 1.0), (torch.full_like, None)):
    function(_fn)(_like(_fill))


def _new_filled(fill):
    """x.new_zeros(size) / new_ones / new_empty (fill a number), new_full(size, fill_value): x's dtype unless one is
    given."""
    def handler(b, args, kwargs):
        x = nb.tensor(args[0], "a new_* factory's tensor")
        if fill is None:
            sizes, value = list(arg(args, kwargs, 1, "size")), arg(args, kwargs, 2, "fill_value")
        else:
            sizes, value = _sizes(args, 1), fill
        return nb.full(b, sizes, value, kwargs.get("dtype") or SPIRE_TO_TORCH[x.dtype])
    return handler


for _name, _fill in (("new_zeros", 0.0), ("new_empty", 0.0), ("new_ones", 1.0), ("new_full", None)):
    method(_name)(_new_filled(_fill))


# Factories: torch.zeros(*size) / torch.zeros(size), ones, full(size, fill_value) and arange(end) / (start, end[,
# step]) take ATen's arguments too (their ATen overloads share these handlers). The device is spire's.
# zeros and ones are of the default float dtype (full's follows its value).
@function(torch.zeros)
def _f_zeros(b, args, kwargs):
    return nb.full(b, _sizes(args, 0), 0.0, kwargs.get("dtype") or torch.get_default_dtype())


@function(torch.empty)
def _f_empty(b, args, kwargs):
    # Memory PyTorch leaves unwritten: any contents are right, and zeros are the ones spire makes (make_fx records
    # batch norm's unused saved-statistics buffers so).
    return nb.full(b, _sizes(args, 0), 0.0, kwargs.get("dtype") or torch.get_default_dtype())


@function(torch.ones)
def _f_ones(b, args, kwargs):
    return nb.full(b, _sizes(args, 0), 1.0, kwargs.get("dtype") or torch.get_default_dtype())


@function(torch.full)
def _f_full(b, args, kwargs):
    return nb.full(b, arg(args, kwargs, 0, "size"), arg(args, kwargs, 1, "fill_value"), kwargs.get("dtype"))


@function(torch.scalar_tensor)
def _f_scalar_tensor(b, args, kwargs):
    return nb.full(b, [], args[0], kwargs.get("dtype") or torch.get_default_dtype())


@function(torch.tensor)
def _f_tensor(b, args, kwargs):
    # torch.tensor of one Python number (Dynamo records a model's torch.tensor(torch.finfo(t).min, dtype=t.dtype), a
    # masked score's fill): a constant of that dtype, PyTorch's default for the number without one. Data of several
    # values stays in PyTorch.
    data = arg(args, kwargs, 0, "data")
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise Unsupported(f"torch.tensor of {type(data).__name__} (spire maps one Python number)")
    return nb.full(b, [], data, kwargs.get("dtype"))


@function(torch.linspace)
def _f_linspace(b, args, kwargs):
    return nb.linspace(b, arg(args, kwargs, 0, "start"), arg(args, kwargs, 1, "end"), arg(args, kwargs, 2, "steps"),
                       kwargs.get("dtype"))


@function(F.grid_sample)
def _f_grid_sample(b, args, kwargs):
    return nb.grid_sample(b, args[0], arg(args, kwargs, 1, "grid"), arg(args, kwargs, 2, "mode", "bilinear"),
                          arg(args, kwargs, 3, "padding_mode", "zeros"), arg(args, kwargs, 4, "align_corners", None))


@function(torch.grid_sampler, torch.grid_sampler_2d)
def _f_grid_sampler(b, args, kwargs):
    """What F.grid_sample calls, and make_fx's aten.grid_sampler_2d: the modes as integers."""
    mode, padding = arg(args, kwargs, 2, "interpolation_mode"), arg(args, kwargs, 3, "padding_mode")
    return nb.grid_sample(b, args[0], arg(args, kwargs, 1, "grid"), nb.GRID_SAMPLE_MODES.get(mode, str(mode)),
                          nb.GRID_SAMPLE_PADDINGS.get(padding, str(padding)), arg(args, kwargs, 4, "align_corners"))


@function(torch.arange)
def _f_arange(b, args, kwargs):
    if len(args) == 1 and "end" not in kwargs:
        start, end, step = 0, args[0], 1
    else:
        start, end, step = arg(args, kwargs, 0, "start"), arg(args, kwargs, 1, "end"), arg(args, kwargs, 2, "step", 1)
    return nb.arange(b, start, end, step, kwargs.get("dtype"))


@function(F.embedding)
def _f_embedding(b, args, kwargs):
    if arg(args, kwargs, 3, "max_norm", None) is not None:
        raise Unsupported("embedding with max_norm (renormalizes the table in place)")
    return nb.embedding(b, arg(args, kwargs, 1, "weight"), args[0])


@function(torch.embedding)
def _torch_embedding(b, args, kwargs):
    # torch.embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): the options act on the gradient only.
    return nb.embedding(b, args[0], args[1])


@function(F.gelu)
def _f_gelu(b, args, kwargs):
    return nb.gelu(b, args[0], kwargs.get("approximate", "none"))


@function(F.leaky_relu)
@_functions("_C._nn.leaky_relu", "_C._nn.leaky_relu_")
def _f_leaky_relu(b, args, kwargs):
    x = nb.float_tensor(args[0], "leaky_relu's input")
    return b.op("leaky_relu", [x], {"alpha": float(arg(args, kwargs, 1, "negative_slope", 0.01))}, rows="pointwise")


@function(torch.flatten)
@method("flatten")
def _f_flatten(b, args, kwargs):
    return b.flatten(nb.tensor(args[0], "flatten's input"), arg(args, kwargs, 1, "start_dim", 0),
                     arg(args, kwargs, 2, "end_dim", -1))


@function(torch.reshape)
def _f_reshape(b, args, kwargs):
    return b.reshape(nb.tensor(args[0], "reshape's input"), arg(args, kwargs, 1, "shape"))


@function(F.linear, torch._C._nn.linear)
def _f_linear(b, args, kwargs):
    return nb.linear(b, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None))


@function(F.conv2d, torch.conv2d)
def _f_conv2d(b, args, kwargs):
    return nb.conv2d(b, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None),
                     arg(args, kwargs, 3, "stride", 1), arg(args, kwargs, 4, "padding", 0),
                     arg(args, kwargs, 5, "dilation", 1), arg(args, kwargs, 6, "groups", 1))


@function(F.conv3d, torch.conv3d)
def _f_conv3d(b, args, kwargs):
    return nb.conv3d(b, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None),
                     arg(args, kwargs, 3, "stride", 1), arg(args, kwargs, 4, "padding", 0),
                     arg(args, kwargs, 5, "dilation", 1), arg(args, kwargs, 6, "groups", 1))


@function(F.max_pool2d, torch.max_pool2d)
def _f_max_pool2d(b, args, kwargs):
    if arg(args, kwargs, 6, "return_indices", False):
        raise Unsupported("max_pool2d with return_indices")
    return nb.max_pool2d(b, args[0], arg(args, kwargs, 1, "kernel_size"), arg(args, kwargs, 2, "stride", None),
                         arg(args, kwargs, 3, "padding", 0), arg(args, kwargs, 4, "dilation", 1),
                         arg(args, kwargs, 5, "ceil_mode", False))


@function(F.avg_pool2d)
def _f_avg_pool2d(b, args, kwargs):
    return nb.avg_pool2d(b, args[0], arg(args, kwargs, 1, "kernel_size"), arg(args, kwargs, 2, "stride", None),
                         arg(args, kwargs, 3, "padding", 0), arg(args, kwargs, 4, "ceil_mode", False),
                         arg(args, kwargs, 5, "count_include_pad", True), arg(args, kwargs, 6, "divisor_override", None))


@function(F.max_pool3d, torch.max_pool3d)
def _f_max_pool3d(b, args, kwargs):
    if arg(args, kwargs, 6, "return_indices", False):
        raise Unsupported("max_pool3d with return_indices")
    return nb.pool3d(b, "max", args[0], arg(args, kwargs, 1, "kernel_size"), arg(args, kwargs, 2, "stride", None),
                     arg(args, kwargs, 3, "padding", 0), arg(args, kwargs, 4, "dilation", 1),
                     arg(args, kwargs, 5, "ceil_mode", False))


@function(F.avg_pool3d)
@_functions("_C._nn.avg_pool3d")
def _f_avg_pool3d(b, args, kwargs):
    return nb.pool3d(b, "avg", args[0], arg(args, kwargs, 1, "kernel_size"), arg(args, kwargs, 2, "stride", None),
                     arg(args, kwargs, 3, "padding", 0), 1, arg(args, kwargs, 4, "ceil_mode", False),
                     arg(args, kwargs, 5, "count_include_pad", True), arg(args, kwargs, 6, "divisor_override", None))


@function(F.adaptive_avg_pool3d)
@_functions("_C._nn.adaptive_avg_pool3d", "adaptive_avg_pool3d")
def _f_adaptive_avg_pool3d(b, args, kwargs):
    return nb.adaptive_avg_pool3d(b, args[0], arg(args, kwargs, 1, "output_size"))


@function(F.adaptive_avg_pool2d)
@_functions("_C._nn.adaptive_avg_pool2d", "adaptive_avg_pool2d")
def _f_adaptive_avg_pool2d(b, args, kwargs):
    return nb.adaptive_avg_pool2d(b, args[0], arg(args, kwargs, 1, "output_size"))


@function(F.dropout)
def _f_dropout(b, args, kwargs):
    if arg(args, kwargs, 2, "training", True) and arg(args, kwargs, 1, "p", 0.5) > 0:
        raise Unsupported("dropout in training mode (random masks stay in PyTorch)")
    return args[0]


@function(torch.matmul, operator.matmul, torch.mm, torch.bmm)
@method("matmul")
def _f_matmul(b, args, kwargs):
    return nb.matmul(b, args[0], args[1])


@function(torch.cat, torch.concat)
def _f_cat(b, args, kwargs):
    return nb.concat(b, list(arg(args, kwargs, 0, "tensors")), arg(args, kwargs, 1, "dim", 0))


@function(torch.mean)
@method("mean")
def _f_mean(b, args, kwargs):
    return b.reduce("mean", nb.float_tensor(args[0], "mean's input"), arg(args, kwargs, 1, "dim", None),
                    arg(args, kwargs, 2, "keepdim", False))


@function(torch.sum)
@method("sum")
def _f_sum(b, args, kwargs):
    return b.reduce("sum", nb.tensor(args[0], "sum's input"), arg(args, kwargs, 1, "dim", None),
                    arg(args, kwargs, 2, "keepdim", False))


@function(torch.transpose)
@method("transpose")
def _f_transpose(b, args, kwargs):
    return nb.transpose(b, args[0], args[1], args[2])


@function(torch.permute)
def _f_permute(b, args, kwargs):
    return b.permute(args[0], arg(args, kwargs, 1, "dims"))


@function(torch.unsqueeze)
@method("unsqueeze")
def _f_unsqueeze(b, args, kwargs):
    return nb.unsqueeze(b, args[0], arg(args, kwargs, 1, "dim"))


@function(torch.squeeze)
@method("squeeze")
def _f_squeeze(b, args, kwargs):
    return nb.squeeze(b, args[0], arg(args, kwargs, 1, "dim", None))


@function(torch.split)
def _f_split(b, args, kwargs):
    return nb.split(b, args[0], arg(args, kwargs, 1, "split_size_or_sections"), arg(args, kwargs, 2, "dim", 0))


@function(F.pad)
@_functions("_C._nn.pad")
def _f_pad(b, args, kwargs):
    value = arg(args, kwargs, 3, "value", None)
    return nb.pad(b, args[0], arg(args, kwargs, 1, "pad"), arg(args, kwargs, 2, "mode", "constant"),
                  0.0 if value is None else value)


# torch.constant_pad_nd(input, pad, value): F.pad's constant mode, its value third.
function(torch.constant_pad_nd)(
    lambda b, args, kwargs: nb.pad_constant(b, args[0], arg(args, kwargs, 1, "pad"), arg(args, kwargs, 2, "value", 0.0)))


@function(torch.roll)
@method("roll")
def _f_roll(b, args, kwargs):
    return nb.roll(b, args[0], arg(args, kwargs, 1, "shifts"), arg(args, kwargs, 2, "dims", None))


@function(F.normalize)
def _f_normalize(b, args, kwargs):
    return nb.normalize(b, args[0], arg(args, kwargs, 2, "dim", 1), arg(args, kwargs, 1, "p", 2.0),
                        arg(args, kwargs, 3, "eps", 1e-12))


@function(torch.flip)
@method("flip")
def _f_flip(b, args, kwargs):
    return nb.flip(b, args[0], arg(args, kwargs, 1, "dims"))


def padding_op(mode):
    """aten.reflection_pad*d / replication_pad*d (input, padding) and the torch._C._nn functions of those names."""
    return lambda b, args, kwargs: nb.pad(b, args[0], arg(args, kwargs, 1, "padding"), mode)


PADDING_OPS = tuple((f"{kind}_pad{d}d", mode) for kind, mode in (("reflection", "reflect"), ("replication", "replicate"))
                    for d in (1, 2, 3))
for _name, _mode in PADDING_OPS:
    _functions(f"_C._nn.{_name}")(padding_op(_mode))


@function(torch.chunk)
@method("chunk")
def _f_chunk(b, args, kwargs):
    # PyTorch's chunks are ceil(n / chunks) long, the last shorter (and fewer chunks where they run out): a split.
    x, chunks = nb.tensor(args[0], "chunk's input"), arg(args, kwargs, 1, "chunks")
    dim = b.normalize_dim(x, arg(args, kwargs, 2, "dim", 0))
    if not isinstance(chunks, int) or chunks <= 0:
        raise Unsupported(f"chunk into {chunks} parts")
    return nb.split(b, x, -(-x.shape[dim] // chunks), dim)


@function(F.layer_norm)
def _f_layer_norm(b, args, kwargs):
    return nb.layer_norm(b, args[0], arg(args, kwargs, 1, "normalized_shape"), arg(args, kwargs, 2, "weight", None),
                         arg(args, kwargs, 3, "bias", None), arg(args, kwargs, 4, "eps", 1e-5))


@function(F.group_norm)
def _f_group_norm(b, args, kwargs):
    return nb.group_norm(b, args[0], arg(args, kwargs, 1, "num_groups"), arg(args, kwargs, 2, "weight", None),
                         arg(args, kwargs, 3, "bias", None), arg(args, kwargs, 4, "eps", 1e-5))


@function(F.instance_norm)
def _f_instance_norm(b, args, kwargs):
    return _instance_norm(b, args[0], arg(args, kwargs, 1, "running_mean", None),
                          arg(args, kwargs, 2, "running_var", None), arg(args, kwargs, 3, "weight", None),
                          arg(args, kwargs, 4, "bias", None), arg(args, kwargs, 5, "use_input_stats", True),
                          arg(args, kwargs, 7, "eps", 1e-5))


@function(F.elu)
def _f_elu(b, args, kwargs):
    return nb.elu(b, args[0], arg(args, kwargs, 1, "alpha", 1.0))


@function(F.selu, torch.selu)
def _f_selu(b, args, kwargs):
    return nb.elu(b, args[0], SELU_ALPHA, SELU_SCALE)


@function(F.celu, torch.celu)
def _f_celu(b, args, kwargs):
    alpha = arg(args, kwargs, 1, "alpha", 1.0)
    return nb.elu(b, args[0], alpha, 1.0, 1.0 / alpha)


@function(F.softplus)
def _f_softplus(b, args, kwargs):
    return nb.softplus(b, args[0], arg(args, kwargs, 1, "beta", 1.0), arg(args, kwargs, 2, "threshold", 20.0))


@function(F.mish)
def _f_mish(b, args, kwargs):
    return nb.mish(b, args[0])


@function(F.prelu, torch.prelu)
def _f_prelu(b, args, kwargs):
    return nb.prelu(b, args[0], arg(args, kwargs, 1, "weight"))


@function(F.pixel_shuffle, torch.pixel_shuffle)
def _f_pixel_shuffle(b, args, kwargs):
    return nb.pixel_shuffle(b, args[0], arg(args, kwargs, 1, "upscale_factor"))


@function(F.interpolate, F.upsample)
def _f_interpolate(b, args, kwargs):
    return _interpolate(b, args[0], arg(args, kwargs, 1, "size", None), arg(args, kwargs, 2, "scale_factor", None),
                        arg(args, kwargs, 3, "mode", "nearest"), arg(args, kwargs, 4, "align_corners", None),
                        arg(args, kwargs, 5, "recompute_scale_factor", None), arg(args, kwargs, 6, "antialias", False))


@function(F.conv_transpose2d, torch.conv_transpose2d)
def _f_conv_transpose2d(b, args, kwargs):
    return nb.conv_transpose2d(b, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None),
                               arg(args, kwargs, 3, "stride", 1), arg(args, kwargs, 4, "padding", 0),
                               arg(args, kwargs, 5, "output_padding", 0), arg(args, kwargs, 6, "groups", 1),
                               arg(args, kwargs, 7, "dilation", 1))


@function(torch.stack)
def _f_stack(b, args, kwargs):
    return nb.stack(b, list(arg(args, kwargs, 0, "tensors")), arg(args, kwargs, 1, "dim", 0))


def _batch_norm_call(b, x, mean, var, weight, bias, training, eps):
    if training:
        raise Unsupported("batch norm in training mode (batch statistics, running-stat updates)")
    return nb.batch_norm_eval(b, x, weight, bias, mean, var, eps)


@function(F.batch_norm)
def _f_batch_norm(b, args, kwargs):
    return _batch_norm_call(b, args[0], arg(args, kwargs, 1, "running_mean"), arg(args, kwargs, 2, "running_var"),
                            arg(args, kwargs, 3, "weight", None), arg(args, kwargs, 4, "bias", None),
                            arg(args, kwargs, 5, "training", False), arg(args, kwargs, 7, "eps", 1e-5))


@_functions("batch_norm")
def _torch_batch_norm(b, args, kwargs):
    # torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
    return _batch_norm_call(b, args[0], arg(args, kwargs, 3, "running_mean"), arg(args, kwargs, 4, "running_var"),
                            arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias"),
                            arg(args, kwargs, 5, "training"), arg(args, kwargs, 7, "eps"))


@_functions("layer_norm")
def _torch_layer_norm(b, args, kwargs):
    return nb.layer_norm(b, args[0], list(arg(args, kwargs, 1, "normalized_shape")), arg(args, kwargs, 2, "weight", None),
                         arg(args, kwargs, 3, "bias", None), arg(args, kwargs, 4, "eps", 1e-5))


for _path, _op in (("_C._nn.silu", "silu"), ("_C._nn.silu_", "silu"), ("_C._nn.hardswish", "hard_swish"),
                   ("_C._nn.hardswish_", "hard_swish"), ("sigmoid_", "sigmoid"), ("tanh_", "tanh")):
    _functions(_path)(lambda b, args, kwargs, _op=_op: nb.unary(b, _op, args[0]))


@function(F.hardsigmoid)
@_functions("_C._nn.hardsigmoid", "_C._nn.hardsigmoid_")
def _torch_hardsigmoid(b, args, kwargs):
    return nb.hardsigmoid(b, args[0])


@_functions("dropout")
def _torch_dropout(b, args, kwargs):
    # torch.dropout(input, p, train)
    if arg(args, kwargs, 2, "train") and arg(args, kwargs, 1, "p") > 0:
        raise Unsupported("dropout in training mode (random masks stay in PyTorch)")
    return args[0]


@_functions("nn.functional.scaled_dot_product_attention", "_C._nn.scaled_dot_product_attention")
def _f_sdpa(b, args, kwargs):
    return nb.scaled_dot_product_attention(b, args[0], args[1], args[2], arg(args, kwargs, 3, "attn_mask", None),
                                           arg(args, kwargs, 4, "dropout_p", 0.0), arg(args, kwargs, 5, "is_causal", False),
                                           kwargs.get("scale"))


@_functions("_transformer_encoder_layer_fwd")
def _f_encoder_layer(b, args, kwargs):
    return nb.transformer_encoder_layer(b, {name: arg(args, kwargs, i, name, None)
                                            for i, name in enumerate(nb.ENCODER_LAYER_ARGS)})


@_functions("select")
@method("select")
def _f_select(b, args, kwargs):
    return nb.select(b, args[0], arg(args, kwargs, 1, "dim"), arg(args, kwargs, 2, "index"))


@_functions("unbind")
@method("unbind")
def _f_unbind(b, args, kwargs):
    x = nb.tensor(args[0], "unbind's input")
    dim = b.normalize_dim(x, arg(args, kwargs, 1, "dim", 0))
    return tuple(nb.select(b, x, dim, i) for i in range(x.shape[dim]))


@_functions("slice_scatter")
@method("slice_scatter")
def _f_slice_scatter(b, args, kwargs):
    return nb.slice_scatter(b, args[0], arg(args, kwargs, 1, "src"), arg(args, kwargs, 2, "dim", 0),
                            arg(args, kwargs, 3, "start", None), arg(args, kwargs, 4, "end", None),
                            arg(args, kwargs, 5, "step", 1))


@_functions("select_scatter")
@method("select_scatter")
def _f_select_scatter(b, args, kwargs):
    return nb.select_scatter(b, args[0], arg(args, kwargs, 1, "src"), arg(args, kwargs, 2, "dim"),
                             arg(args, kwargs, 3, "index"))


# ---------------------------------------------------------------------------------------------------------------
# tensor methods with arguments of their own

def _sizes(args, start):
    rest = args[start:]
    return list(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)) else list(rest)


@method("view", "reshape")
def _m_view(b, args, kwargs):
    if len(args) == 2 and not isinstance(args[1], (int, list, tuple, torch.Size)):
        raise Unsupported("view as a dtype")
    return b.reshape(nb.tensor(args[0], "view's input"), _sizes(args, 1))


@method("size")
def _m_size(b, args, kwargs):
    x = nb.tensor(args[0], "size's input")
    dim = arg(args, kwargs, 1, "dim", None)
    return torch.Size(x.shape) if dim is None else x.shape[dim]


@method("dim")
def _m_dim(b, args, kwargs):
    return nb.tensor(args[0], "dim's input").rank


@method("contiguous", "clone", "detach")
def _m_identity(b, args, kwargs):
    return nb.tensor(args[0], "the input")


@method("permute")
def _m_permute(b, args, kwargs):
    return b.permute(args[0], _sizes(args, 1))


@method("t")
def _m_t(b, args, kwargs):
    x = nb.tensor(args[0], "t's input")
    return x if x.rank < 2 else nb.transpose(b, x, 0, 1)


@method("split")
def _m_split(b, args, kwargs):
    return nb.split(b, args[0], arg(args, kwargs, 1, "split_size"), arg(args, kwargs, 2, "dim", 0))


@method("expand")
def _m_expand(b, args, kwargs):
    return nb.expand(b, args[0], _sizes(args, 1))


@method("expand_as")
def _m_expand_as(b, args, kwargs):
    return nb.expand(b, args[0], nb.tensor(args[1], "expand_as's other").shape)


@method("repeat")
def _m_repeat(b, args, kwargs):
    return nb.repeat(b, args[0], _sizes(args, 1))


@method("to")
def _m_to(b, args, kwargs):
    """x.to(dtype), x.to(other) (other's dtype); a device (a move) stays in PyTorch."""
    rest = list(args[1:]) + [v for k, v in kwargs.items() if k in ("dtype", "device", "other")]
    dtypes = [v for v in rest if isinstance(v, torch.dtype)] + \
        [SPIRE_TO_TORCH[v.dtype] for v in rest if isinstance(v, SpireValue)]
    if len(dtypes) != 1 or len(rest) != 1:
        raise Unsupported(f".to{tuple(rest)} (spire maps .to(dtype) and .to(tensor))")
    return nb.cast(b, args[0], dtypes[0])


for _name, _dtype in (("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
                      ("bfloat16", torch.bfloat16), ("int", torch.int32), ("long", torch.int64), ("bool", torch.bool)):
    method(_name)(lambda b, args, kwargs, _dtype=_dtype: nb.cast(b, args[0], _dtype))


@method("type_as")
def _m_type_as(b, args, kwargs):
    return nb.cast(b, args[0], SPIRE_TO_TORCH[nb.tensor(args[1], "type_as's other").dtype])


for _name, _op in (("relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("exp", "exp"), ("log", "log"),
                   ("sqrt", "sqrt"), ("neg", "neg"), ("abs", "abs"), ("cos", "cos"), ("sin", "sin")):
    method(_name)(lambda b, args, kwargs, _op=_op: nb.unary(b, _op, args[0]))


# ---------------------------------------------------------------------------------------------------------------
# Ops along one axis: spire's built-in ops of one tensor and an integer `axis` (_spire.ops_along_one_axis()) are what
# PyTorch spells nn.CamelCase(dim), torch.f / F.f(input, dim, dtype=None) and Tensor.f(dim) under the same name, so
# this rule registers them all and such an op needs no handler of its own here.

def _along_axis_module(op):
    def handler(b, m, path, args, kwargs):
        if m.dim is None:
            raise Unsupported(f"{type(m).__name__} without dim")
        return nb.along_axis(b, op, args[0], m.dim)
    return handler


def _along_axis_function(op):
    def handler(b, args, kwargs):
        if kwargs.get("dtype") is not None:
            raise Unsupported(f"{op} with dtype")
        return nb.along_axis(b, op, args[0], arg(args, kwargs, 1, "dim"))
    return handler


for _op in _spire.ops_along_one_axis():
    _module_type = getattr(nn, "".join(word.capitalize() for word in _op.split("_")), None)
    if _module_type is not None:
        module(_module_type)(_along_axis_module(_op))
    function(*(f for f in (getattr(F, _op, None), getattr(torch, _op, None)) if f is not None))(
        _along_axis_function(_op))
    if hasattr(torch.Tensor, _op):
        method(_op)(_along_axis_function(_op))
