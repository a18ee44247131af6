"""Handlers for functions of libraries spire does not import, keyed by their qualified names (torch_ops's
FUNCTIONS_BY_NAME): torchvision's helpers that torch.fx.wrap keeps as calls under symbolic_trace, so that a model
using them (Swin, the EfficientNets' stochastic depth) runs as one spire segment. Each is written with nn_blocks, as
the library computes it in evaluation."""
import math

import torch

from . import nn_blocks as nb
from .builder import SPIRE_TO_TORCH, Unsupported
from .torch_ops import arg, function, function_named


@function_named("torchvision.ops.stochastic_depth.stochastic_depth")
def _stochastic_depth(b, args, kwargs):
    # stochastic_depth(input, p, mode, training): the input itself in evaluation (and with p = 0); in training it
    # zeroes random rows, which stays in PyTorch.
    if arg(args, kwargs, 3, "training", True) and arg(args, kwargs, 1, "p") > 0:
        raise Unsupported("stochastic_depth in training mode (random rows stay in PyTorch)")
    return nb.tensor(args[0], "stochastic_depth's input")


@function_named("torchvision.utils._log_api_usage_once")
def _log_api_usage(b, args, kwargs):
    # torchvision's usage logging (Swin's blocks call it in forward): no tensor work. Dynamo inlines it and records
    # the torch._C function it calls, below.
    return None


if hasattr(torch._C, "_log_api_usage_once"):
    function(torch._C._log_api_usage_once)(_log_api_usage)


@function_named("torchvision.models.swin_transformer._patch_merging_pad")
def _patch_merging_pad(b, args, kwargs):
    # x [..., H, W, C] padded to even H and W, then its four interleaved quarters side by side along C.
    x = nb.float_tensor(args[0], "patch merging's input")
    h, w = x.shape[-3], x.shape[-2]
    x = nb.pad_constant(b, x, [0, 0, 0, w % 2, 0, h % 2])
    rows, cols = x.rank - 3, x.rank - 2
    half_h, half_w = x.shape[rows] // 2, x.shape[cols] // 2

    def quarter(r, c):
        return nb.slice_run(b, nb.slice_run(b, x, rows, r, half_h, 2), cols, c, half_w, 2)
    return nb.concat(b, [quarter(0, 0), quarter(1, 0), quarter(0, 1), quarter(1, 1)], -1)


@function_named("torchvision.models.swin_transformer._get_relative_position_bias")
def _relative_position_bias(b, args, kwargs):
    # table[index] (a gather of the table's rows), [N, N, heads] -> [1, heads, N, N].
    table, index, window = args[0], args[1], arg(args, kwargs, 2, "window_size")
    n = int(window[0]) * int(window[1])
    bias = b.reshape(nb.embedding(b, table, b.reshape(nb.tensor(index, "the position index"), [-1])), [n, n, -1])
    return nb.unsqueeze(b, b.permute(bias, [2, 0, 1]), 0)


