"""The building blocks the torch-level and ATen-level handlers share: each maps one PyTorch computation onto spire
graph ops (the same ones frontend/onnx maps ONNX nodes onto) or raises Unsupported saying why not."""
import math

import torch

from .builder import FLOATS, SPIRE_TO_TORCH, TORCH_TO_SPIRE, SpireValue, Unsupported, spire_dtype


def tensor(x, what):
    if not isinstance(x, SpireValue):
        raise Unsupported(f"{what} is {type(x).__name__}, not a tensor")
    return x


def pair(v, what):
    if isinstance(v, int):
        return [v, v]
    if isinstance(v, (list, tuple)) and len(v) == 1:
        return [int(v[0]), int(v[0])]
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return [int(v[0]), int(v[1])]
    raise Unsupported(f"{what} {v!r} is not an int or a pair of ints")


def float_tensor(x, what):
    tensor(x, what)
    if x.dtype not in FLOATS:
        raise Unsupported(f"{what} is {x.dtype}; spire runs this op on float tensors only")
    return x


def named_padding(padding, dilation, kernel):
    """A convolution's padding='valid' or 'same' (an odd reach per axis) as numbers; any other padding as it is."""
    if not isinstance(padding, str):
        return padding
    if padding == "valid":
        return [0] * len(kernel)
    if padding == "same" and all(d * (k - 1) % 2 == 0 for d, k in zip(dilation, kernel)):
        return [d * (k - 1) // 2 for d, k in zip(dilation, kernel)]
    raise Unsupported(f"padding='{padding}' with an even kernel")


def conv2d(b, x, w, bias, stride, padding, dilation, groups):
    float_tensor(x, "conv2d's input")
    if x.rank != 4:
        raise Unsupported(f"conv2d of a rank-{x.rank} input (spire maps 2-D convolutions)")
    stride, dilation = pair(stride, "stride"), pair(dilation, "dilation")
    padding = pair(named_padding(padding, dilation, w.shape[2:]), "padding")
    y = b.op("conv2d", [x, w], {"stride": stride, "padding": padding, "dilation": dilation, "groups": int(groups)})
    return channel_affine(b, y, None, bias)


def triple(v, what):
    """An int or 1 / 3 ints as three (a 3-D window's depth, height, width)."""
    if isinstance(v, int):
        return [v, v, v]
    if isinstance(v, (list, tuple)) and len(v) in (1, 3):
        return [int(t) for t in v] * (3 // len(v))
    raise Unsupported(f"{what} {v!r} is not an int or three ints")


def over_depth_taps(b, x, depth_window, fill, per_tap, combine):
    """A 3-D window op as 2-D ones: for each depth tap kd of the window (kernel, stride, padding, dilation along
    depth), the input's depth slices that tap reads (every output depth's, strided; the depth padded with `fill`)
    folded into the batch, per_tap(images [N * out_depth, C, H, W], kd) its 2-D op; the taps' results combined
    pairwise by the pointwise op `combine`. The work is the 3-D op's own (no slice is taken that no output reads).
    Folding depths into the batch mixes the batch's rows for spire's dynamic batch, so such a segment compiles per
    batch."""
    k, stride, padding, dilation = depth_window
    n, c, depth, h, w = x.shape
    x = pad_constant(b, x, [0, 0, 0, 0, padding, padding], fill)
    out_depth = (depth + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    if out_depth <= 0:
        raise Unsupported(f"a 3-D window {k} deep over a depth of {depth}")
    by_depth = b.permute(x, [0, 2, 1, 3, 4])  # [N, D, C, H, W]: a depth slice is an image
    total = None
    for kd in range(k):
        taps = slice_run(b, by_depth, 1, kd * dilation, out_depth, stride)
        y = per_tap(b.reshape(taps, [n * out_depth, c, h, w]), kd)
        total = y if total is None else b.op(combine, [total, y], rows="pointwise")
    return b.permute(b.reshape(total, [n, out_depth] + list(total.shape[1:])), [0, 2, 1, 3, 4])


def conv3d(b, x, w, bias, stride, padding, dilation, groups):
    """A 3-D convolution: 2-D convolutions over its depth taps (over_depth_taps), each with the weight's slice kd."""
    float_tensor(x, "conv3d's input")
    if x.rank != 5:
        raise Unsupported(f"conv3d of a rank-{x.rank} input")
    k = list(w.shape[2:])
    stride, dilation = triple(stride, "stride"), triple(dilation, "dilation")
    padding = triple(named_padding(padding, dilation, k), "padding")

    def tap(images, kd):
        wk = b.reshape(slice_run(b, w, 2, kd, 1), [w.shape[0], w.shape[1], k[1], k[2]])
        return b.op("conv2d", [images, wk], {"stride": stride[1:], "padding": padding[1:], "dilation": dilation[1:],
                                             "groups": int(groups)})
    y = over_depth_taps(b, x, (k[0], stride[0], padding[0], dilation[0]), 0.0, tap, "add")
    return channel_affine(b, y, None, bias)


def pool3d(b, kind, x, kernel, stride, padding, dilation=1, ceil_mode=False, count_include_pad=True,
           divisor_override=None):
    """MaxPool3d ("max") and AvgPool3d ("avg"): 2-D pools over the window's depth taps (over_depth_taps), the maximum
    of the taps' maxima (depth padded with -inf), or the mean of their means (depth padded with zeros: PyTorch's
    count_include_pad divisor kD kH kW). ceil_mode, count_include_pad=False and divisor_override are refused."""
    float_tensor(x, f"{kind}_pool3d's input")
    if x.rank != 5:
        raise Unsupported(f"{kind}_pool3d of a rank-{x.rank} input")
    if ceil_mode or not count_include_pad or divisor_override:
        raise Unsupported(f"{kind}_pool3d with ceil_mode, count_include_pad=False or divisor_override")
    k = triple(kernel, "kernel_size")
    stride = triple(stride, "stride") if stride not in (None, [], ()) else k
    padding, dilation = triple(padding, "padding"), triple(dilation, "dilation")
    if kind == "max":
        return over_depth_taps(b, x, (k[0], stride[0], padding[0], dilation[0]), float("-inf"),
                               lambda images, kd: max_pool2d(b, images, k[1:], stride[1:], padding[1:], dilation[1:],
                                                             False), "maximum")
    y = over_depth_taps(b, x, (k[0], stride[0], padding[0], 1), 0.0,
                        lambda images, kd: avg_pool2d(b, images, k[1:], stride[1:], padding[1:], False, True, None),
                        "add")
    return b.binary("mul", y, 1.0 / k[0])


def adaptive_avg_pool3d(b, x, output_size):
    """Windows that divide the input evenly: each output the mean of its block (a reshape splitting every axis into
    output x window, then a mean over the windows' axes)."""
    float_tensor(x, "adaptive_avg_pool3d's input")
    if x.rank != 5:
        raise Unsupported(f"adaptive_avg_pool3d of a rank-{x.rank} input")
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
    if len(sizes) not in (1, 3):
        raise Unsupported(f"adaptive_avg_pool3d to {output_size!r}")
    size = [s if o is None else int(o) for o, s in zip(sizes * (3 // len(sizes)), x.shape[2:])]  # None: as it is
    if size == [1, 1, 1]:
        return b.reduce("mean", x, [2, 3, 4], True)
    if any(s % o for s, o in zip(x.shape[2:], size)):
        raise Unsupported(f"adaptive_avg_pool3d of {list(x.shape[2:])} to {list(size)} (unequal windows)")
    split = list(x.shape[:2]) + [t for s, o in zip(x.shape[2:], size) for t in (o, s // o)]
    return b.reshape(b.reduce("mean", b.reshape(x, split), [3, 5, 7], False), list(x.shape[:2]) + list(size))


def linear(b, x, w, bias):
    """y = x W^T + b with W [out, in], as the ONNX importer's Gemm does."""
    float_tensor(x, "linear's input")
    lifted = x.rank == 1
    if lifted:
        x = b.reshape(x, [1, x.shape[0]])
    y = matmul(b, x, b.permute(w, [1, 0]))
    if bias is not None:
        y = b.op("add", [y, bias], rows="pointwise")
    if lifted:
        y = b.reshape(y, [y.shape[-1]])
    return y


def matmul(b, x, y):
    tensor(x, "matmul's first operand")
    tensor(y, "matmul's second operand")
    if x.rank < 2 or y.rank < 2:
        raise Unsupported("matmul of a vector (spire's matmul takes rank >= 2)")
    if y.batched and not (x.batched and x.rank >= 3 and y.rank >= 3):
        b.mixes_rows("matmul with a batched right operand")
    return b.op("matmul", [x, y], rows="first" if x.batched else "pointwise")


def clamp(b, x, lo, hi):
    float_tensor(x, "clamp's input")
    if lo is not None:
        x = b.op("maximum", [x, b.const(lo, x.dtype)], rows="pointwise")
    if hi is not None:
        x = b.op("minimum", [x, b.const(hi, x.dtype)], rows="pointwise")
    return x


def normalize(b, x, dim, p=2.0, eps=1e-12):
    """F.normalize: x / max(||x||_2 along dim, eps)."""
    float_tensor(x, "normalize's input")
    if p != 2:
        raise Unsupported(f"F.normalize with p={p} (spire maps the 2-norm)")
    norm = unary(b, "sqrt", b.reduce("sum", b.op("mul", [x, x], rows="pointwise"), [dim], True))
    return b.op("div", [x, clamp(b, norm, float(eps), None)], rows="pointwise")


def batch_norm_eval(b, x, weight, bias, mean, var, eps):
    """Inference-mode batch norm: (x - mean) * (weight / sqrt(var + eps)) + bias, per channel (dim 1)."""
    float_tensor(x, "batch_norm's input")
    if mean is None or var is None:
        raise Unsupported("batch norm without running statistics uses the batch's (training-mode) statistics")
    c = x.shape[1]
    per_channel = [c] + [1] * (x.rank - 2)
    factor = b.op("sqrt", [b.op("add", [b.reshape(var, per_channel), b.const(eps, x.dtype)], rows="pointwise")])
    y = b.op("sub", [x, b.reshape(mean, per_channel)], rows="pointwise")
    if weight is not None:
        factor = b.op("div", [b.reshape(weight, per_channel), factor], rows="pointwise")
        y = b.op("mul", [y, factor], rows="pointwise")
    else:
        y = b.op("div", [y, factor], rows="pointwise")
    if bias is not None:
        y = b.op("add", [y, b.reshape(bias, per_channel)], rows="pointwise")
    return y


def standardize(b, x, dims, eps):
    """(x - mean) / sqrt(var + eps), mean and (biased) variance over dims: the statistics of every norm layer."""
    mean = b.reduce("mean", x, dims, True)
    centered = b.op("sub", [x, mean], rows="pointwise")
    var = b.reduce("mean", b.op("mul", [centered, centered], rows="pointwise"), dims, True)
    std = b.op("sqrt", [b.op("add", [var, b.const(eps, x.dtype)], rows="pointwise")])
    return b.op("div", [centered, std], rows="pointwise")


def channel_affine(b, y, weight, bias):
    """y * weight + bias with weight and bias [C] per channel (dim 1); either may be None."""
    per_channel = [y.shape[1]] + [1] * (y.rank - 2)
    if weight is not None:
        y = b.op("mul", [y, b.reshape(weight, per_channel)], rows="pointwise")
    if bias is not None:
        y = b.op("add", [y, b.reshape(bias, per_channel)], rows="pointwise")
    return y


def group_norm(b, x, groups, weight, bias, eps):
    """F.group_norm: each sample's channels in `groups` groups, each group standardized over its channels and all
    spatial positions ([N, G, rest], statistics per sample: rows stay independent), then the per-channel affine.
    Instance norm is the case groups = C."""
    float_tensor(x, "group_norm's input")
    if x.rank < 2 or x.shape[1] % groups:
        raise Unsupported(f"group_norm of {list(x.shape)} in {groups} groups")
    y = standardize(b, b.reshape(x, [x.shape[0], groups, -1]), [2], eps)
    return channel_affine(b, b.reshape(y, x.shape), weight, bias)


def batch_stats_norm(b, x, weight, bias, eps):
    """Batch norm with the batch's statistics and no running ones to update (make_fx's record of instance norm:
    native_batch_norm(training=True, running stats None) on [1, N*C, ...]): standardized over every dim but 1."""
    float_tensor(x, "batch_norm's input")
    y = standardize(b, x, [d for d in range(x.rank) if d != 1], eps)
    return channel_affine(b, y, weight, bias)


def layer_norm(b, x, shape, weight, bias, eps):
    float_tensor(x, "layer_norm's input")
    y = standardize(b, x, list(range(x.rank - len(shape), x.rank)), eps)
    if weight is not None:
        y = b.op("mul", [y, weight], rows="pointwise")
    if bias is not None:
        y = b.op("add", [y, bias], rows="pointwise")
    return y


def pool_options(kernel, stride, padding, dilation, ceil_mode, what):
    kernel = pair(kernel, f"{what} kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else pair(stride, f"{what} stride")
    padding = pair(padding, f"{what} padding")
    if dilation is not None and pair(dilation, f"{what} dilation") != [1, 1]:
        raise Unsupported(f"dilated {what}")
    if ceil_mode:
        raise Unsupported(f"{what} with ceil_mode=True")
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise Unsupported(f"{what} padding {padding} wider than half the kernel {kernel}")
    return {"kernel": kernel, "stride": stride, "padding": padding}


def max_pool2d(b, x, kernel, stride, padding, dilation, ceil_mode):
    float_tensor(x, "max_pool2d's input")
    if x.rank != 4:
        raise Unsupported(f"max_pool2d of a rank-{x.rank} input")
    o = pool_options(kernel, stride, padding, dilation, False, "max_pool2d")
    extra = ceil_mode_extra(x.shape[2:], o) if ceil_mode else [0, 0]
    if extra == [0, 0]:
        return b.op("max_pool2d", [x], o)
    # The ceil mode's last, partial windows: the input padded explicitly with the lowest finite value (it never wins
    # over a real element), by the padding before and the padding plus what those windows need after, then pooled
    # without padding.
    pad = o["padding"]
    shape = list(x.shape[:2]) + [x.shape[2 + d] + 2 * pad[d] + extra[d] for d in range(2)]
    lowest = torch.finfo(SPIRE_TO_TORCH[x.dtype]).min
    padded = b.op("pad", [x], {"starts": [0, 0] + pad, "steps": [1] * 4, "shape": shape, "value": float(lowest)})
    return b.op("max_pool2d", [padded], {**o, "padding": [0, 0]})


def ceil_mode_extra(spatial, o):
    """Per spatial dim, what ceil_mode=True adds after the padded input: room for the last window when it starts
    inside the input or its padding before (PyTorch's output-size rule: a window starting in the padding after is
    dropped)."""
    extra = []
    for size, k, s, p in zip(spatial, o["kernel"], o["stride"], o["padding"]):
        padded = size + 2 * p
        out = (padded - k + s - 1) // s + 1
        if (out - 1) * s >= size + p:
            out -= 1
        extra.append(max(0, (out - 1) * s + k - padded))
    return extra


def avg_pool2d(b, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """F.avg_pool2d. spire's avg_pool2d divides each window by kernel's area, padding included, which is PyTorch's
    rule wherever every window lies within the padded input. Elsewhere (ceil_mode's partial last windows,
    count_include_pad=False over padding, divisor_override) the input is padded with zeros explicitly, pooled without
    padding, and each result scaled by area / PyTorch's divisor for its window, a constant."""
    float_tensor(x, "avg_pool2d's input")
    if x.rank != 4:
        raise Unsupported(f"avg_pool2d of a rank-{x.rank} input")
    o = pool_options(kernel, stride, padding, None, False, "avg_pool2d")
    extra = ceil_mode_extra(x.shape[2:], o) if ceil_mode else [0, 0]
    (kh, kw), (sh, sw), (ph, pw) = o["kernel"], o["stride"], o["padding"]
    (h, w) = x.shape[2:]
    out = [(h + 2 * ph + extra[0] - kh) // sh + 1, (w + 2 * pw + extra[1] - kw) // sw + 1]

    def divisor(i, size, k, s, p):
        start = i * s - p
        if divisor_override:
            return None
        if count_include_pad:
            return min(start + k, size + p) - start
        return min(start + k, size) - max(start, 0)
    rows = [divisor(i, h, kh, sh, ph) for i in range(out[0])]
    cols = [divisor(j, w, kw, sw, pw) for j in range(out[1])]
    if divisor_override:
        scale = torch.full(out, kh * kw / float(divisor_override), dtype=torch.float64)
    else:
        if 0 in rows or 0 in cols:
            raise Unsupported("avg_pool2d with a window over padding alone")
        scale = torch.tensor([[kh * kw / float(r * c) for c in cols] for r in rows], dtype=torch.float64)
    if extra == [0, 0] and bool((scale == 1).all()):
        return b.op("avg_pool2d", [x], o)
    shape = list(x.shape[:2]) + [h + 2 * ph + extra[0], w + 2 * pw + extra[1]]
    padded = b.op("pad", [x], {"starts": [0, 0, ph, pw], "steps": [1] * 4, "shape": shape, "value": 0.0})
    y = b.op("avg_pool2d", [padded], {**o, "padding": [0, 0]})
    return b.op("mul", [y, b.const_tensor("avg_pool_divisors", scale.to(SPIRE_TO_TORCH[x.dtype]))], rows="pointwise")


def adaptive_avg_pool2d(b, x, output_size):
    float_tensor(x, "adaptive_avg_pool2d's input")
    if x.rank != 4:
        raise Unsupported(f"adaptive_avg_pool2d of a rank-{x.rank} input")
    h, w = x.shape[2], x.shape[3]
    oh, ow = pair(output_size, "output_size") if output_size is not None else (h, w)
    oh, ow = oh or h, ow or w
    if (oh, ow) == (1, 1):
        return b.reduce("mean", x, [2, 3], True)
    if h % oh or w % ow:
        # Windows of unequal sizes: the average over a window is one per axis, so the pooling maps each axis linearly.
        return resize(b, x, lambda probe, d: torch.nn.functional.adaptive_avg_pool2d(
            probe, [oh, PROBE_OTHER] if d == 0 else [PROBE_OTHER, ow]))
    k = [h // oh, w // ow]
    return b.op("avg_pool2d", [x], {"kernel": k, "stride": k, "padding": [0, 0]})


def hardsigmoid(b, x):
    """F.hardsigmoid: relu6(x + 3) / 6, spire's hard_sigmoid with alpha 1/6 and beta 1/2."""
    return b.op("hard_sigmoid", [float_tensor(x, "hardsigmoid's input")], {"alpha": 1 / 6, "beta": 0.5}, rows="pointwise")


def gelu(b, x, approximate):
    float_tensor(x, "gelu's input")
    if approximate == "tanh":
        return b.op("gelu", [x], rows="pointwise")
    # The exact form: 0.5 x (1 + erf(x / sqrt(2))).
    e = b.op("erf", [b.op("mul", [x, b.const(1 / math.sqrt(2), x.dtype)], rows="pointwise")])
    half_x = b.op("mul", [x, b.const(0.5, x.dtype)], rows="pointwise")
    return b.op("mul", [half_x, b.op("add", [e, b.const(1.0, x.dtype)], rows="pointwise")], rows="pointwise")


def along_axis(b, op, x, dim):
    """An op of one tensor along one axis (torch_ops.py's rule): dim normalized to the op's non-negative axis."""
    float_tensor(x, f"{op}'s input")
    axis = b.normalize_dim(x, dim)
    if x.batched and axis == 0:
        b.mixes_rows(f"{op} over the batch dimension")
    return b.op(op, [x], {"axis": axis}, rows="first")


def unary(b, op, x):
    tensor(x, f"{op}'s input")
    return b.op(op, [x], rows="pointwise")


def concat(b, xs, dim):
    xs = [tensor(x, "a concatenated value") for x in xs]
    if len({x.dtype for x in xs}) > 1:
        raise Unsupported(f"cat of {sorted({x.dtype for x in xs})} (PyTorch promotes; spire does not)")
    axis = b.normalize_dim(xs[0], dim)
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    if 0 in shape:  # the result holds nothing (a detector's boxes when none passed): a zero-size value of its shape
        return b.reshape(xs[0], shape)
    # An input with nothing along the axis adds nothing (a decoder's empty cache [B, heads, 0, d] before its first
    # keys): dropped, so no kernel sees an empty tensor.
    xs = [x for x in xs if x.shape[axis] != 0]
    if len(xs) == 1:
        return xs[0]
    if any(x.batched for x in xs) and (axis == 0 or not all(x.batched for x in xs)):
        b.mixes_rows("concat along or across the batch")
    return b.op("concat", xs, {"axis": axis}, rows="first" if xs[0].batched else "mixes")


def squeeze(b, x, dim):
    if dim is None:
        return b.reshape(x, [s for s in x.shape if s != 1])
    dims = {d % x.rank for d in ([dim] if isinstance(dim, int) else dim)}
    return b.reshape(x, [s for i, s in enumerate(x.shape) if not (i in dims and s == 1)])


def unsqueeze(b, x, dim):
    shape = list(x.shape)
    shape.insert(dim % (x.rank + 1), 1)
    return b.reshape(x, shape)


def transpose(b, x, d0, d1):
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.permute(x, perm)


def expand(b, x, sizes):
    sizes = list(sizes)
    shape = [x.shape[i - (len(sizes) - x.rank)] if s == -1 else s for i, s in enumerate(sizes)]
    if tuple(shape) == x.shape:
        return x
    return b.op("broadcast_to", [x], {"shape": shape}, rows="pointwise")


def split(b, x, sizes, dim):
    """torch.split: consecutive slices along dim of the given sizes (an int: chunks of that size, the last shorter)."""
    tensor(x, "split's input")
    dim = b.normalize_dim(x, dim)
    n = x.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - s) for s in range(0, n, sizes)] if sizes > 0 else []
    if sum(sizes) != n:
        raise Unsupported(f"split sizes {list(sizes)} do not add up to {n}")
    parts, start = [], 0
    for size in sizes:
        parts.append(slice_run(b, x, dim, start, size))
        start += size
    return parts


def slice_run(b, x, dim, start, size, step=1):
    """The `size` elements of x along dim from start, step apart (spire's slice op; dim and start non-negative): what
    split, select, aten.slice and tensor indexing all take."""
    if x.batched and dim == 0:
        b.mixes_rows("a slice along the batch dimension")
    starts, steps, shape = [0] * x.rank, [1] * x.rank, list(x.shape)
    starts[dim], steps[dim], shape[dim] = start, step, size
    return b.op("slice", [x], {"starts": starts, "steps": steps, "shape": shape}, rows="first")


def pad_constant(b, x, pads, value=0.0):
    """F.pad(x, pads, value=value) in constant mode: pads lists (before, after) pairs from the last axis backwards,
    the new elements `value`. Negative pads (crops) are refused."""
    tensor(x, "the padded value")
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) // 2 > x.rank:
        raise Unsupported(f"F.pad with {len(pads)} pads of a rank-{x.rank} tensor")
    if any(p < 0 for p in pads):
        raise Unsupported("F.pad with a negative pad (a crop)")
    if not any(pads):
        return x
    starts, shape = [0] * x.rank, list(x.shape)
    for i in range(len(pads) // 2):
        axis = x.rank - 1 - i
        starts[axis] = pads[2 * i]
        shape[axis] += pads[2 * i] + pads[2 * i + 1]
    if x.batched and shape[0] != x.shape[0]:
        b.mixes_rows("F.pad along the batch dimension")
    return b.op("pad", [x], {"starts": starts, "steps": [1] * x.rank, "shape": shape, "value": float(value)})


def reindex(b, x, axis, indices, hint):
    """x with axis `axis` read at the given positions (a list): a gather by a constant index, what reflect, replicate
    and circular padding and flips are. The identity is x itself."""
    if list(indices) == list(range(x.shape[axis])):
        return x
    if x.batched and axis == 0:
        b.mixes_rows(f"{hint} along the batch dimension")
    index = b.const_tensor(hint, torch.tensor(indices, dtype=torch.int64))
    return b.op("gather", [x, index], {"axis": axis}, rows="first")


# Where output position i (from -before to n + after) of a padded axis of length n reads, per padding mode.
PAD_INDEX = {
    "reflect": lambda i, n: -i if i < 0 else 2 * (n - 1) - i if i >= n else i,   # the edge itself not repeated
    "replicate": lambda i, n: min(max(i, 0), n - 1),
    "circular": lambda i, n: i % n,
}


def pad(b, x, pads, mode="constant", value=0.0):
    """F.pad in every mode: constant (pad_constant), reflect, replicate and circular (each axis reindexed). pads lists
    (before, after) pairs from the last axis backwards, as F.pad's."""
    if mode == "constant":
        return pad_constant(b, x, pads, value)
    tensor(x, "the padded value")
    if mode not in PAD_INDEX:
        raise Unsupported(f"F.pad with mode='{mode}'")
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) // 2 > x.rank - 1:
        raise Unsupported(f"F.pad ({mode}) with {len(pads)} pads of a rank-{x.rank} tensor")
    for i in range(len(pads) // 2):
        axis, before, after = x.rank - 1 - i, pads[2 * i], pads[2 * i + 1]
        n = x.shape[axis]
        if min(before, after) < 0 or (mode != "replicate" and max(before, after) > (n - 1 if mode == "reflect" else n)):
            raise Unsupported(f"F.pad ({mode}) of {before}, {after} along an axis of {n}")
        x = reindex(b, x, axis, [PAD_INDEX[mode](j, n) for j in range(-before, n + after)], f"{mode}_pad")
    return x


def flip(b, x, dims):
    """torch.flip: each of dims read backwards."""
    tensor(x, "the flipped value")
    for d in ([dims] if isinstance(dims, int) else dims):
        d = b.normalize_dim(x, d)
        x = reindex(b, x, d, list(range(x.shape[d] - 1, -1, -1)), "flip")
    return x


def roll(b, x, shifts, dims):
    """torch.roll along the given dims (each element moved `shift` places, wrapping around): two slices and a concat
    per dim. Without dims (a roll of the flattened tensor) it is refused."""
    tensor(x, "the rolled value")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        raise Unsupported("torch.roll without dims (of the flattened tensor)")
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(shifts) != len(dims):
        raise Unsupported(f"torch.roll with {len(shifts)} shifts for {len(dims)} dims")
    for shift, dim in zip(shifts, dims):
        dim = b.normalize_dim(x, dim)
        n = x.shape[dim]
        s = int(shift) % n if n else 0
        if s:
            x = concat(b, [slice_run(b, x, dim, n - s, s), slice_run(b, x, dim, 0, n - s)], dim)
    return x


def slice_dim(b, x, dim, start, end, step):
    """x[..., start:end:step, ...] along dim (aten.slice.Tensor): Python's clamping of start and end, a positive step.
    The whole dimension is x itself (make_fx records x[:, None] as such slices)."""
    tensor(x, "a sliced value")
    dim = b.normalize_dim(x, dim)
    if step is None:
        step = 1
    if not isinstance(step, int) or step <= 0:
        raise Unsupported(f"a slice with step {step} (PyTorch takes positive steps only)")
    start, end, step = slice(start, end, step).indices(x.shape[dim])
    size = len(range(start, end, step))
    if size == x.shape[dim]:
        return x
    if size == 0:
        raise Unsupported("an empty slice (spire keeps zero-size tensors out of its kernels)")
    return slice_run(b, x, dim, start, size, step)


def element(b, x, dim, index):
    """The slice of size 1 at index (negative: from the end) along dim, which stays."""
    n = x.shape[dim]
    if not -n <= index < n:
        raise Unsupported(f"index {index} is out of range for a dimension of size {n}")
    return x if n == 1 else slice_run(b, x, dim, index % n, 1)


def select(b, x, dim, index):
    """x.select(dim, index): the slice of size 1 at index, without that dimension."""
    tensor(x, "select's input")
    dim = b.normalize_dim(x, dim)
    return b.reshape(element(b, x, dim, index), x.shape[:dim] + x.shape[dim + 1:])


def slice_scatter(b, x, src, dim, start, end, step):
    """torch.slice_scatter: x with its slice start:end:step along dim replaced by src (of that slice's shape), what an
    in-place write into a slice of a tensor the graph made becomes (functionalize.py): src placed at its positions
    (pad) and chosen there by a constant mask (where)."""
    tensor(x, "slice_scatter's input")
    tensor(src, "slice_scatter's source")
    dim = b.normalize_dim(x, dim)
    step = 1 if step is None else step
    if not isinstance(step, int) or step <= 0:
        raise Unsupported(f"a slice with step {step} (PyTorch takes positive steps only)")
    start, end, step = slice(start, end, step).indices(x.shape[dim])
    positions = range(start, end, step)
    want = x.shape[:dim] + (len(positions),) + x.shape[dim + 1:]
    if tuple(src.shape) != want or src.dtype != x.dtype:
        raise Unsupported(f"slice_scatter of a {src.dtype}{list(src.shape)} source into a {x.dtype}{list(want)} slice")
    if len(positions) == 0:
        return x
    if len(positions) == x.shape[dim]:
        return src
    if dim == 0 and (x.batched or src.batched):
        b.mixes_rows("a slice_scatter along the batch dimension")
    starts, steps = [0] * x.rank, [1] * x.rank
    starts[dim], steps[dim] = start, step
    placed = b.op("pad", [src], {"starts": starts, "steps": steps, "shape": list(x.shape), "value": 0.0})
    chosen = torch.zeros(x.shape[dim], dtype=torch.bool)
    chosen[start:end:step] = True
    mask = b.const_tensor("slice_scatter_mask", chosen.reshape([-1 if i == dim else 1 for i in range(x.rank)]))
    return b.op("where", [mask, placed, x], rows="pointwise")


def select_scatter(b, x, src, dim, index):
    """torch.select_scatter: x with x.select(dim, index) replaced by src."""
    tensor(x, "select_scatter's input")
    dim = b.normalize_dim(x, dim)
    n = x.shape[dim]
    if not isinstance(index, int) or not -n <= index < n:
        raise Unsupported(f"select_scatter at index {index} of a dimension of size {n}")
    index %= n
    return slice_scatter(b, x, unsqueeze(b, tensor(src, "select_scatter's source"), dim), dim, index, index + 1, 1)


def index(b, x, key):
    """x[key] for basic indexing: ints, slices, None and one Ellipsis (a tensor index, advanced indexing, refused). Each
    int and slice narrows its dimension (slice_dim), then one reshape drops the ints' dimensions and inserts the
    Nones'."""
    tensor(x, "an indexed value")
    if isinstance(key, SpireValue):
        return embedding(b, x, key)  # x[indices] with one integer tensor: the rows of x it names
    items = list(key) if isinstance(key, tuple) else [key]
    for item in items:
        if isinstance(item, bool) or not (isinstance(item, (int, slice)) or item is None or item is Ellipsis):
            raise Unsupported(f"indexing with {type(item).__name__} (spire maps ints, slices, None and ...)")
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    if items.count(Ellipsis) > 1 or consumed > x.rank:
        raise Unsupported(f"index {key!r} for a rank-{x.rank} tensor")
    rest = [slice(None)] * (x.rank - consumed)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = rest
    else:
        items += rest
    y, dim, shape = x, 0, []
    for item in items:
        if item is None:
            shape.append(1)
            continue
        if isinstance(item, slice):
            y = slice_dim(b, y, dim, item.start, item.stop, item.step)
            shape.append(y.shape[dim])
        else:  # the final reshape drops its dimension
            y = element(b, y, dim, item)
        dim += 1
    return b.reshape(y, shape)


def additive_mask(b, mask, dtype, true_masks):
    """An attention mask as a term added to the scores: a float mask as it is; a bool one as 0 or -inf, where True
    means "attend" (scaled_dot_product_attention) or, with true_masks, "masked out" (nn.MultiheadAttention)."""
    tensor(mask, "an attention mask")
    if mask.dtype != "bool":
        if mask.dtype != dtype:
            raise Unsupported(f"a {mask.dtype} attention mask on {dtype} scores")
        return mask
    inf, zero = b.const(float("-inf"), dtype), b.const(0.0, dtype)
    return b.op("where", [mask, inf, zero] if true_masks else [mask, zero, inf], rows="pointwise")


def causal_mask(b, rows, cols, dtype):
    """The scores' causal mask of scaled_dot_product_attention(is_causal=True): 0 where column <= row (aligned at the
    top left, as PyTorch's), else -inf."""
    keep = torch.ones(rows, cols, dtype=torch.bool).tril()
    return b.const_tensor("causal_mask", torch.zeros(rows, cols, dtype=SPIRE_TO_TORCH[dtype]).masked_fill(~keep, float("-inf")))


def attention_probabilities(b, q, k, mask, scale):
    """softmax(q k^T * scale + mask) over the last axis (scale: 1/sqrt(q's last size) unless given)."""
    scale = scale if scale is not None else q.shape[-1] ** -0.5
    scores = b.binary("mul", matmul(b, q, transpose(b, k, -2, -1)), float(scale))
    if mask is not None:
        scores = b.op("add", [scores, mask], rows="pointwise")
    return along_axis(b, "softmax", scores, -1)


def scaled_dot_product_attention(b, q, k, v, mask, dropout_p, is_causal, scale):
    """F.scaled_dot_product_attention: a bool mask keeps where True, a float one is added; is_causal masks the
    columns past each row."""
    q, k, v = (float_tensor(t, "attention's input") for t in (q, k, v))
    if dropout_p:
        raise Unsupported("attention with dropout (random masks stay in PyTorch)")
    if mask is not None and not isinstance(mask, SpireValue):
        raise Unsupported(f"attention with a {type(mask).__name__} mask")
    if is_causal and mask is not None:
        raise Unsupported("attention with both a mask and is_causal (PyTorch refuses it)")
    if is_causal:
        mask = causal_mask(b, q.shape[-2], k.shape[-2], q.dtype)
    elif mask is not None:
        mask = additive_mask(b, mask, q.dtype, true_masks=False)
    return matmul(b, attention_probabilities(b, q, k, mask, scale), v)


def attend_heads(b, q, k, v, heads, mask=None):
    """Multi-head attention of projected [batch, tokens, embed] queries, keys and values: each split into `heads`
    heads ([batch, heads, tokens, embed / heads]), attended, and the heads joined again. `mask`: None, or an additive
    mask broadcast to [batch, heads, queries, keys]. Returns the joined result and the attention probabilities
    [batch, heads, queries, keys] that it multiplied the values by (for a caller that returns them)."""
    def per_head(t):
        batch, tokens, embed = t.shape
        if embed % heads:
            raise Unsupported(f"{embed} features in {heads} heads")
        return b.permute(b.reshape(t, [batch, tokens, heads, embed // heads]), [0, 2, 1, 3])
    probs = attention_probabilities(b, per_head(q), per_head(k), mask, None)
    out = b.permute(matmul(b, probs, per_head(v)), [0, 2, 1, 3])
    return b.reshape(out, list(q.shape[:2]) + [v.shape[2]]), probs


def multi_head_attention(b, query, key, value, heads, weights, biases, out_weight, out_bias, attn_mask, padding,
                         need_weights, average):
    """nn.MultiheadAttention's computation on batch-first [batch, tokens, features] inputs: the q / k / v projections
    (weights and biases, three each), attend_heads, the output projection. Masks as PyTorch's: attn_mask [queries,
    keys] or [batch * heads, queries, keys] and key_padding_mask [batch, keys], each bool (True: masked out) or float
    (added to the scores). Returns (output, weights): the attention probabilities averaged over the heads ([batch,
    queries, keys]), per head with average False, or None without need_weights."""
    for what, t in (("query", query), ("key", key), ("value", value)):
        if float_tensor(t, f"attention's {what}").rank != 3:
            raise Unsupported(f"multi-head attention of an unbatched rank-{t.rank} {what}")
    q, k, v = (linear(b, t, w, bias) for t, w, bias in zip((query, key, value), weights, biases))
    batch, queries, keys = q.shape[0], q.shape[1], k.shape[1]
    mask = None
    if attn_mask is not None:
        mask = additive_mask(b, attn_mask, q.dtype, true_masks=True)
        if mask.shape == (batch * heads, queries, keys):
            mask = b.reshape(mask, [batch, heads, queries, keys])
        elif mask.shape != (queries, keys):
            raise Unsupported(f"multi-head attention's attn_mask of shape {list(mask.shape)}")
    if padding is not None:
        pad = additive_mask(b, padding, q.dtype, true_masks=True)
        if pad.shape != (batch, keys):
            raise Unsupported(f"multi-head attention's key_padding_mask of shape {list(pad.shape)}")
        pad = b.reshape(pad, [batch, 1, 1, keys])
        mask = pad if mask is None else b.op("add", [mask, pad], rows="pointwise")
    joined, probs = attend_heads(b, q, k, v, heads, mask)
    out = linear(b, joined, out_weight, out_bias)
    if not need_weights:
        return out, None
    return out, (b.reduce("mean", probs, [1], False) if average else probs)


ENCODER_LAYER_ARGS = ("src", "embed_dim", "num_heads", "qkv_weight", "qkv_bias", "proj_weight", "proj_bias", "use_gelu",
                      "norm_first", "eps", "norm_weight_1", "norm_bias_1", "norm_weight_2", "norm_bias_2",
                      "ffn_weight_1", "ffn_bias_1", "ffn_weight_2", "ffn_bias_2", "mask", "mask_type")


def transformer_encoder_layer(b, a):
    """nn.TransformerEncoderLayer's fused inference path (torch._transformer_encoder_layer_fwd, which PyTorch takes in
    eval mode under no_grad with batch_first): self-attention over [batch, tokens, embed], then the feed-forward
    block, each with a residual add and a layer norm (after it, or before it with norm_first). `a` maps
    ENCODER_LAYER_ARGS to the converted arguments."""
    x = float_tensor(a["src"], "the encoder layer's input")
    if x.rank != 3:
        raise Unsupported(f"the fused encoder layer on a rank-{x.rank} input (spire maps [batch, tokens, embed])")
    if a.get("mask") is not None:
        raise Unsupported("the fused encoder layer with a mask")
    embed, heads = int(a["embed_dim"]), int(a["num_heads"])

    def norm(v, i):
        return layer_norm(b, v, [embed], a[f"norm_weight_{i}"], a[f"norm_bias_{i}"], float(a["eps"]))

    def attention(v):
        q, k, w = split(b, linear(b, v, a["qkv_weight"], a["qkv_bias"]), embed, -1)
        return linear(b, attend_heads(b, q, k, w, heads)[0], a["proj_weight"], a["proj_bias"])

    def feed_forward(v):
        h = linear(b, v, a["ffn_weight_1"], a["ffn_bias_1"])
        h = gelu(b, h, "none") if a["use_gelu"] else unary(b, "relu", h)
        return linear(b, h, a["ffn_weight_2"], a["ffn_bias_2"])

    def add(p, q):
        return b.op("add", [p, q], rows="pointwise")

    if a["norm_first"]:
        x = add(x, attention(norm(x, 1)))
        return add(x, feed_forward(norm(x, 2)))
    x = norm(add(x, attention(x)), 1)
    return norm(add(x, feed_forward(x)), 2)


# ---- values made from nothing, dtypes, comparisons, logic

def full(b, shape, value, dtype):
    """torch.full / zeros / ones: a constant (dtype None: PyTorch's default for the value)."""
    if dtype is None:
        dtype = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else \
            torch.get_default_dtype()
    return b.const(value, spire_dtype(dtype), [int(s) for s in shape])


# The largest magnitude up to which a dtype holds every integer.
EXACT_INTEGERS = {"f32": 2 ** 24, "f64": 2 ** 53, "f16": 2 ** 11, "bf16": 2 ** 8, "i32": 2 ** 31 - 1,
                  "i64": 2 ** 63 - 1}


def arange(b, start, end, step, dtype):
    """torch.arange, exactly: spire has no such op and its constants are scalar fills, so [0] is doubled as
    concat(a, a + len(a)) until it covers the length, then sliced, scaled by step and moved by start. Integer start,
    end and step only, each value on the way exact in the dtype."""
    values = (start, end, step)
    if not all(isinstance(v, int) or isinstance(v, float) and v.is_integer() for v in values):
        raise Unsupported(f"arange({start}, {end}, {step}) with fractional values (spire builds integer ones exactly)")
    start, end, step = (int(v) for v in values)
    if dtype is None:
        dtype = torch.int64 if all(isinstance(v, int) for v in values) else torch.get_default_dtype()
    dtype = spire_dtype(dtype)
    n = len(range(start, end, step)) if step else 0
    if n == 0 or dtype == "bool":
        raise Unsupported(f"arange({start}, {end}, {step}) of {dtype} (empty, or not numbers)")
    largest = max(2 * n, abs((n - 1) * step), abs(start), abs(start + (n - 1) * step))
    if largest > EXACT_INTEGERS[dtype]:
        raise Unsupported(f"arange up to {largest} in {dtype} (not exact)")
    a = b.const(0, dtype, [1])
    while a.shape[0] < n:
        a = concat(b, [a, b.binary("add", a, a.shape[0])], 0)
    if a.shape[0] > n:
        a = slice_run(b, a, 0, 0, n)
    if step != 1:
        a = b.binary("mul", a, step)
    return a if start == 0 else b.binary("add", a, start)


def cast(b, x, dtype):
    """x.to(dtype): spire's cast (to int truncates, to bool is x != 0, as in PyTorch); the same dtype is x itself."""
    tensor(x, "a cast value")
    to = spire_dtype(dtype)
    return x if to == x.dtype else b.op("cast", [x], {"to": to}, rows="pointwise")


def compare(b, mode, x, y):
    """x < y and the like (mode lt le gt ge eq ne): a bool tensor, the operands of one dtype."""
    return b.op("compare", list(b.operands("a comparison", x, y)), {"mode": mode}, rows="pointwise")


def where(b, cond, x, y):
    """torch.where(cond, x, y): a Python number takes the other operand's dtype."""
    tensor(cond, "where's condition")
    if cond.dtype != "bool":
        raise Unsupported(f"where with a {cond.dtype} condition")
    return b.op("where", [cond, *b.operands("where", x, y)], rows="pointwise")


def logical(b, op, x, y):
    """x & y, x | y of bool tensors, as where (spire has no logical ops): x & y = where(x, y, false), x | y =
    where(x, true, y). Integer bitwise ops are refused."""
    for v in (x, y):
        if not isinstance(v, SpireValue) or v.dtype != "bool":
            raise Unsupported(f"bitwise {op} of a non-bool operand (spire maps it on bool tensors only)")
    if op == "and":
        return b.op("where", [x, y, b.const(0, "bool")], rows="pointwise")
    return b.op("where", [x, b.const(1, "bool"), y], rows="pointwise")


def pow_scalar(b, x, exponent):
    """x ** exponent for a Python number. spire's pow is exp(e log x), NaN for a negative base, where PyTorch's is
    real for an integer exponent: those PyTorch itself computes by products (1, 2, 3, and their reciprocals) and
    0.5 / -0.5 (square roots) map as such; any other integer exponent is refused, a fractional one (NaN for a
    negative base in both) takes pow."""
    tensor(x, "pow's base")
    if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
        raise Unsupported("pow with a tensor exponent")
    if isinstance(exponent, float) and x.dtype not in FLOATS:
        raise Unsupported(f"pow of {x.dtype} by a float (PyTorch promotes; spire does not)")
    e = float(exponent)
    if e in (1.0, 2.0, 3.0):
        y = x
        for _ in range(int(e) - 1):
            y = b.op("mul", [y, x], rows="pointwise")
        return y
    float_tensor(x, f"pow's base (exponent {exponent})")
    if e in (-1.0, -2.0, -3.0):
        return unary(b, "reciprocal", pow_scalar(b, x, -e))
    if e == 0.5:
        return unary(b, "sqrt", x)
    if e == -0.5:
        return rsqrt(b, x)
    if e.is_integer():
        raise Unsupported(f"pow with exponent {exponent} (spire's pow is NaN for a negative base; PyTorch's is not)")
    return b.binary("pow", x, e)


def rsqrt(b, x):
    """1 / sqrt(x): spire has no rsqrt."""
    return unary(b, "reciprocal", unary(b, "sqrt", float_tensor(x, "rsqrt's input")))


def embedding(b, weight, indices):
    """weight[indices] (F.embedding, aten.embedding): a gather along the table's rows, whose result's rows follow
    the indices' (the table is unbatched)."""
    tensor(weight, "the embedding table")
    tensor(indices, "the embedding indices")
    if indices.dtype not in ("i32", "i64"):
        raise Unsupported(f"embedding indices of {indices.dtype}")
    if weight.batched:
        b.mixes_rows("an embedding of a batched table")
    return b.op("gather", [weight, indices], {"axis": 0}, rows=1)


# ---- activations composed of spire's pointwise ops

def elu(b, x, alpha, scale=1.0, input_scale=1.0):
    """F.elu (aten.elu's scale and input_scale too): scale * (x if x > 0 else alpha (exp(input_scale x) - 1)). spire
    has no expm1: exp(x) - 1, whose error near 0 is an ulp of 1 (absolute), not relative."""
    float_tensor(x, "elu's input")
    neg = b.binary("sub", unary(b, "exp", b.binary("mul", x, float(input_scale)) if input_scale != 1 else x), 1.0)
    y = where(b, compare(b, "gt", x, 0.0), x, b.binary("mul", neg, float(alpha)))
    return y if scale == 1 else b.binary("mul", y, float(scale))


def softplus(b, x, beta=1.0, threshold=20.0):
    """F.softplus: x where beta x > threshold, else log(1 + exp(beta x)) / beta (spire's softplus is the stable
    log(1 + exp(x)))."""
    float_tensor(x, "softplus's input")
    bx = x if beta == 1 else b.binary("mul", x, float(beta))
    y = unary(b, "softplus", bx)
    if beta != 1:
        y = b.binary("div", y, float(beta))
    return where(b, compare(b, "gt", bx, float(threshold)), x, y)


def mish(b, x):
    """F.mish: x tanh(softplus(x))."""
    return b.op("mul", [x, unary(b, "tanh", softplus(b, x))], rows="pointwise")


def prelu(b, x, weight):
    """F.prelu: x where x > 0, else weight x, the weight one value or one per channel (dim 1)."""
    float_tensor(x, "prelu's input")
    tensor(weight, "prelu's weight")
    n = 1
    for s in weight.shape:
        n *= s
    if n == 1:
        w = b.reshape(weight, [1] * x.rank)
    elif x.rank >= 2 and n == x.shape[1]:
        w = b.reshape(weight, [n] + [1] * (x.rank - 2))
    else:
        raise Unsupported(f"prelu of {list(x.shape)} with {n} weights")
    return where(b, compare(b, "gt", x, 0.0), x, b.op("mul", [x, w], rows="pointwise"))


# ---- layout: pixel shuffle, resizing, stacking

def pixel_shuffle(b, x, r):
    """F.pixel_shuffle: [N, C r r, H, W] -> [N, C, H r, W r], out[n, c, h r + i, w r + j] = x[n, c r r + i r + j, h, w]."""
    tensor(x, "pixel_shuffle's input")
    r = int(r)
    if x.rank != 4 or x.shape[1] % (r * r):
        raise Unsupported(f"pixel_shuffle of {list(x.shape)} by {r}")
    n, c, h, w = x.shape
    y = b.permute(b.reshape(x, [n, c // (r * r), r, r, h, w]), [0, 1, 4, 2, 5, 3])
    return b.reshape(y, [n, c // (r * r), h * r, w * r])


# The length of a probe's other spatial axes (resize): 2, not 1, since some of PyTorch's kernels treat an axis of
# length 1 as a special case: on torch 2.11 an antialiased bilinear resize of 5x7 to 3x4 composed from probes with
# other axes of length 1 was off by 0.95 (of values near 1), and right (1e-16) with length 2 (torch 1.13: right both ways).
PROBE_OTHER = 2


def resize(b, x, axis_call):
    """Every interpolation PyTorch has (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area, with
    align_corners, scales or antialias) maps each spatial axis of the input linearly onto the same axis of the output,
    one axis independently of the others: out = W_d in along axis d, W_d [out, in]. W_d is what PyTorch's own op
    computes: axis_call(probe, d) is the caller's op (F.interpolate, an ATen upsample overload) with axis d resized as
    the call resizes it and each other axis, PROBE_OTHER long, kept as it is, run on the basis of axis d (a float64
    identity, the same along the other axes), so its coefficients, its coordinate rule and its rounding of the output
    size are PyTorch's. Each axis W_d changes is then a product with W_d^T, a constant (as the ONNX importer maps
    Resize); where every W_d repeats each element a whole number of times (nearest upsampling by whole factors), the
    repetition is a broadcast instead."""
    float_tensor(x, "the resized input")
    spatial = list(x.shape[2:])
    if not spatial:
        raise Unsupported("resizing a rank-2 input")
    maps = []
    for d, size in enumerate(spatial):
        others = [size if i == d else PROBE_OTHER for i in range(len(spatial))]
        basis = torch.eye(size, dtype=torch.float64).reshape([1, size] + [size if i == d else 1 for i in range(len(spatial))])
        try:
            got = axis_call(basis.expand([1, size] + others).contiguous(), d)
        except (RuntimeError, ValueError, TypeError, NotImplementedError) as e:
            raise Unsupported(f"PyTorch's resize of spatial axis {d} alone failed: {e}")
        if tuple(got.shape[:2]) != (1, size) or any(got.shape[2 + i] != PROBE_OTHER for i in range(len(spatial)) if i != d):
            raise Unsupported(f"resizing axis {d} alone gave {list(got.shape)}")
        out = got.shape[2 + d]
        if out * size > (1 << 24):
            raise Unsupported(f"resizing an axis from {size} to {out} takes a {out}x{size} matrix, past 2^24 elements")
        # W_d^T: row j is where input element j goes (read at the other axes' first element)
        maps.append(got[(0, slice(None)) + tuple(slice(None) if i == d else 0 for i in range(len(spatial)))])
    factors = [m.shape[1] // m.shape[0] for m in maps]
    if all(m.shape[1] == f * m.shape[0] and torch.equal(m, torch.eye(m.shape[0], dtype=m.dtype).repeat_interleave(f, 1))
           for m, f in zip(maps, factors)):
        lead = list(x.shape[:2])
        interleaved = lead + [v for s in spatial for v in (s, 1)]
        widened = lead + [v for s, f in zip(spatial, factors) for v in (s, f)]
        y = expand(b, b.reshape(x, interleaved), widened)
        return b.reshape(y, lead + [s * f for s, f in zip(spatial, factors)])
    y = x
    for d in reversed(range(len(spatial))):
        m = maps[d]
        if m.shape[0] == m.shape[1] and torch.equal(m, torch.eye(m.shape[0], dtype=m.dtype)):
            continue
        axis = 2 + d
        swap = list(range(x.rank))
        swap[axis], swap[-1] = swap[-1], swap[axis]
        w = b.const_tensor("resize", m.to(SPIRE_TO_TORCH[x.dtype]))
        y = b.permute(b.op("matmul", [b.permute(y, swap), w], rows="first"), swap)
    return y


def interpolate_axes(spatial, size, scale_factor, recompute_scale_factor):
    """F.interpolate's (and nn.Upsample's) size or scale_factor as (size, scale) per spatial axis: the size to make
    and the scale PyTorch's kernel maps coordinates by (None: in / out), as F.interpolate computes them."""
    n = len(spatial)
    if (size is None) == (scale_factor is None):
        raise Unsupported("interpolate needs exactly one of size and scale_factor")
    if size is not None:
        sizes = [int(size)] * n if isinstance(size, int) else [int(s) for s in size]
        if len(sizes) != n:
            raise Unsupported(f"{len(sizes)} sizes for {n} spatial axes")
        return [(s, None) for s in sizes]
    scales = [float(scale_factor)] * n if isinstance(scale_factor, (int, float)) else [float(s) for s in scale_factor]
    if len(scales) != n:
        raise Unsupported(f"{len(scales)} scale factors for {n} spatial axes")
    sizes = [math.floor(float(i) * s) for i, s in zip(spatial, scales)]
    return [(o, None if recompute_scale_factor else s) for o, s in zip(sizes, scales)]


def stack(b, xs, dim):
    """torch.stack: each tensor with a new axis at dim, concatenated along it."""
    xs = [tensor(x, "a stacked value") for x in xs]
    if not xs:
        raise Unsupported("stack of nothing")
    dim = dim % (xs[0].rank + 1)
    return concat(b, [unsqueeze(b, x, dim) for x in xs], dim)


def repeat(b, x, repeats):
    """x.repeat(*repeats): the tensor tiled, as reshape to [1, s] pairs + broadcast_to [r, s] + reshape."""
    tensor(x, "the repeated value")
    repeats = [int(r) for r in repeats]
    if len(repeats) < x.rank or any(r < 1 for r in repeats):
        raise Unsupported(f"repeat {repeats} of a rank-{x.rank} tensor")
    shape = [1] * (len(repeats) - x.rank) + list(x.shape)
    y = b.reshape(x, [v for s in shape for v in (1, s)])
    y = expand(b, y, [v for r, s in zip(repeats, shape) for v in (r, s)])
    return b.reshape(y, [r * s for r, s in zip(repeats, shape)])


def conv_transpose2d(b, x, w, bias, stride, padding, output_padding, groups, dilation):
    """F.conv_transpose2d: the adjoint of conv2d with respect to its input (spire's conv2d_grad_input, as the ONNX
    importer maps ConvTranspose), the transposed convolution's weight [Cin, Cout / groups, kh, kw] being that
    conv2d's. Its result is the conv2d input of extent (in - 1) stride - 2 padding + dilation (k - 1) + 1 +
    output_padding, whose conv2d result has x's extent while output_padding < stride (the extra rows, reached by no
    tap, are zeros, as in PyTorch); a larger output_padding is refused."""
    float_tensor(x, "conv_transpose2d's input")
    if x.rank != 4:
        raise Unsupported(f"conv_transpose2d of a rank-{x.rank} input")
    stride, padding, dilation = pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation")
    output_padding = pair(output_padding, "output_padding")
    if any(op >= s for op, s in zip(output_padding, stride)):
        raise Unsupported(f"output_padding {output_padding} not below the stride {stride}")
    k = w.shape[2:]
    out = [(x.shape[2 + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k[d] - 1) + 1 + output_padding[d]
           for d in range(2)]
    if any(o < 1 for o in out):
        raise Unsupported(f"conv_transpose2d with an empty result {out}")
    shape = [x.shape[0], w.shape[1] * int(groups)] + out
    y = b.op("conv2d_grad_input", [x, w], {"stride": stride, "padding": padding, "dilation": dilation,
                                            "groups": int(groups), "input_shape": shape})
    return channel_affine(b, y, None, bias)


# aten.grid_sampler_2d's integer modes, as F.grid_sample's names.
GRID_SAMPLE_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
GRID_SAMPLE_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sample(b, x, grid, mode, padding, align_corners):
    """F.grid_sample, built by ir/graph/composites/grid_sample.h as the ONNX importer's GridSample is. Each image's
    first row in the input seen as rows is a constant of the call's shape (a zero-padded batch's added images read
    their own rows): so rows stay independent."""
    x, grid = tensor(x, "grid_sample's input"), tensor(grid, "grid_sample's grid")
    if x.rank != 4:
        raise Unsupported(f"grid_sample of a {x.rank}-D input (spire samples [N, C, H, W])")
    n, _, h, w = x.shape
    starts = b.const_tensor("grid_sample.images", (torch.arange(n, dtype=torch.float32) * (h * w)).reshape(n, 1, 1))
    try:
        vid = b.g.grid_sample(x.id, grid.id, starts.id, mode, padding, bool(align_corners))
    except ValueError as e:
        raise Unsupported(f"grid_sample: {e}")
    return b._wrap(vid, x.batched or grid.batched)


def linspace(b, start, end, steps, dtype):
    """torch.linspace: a constant of the call (its values are PyTorch's own, computed here)."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end, steps)):
        raise Unsupported("linspace of values that are not numbers")
    values = torch.linspace(start, end, steps, dtype=dtype)
    if values.dtype not in TORCH_TO_SPIRE:
        raise Unsupported(f"linspace of {values.dtype}")
    return b.const_tensor("linspace", values)