def shifted_window_mask(padded, window, shift, dtype):
    """Swin's mask of a shifted window attention, [windows, N, N]: 0 between positions of one region of the shifted
    image, -100 between positions of different regions (the regions the roll brought together). Computed here from
    the shapes alone, as torchvision computes it."""
    def labels(length, w, s):
        # Along one axis: region 0 up to the last window, 1 from there to the shift, 2 for the shifted-in part.
        lab = torch.zeros(length, dtype=torch.int64)
        lab[length - w:length - s] = 1
        lab[length - s:] = 2
        return lab
    regions = labels(padded[0], window[0], shift[0])[:, None] * 3 + labels(padded[1], window[1], shift[1])[None, :]
    regions = regions.reshape(padded[0] // window[0], window[0], padded[1] // window[1], window[1])
    regions = regions.permute(0, 2, 1, 3).reshape(-1, window[0] * window[1])
    same = regions[:, None, :] == regions[:, :, None]
    return torch.zeros(same.shape, dtype=SPIRE_TO_TORCH[dtype]).masked_fill(~same, -100.0)


SWIN_ARGS = (("input", None), ("qkv_weight", None), ("proj_weight", None), ("relative_position_bias", None),
             ("window_size", None), ("num_heads", None), ("shift_size", None), ("attention_dropout", 0.0),
             ("dropout", 0.0), ("qkv_bias", None), ("proj_bias", None), ("logit_scale", None), ("training", True))


@function_named("torchvision.models.swin_transformer.shifted_window_attention")
def _shifted_window_attention(b, args, kwargs):
    """Swin's (v1) window attention over [B, H, W, C]: the input padded to whole windows and rolled by the shift, cut
    into windows, multi-head attention within each (plus the relative position bias, and the shift's mask), and put
    back; Swin v2's cosine attention with logit_scale. Dropout stays in PyTorch."""
    a = {name: arg(args, kwargs, i, name, default) for i, (name, default) in enumerate(SWIN_ARGS)}
    if a["attention_dropout"] or a["dropout"]:
        raise Unsupported("window attention with dropout (torchvision applies it whatever the mode)")
    x = nb.float_tensor(a["input"], "window attention's input")
    if x.rank != 4:
        raise Unsupported(f"window attention of a rank-{x.rank} input")
    batch, h, w, c = x.shape
    window, heads = [int(v) for v in a["window_size"]], int(a["num_heads"])
    x = nb.pad_constant(b, x, [0, 0, 0, (window[1] - w % window[1]) % window[1], 0, (window[0] - h % window[0]) % window[0]])
    padded = [x.shape[1], x.shape[2]]
    shift = [0 if window[i] >= padded[i] else int(a["shift_size"][i]) for i in range(2)]
    shifted = sum(shift) > 0
    if shifted:
        x = nb.roll(b, x, [-shift[0], -shift[1]], [1, 2])
    grid = [padded[0] // window[0], padded[1] // window[1]]
    windows, n = grid[0] * grid[1], window[0] * window[1]
    x = b.reshape(b.permute(b.reshape(x, [batch, grid[0], window[0], grid[1], window[1], c]), [0, 1, 3, 2, 4, 5]),
                  [batch * windows, n, c])
    qkv_bias, cosine = a["qkv_bias"], a["logit_scale"] is not None
    if cosine and qkv_bias is not None:  # v2: the keys have no bias
        third = qkv_bias.shape[0] // 3
        qkv_bias = nb.concat(b, [nb.slice_run(b, qkv_bias, 0, 0, third), b.const(0.0, qkv_bias.dtype, [third]),
                                 nb.slice_run(b, qkv_bias, 0, 2 * third, third)], 0)
    qkv = nb.linear(b, x, a["qkv_weight"], qkv_bias)
    qkv = b.permute(b.reshape(qkv, [batch * windows, n, 3, heads, c // heads]), [2, 0, 3, 1, 4])
    q, k, v = (nb.select(b, qkv, 0, i) for i in range(3))
    if cosine:
        # Swin v2: cosine similarity of the heads' queries and keys, scaled by exp(min(logit_scale, log 100)).
        attn = nb.matmul(b, nb.normalize(b, q, -1), nb.transpose(b, nb.normalize(b, k, -1), -2, -1))
        scale = nb.unary(b, "exp", nb.clamp(b, nb.tensor(a["logit_scale"], "logit_scale"), None, math.log(100.0)))
        attn = b.op("mul", [attn, scale], rows="pointwise")
    else:
        attn = nb.matmul(b, b.binary("mul", q, float((c // heads) ** -0.5)), nb.transpose(b, k, -2, -1))
    attn = b.op("add", [attn, nb.tensor(a["relative_position_bias"], "the relative position bias")], rows="pointwise")
    if shifted:
        mask = b.const_tensor("swin_mask", shifted_window_mask(padded, window, shift, attn.dtype))
        attn = b.reshape(attn, [batch, windows, heads, n, n])
        attn = b.op("add", [attn, b.reshape(mask, [1, windows, 1, n, n])], rows="pointwise")
        attn = b.reshape(attn, [batch * windows, heads, n, n])
    x = nb.matmul(b, nb.along_axis(b, "softmax", attn, -1), v)
    x = nb.linear(b, b.reshape(nb.transpose(b, x, 1, 2), [batch * windows, n, c]), a["proj_weight"], a["proj_bias"])
    x = b.reshape(b.permute(b.reshape(x, [batch, grid[0], grid[1], window[0], window[1], c]), [0, 1, 3, 2, 4, 5]),
                  [batch] + padded + [c])
    if shifted:
        x = nb.roll(b, x, shift, [1, 2])
    return nb.slice_run(b, nb.slice_run(b, x, 1, 0, h), 2, 0, w)
