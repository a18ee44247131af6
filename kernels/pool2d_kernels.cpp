#include "kernels/pool2d_kernels.h"
#include "base/sliding_window.h"
#include "kernels/workgroup_reduce.h"

#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

std::string Pool2dShape::text() const {
  return fmt::format("n{}_c{}_h{}_w{}_k{}x{}_s{}x{}_p{}x{}", n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w);
}

Pool2dShape pool2d_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& kernel,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("pool2d over [{}] with kernel [{}], stride [{}], padding [{}]: {}",
                                            dims_text(x), dims_text(kernel), dims_text(stride), dims_text(padding), why));
  };
  if (x.size() != 4) fail("the input must have rank 4");
  if (kernel.size() != 2 || stride.size() != 2 || padding.size() != 2) fail("kernel, stride and padding need 2 entries");
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0) fail("kernel and stride must be >= 1 and padding >= 0");
    // Also guarantees that every window holds at least one real element (a max always exists).
    if (2 * padding[i] > kernel[i]) fail("padding must be at most half the kernel");
  }
  Pool2dShape s;
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  s.kh = kernel[0], s.kw = kernel[1];
  s.stride_h = stride[0], s.stride_w = stride[1];
  s.pad_h = padding[0], s.pad_w = padding[1];
  s.ho = sliding_window_positions(s.h, s.kh, s.stride_h, s.pad_h);
  s.wo = sliding_window_positions(s.w, s.kw, s.stride_w, s.pad_w);
  if (s.ho < 0 || s.wo < 0) fail("the window does not fit the padded input");
  return s;
}

namespace {

// Where result element o's window lies: the first input element of its plane, and its first row and column (i32;
// negative where the window starts in the padding).
struct WindowOf {
  Val plane_base, h0, w0;
};
WindowOf window_of(const Pool2dShape& s, Val o) {
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  Val wo = o % Wo, ho = (o / Wo) % Ho, nc = o / (Ho * Wo);
  return {nc * uint32_t(s.h * s.w), cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h),
          cast(wo, Type::I32) * int32_t(s.stride_w) - int32_t(s.pad_w)};
}

void check_sizes(const Pool2dShape& s) {
  index_u32(s.n * s.c * s.h * s.w, "pool2d input elements");
  index_u32(s.n * s.c * s.ho * s.wo, "pool2d output elements");
}

// One element of a window: its index within the input plane (clamped into range) and whether it is a real
// element (invalid Val: statically always real, when there is no padding).
struct WindowTap {
  Val ok;
  Val plane_index;
  Val position;  // i32: the element's row-major position in the kh x kw window (max_pool2d_argmax's numbering)
};

// Calls tap() for every element of the window whose top-left corner is (h0, w0) (signed, may be in the
// padding), in row-major window order: unrolled in C++ for small windows, kernel loops otherwise.
void for_each_window_tap(KernelBuilder& kb, const Pool2dShape& s, Val h0, Val w0,
                         const std::function<void(const WindowTap&)>& tap) {
  auto emit = [&](Val r, Val c) {
    Val hi = h0 + r, wi = w0 + c;
    Val ok;
    Val h_idx = cast(hi, Type::U32), w_idx = cast(wi, Type::U32);
    if (s.pad_h > 0) {
      ok = (hi >= 0) & (hi < int32_t(s.h));
      h_idx = cast(min(max(hi, 0), int32_t(s.h - 1)), Type::U32);
    }
    if (s.pad_w > 0) {
      Val w_ok = (wi >= 0) & (wi < int32_t(s.w));
      ok = ok.valid() ? ok & w_ok : w_ok;
      w_idx = cast(min(max(wi, 0), int32_t(s.w - 1)), Type::U32);
    }
    tap(WindowTap{ok, h_idx * uint32_t(s.w) + w_idx, r * int32_t(s.kw) + c});
  };
  if (s.kh * s.kw <= kMaxUnrolledTaps) {
    for (int64_t r = 0; r < s.kh; ++r)
      for (int64_t c = 0; c < s.kw; ++c) emit(kb.i32(int32_t(r)), kb.i32(int32_t(c)));
  } else {
    kb.for_(kb.i32(0), kb.i32(int32_t(s.kh)), [&](Val r) {
      kb.for_(kb.i32(0), kb.i32(int32_t(s.kw)), [&](Val c) { emit(r, c); });
    });
  }
}

// Output windows that contain input coordinate i along one axis: [lo, hi) over the output axis. Window o
// covers [o*stride - pad, o*stride - pad + k), so o*stride lies in (i + pad - k, i + pad].
std::pair<Val, Val> covering_windows(Val i, int64_t k, int64_t stride, int64_t pad, int64_t out) {
  Val lo = (max(i + int32_t(pad - k + 1), 0) + int32_t(stride - 1)) / int32_t(stride);
  Val hi = min((i + int32_t(pad)) / int32_t(stride) + 1, int32_t(out));
  return {lo, hi};
}

// The first maximal element of a window in row-major order, as PyTorch picks it: a later element replaces
// the best only when strictly greater, or NaN (NaN propagates). The first real element is always taken.
struct WindowMax {
  Var best;
  Var best_index;     // plane index of the winner (i32), -1 before the first real element
  Var best_position;  // its position in the window (i32, WindowTap::position)
};

WindowMax window_max(KernelBuilder& kb, const Pool2dShape& s, const std::function<Val(Val)>& x_at, Val plane_base,
                     Val h0, Val w0, Type t) {
  WindowMax m{kb.var("best", kb.constant(t, -std::numeric_limits<double>::infinity())), kb.var("best_index", kb.i32(-1)),
              kb.var("best_position", kb.i32(0))};
  for_each_window_tap(kb, s, h0, w0, [&](const WindowTap& tap) {
    Val v = x_at(plane_base + tap.plane_index);
    Val take = takes_window_max(v, m.best.get()) | (m.best_index.get() < 0);
    if (tap.ok.valid()) take = take & tap.ok;
    m.best = select(take, v, m.best.get());
    m.best_index = select(take, cast(tap.plane_index, Type::I32), m.best_index.get());
    m.best_position = select(take, tap.position, m.best_position.get());
  });
  return m;
}

}  // namespace

Val takes_window_max(Val v, Val best) { return (v > best) | (v != v); }

Val relu_masked(KernelBuilder& kb, Val g, Val pooled, Type t) {
  return select(pooled <= kb.constant(t, 0), kb.constant(t, 0), g);
}

bool pool2d_windows_tile(const Pool2dShape& s) {
  return s.stride_h == s.kh && s.stride_w == s.kw && s.pad_h == 0 && s.pad_w == 0 && s.h == s.ho * s.kh &&
         s.w == s.wo * s.kw && s.kh * s.kw <= kMaxUnrolledTaps;
}

std::vector<Val> max_pool2d_window_grads(KernelBuilder& kb, const Pool2dShape& s, const std::function<Val(Val)>& x_at,
                                         Val plane_base, Val h0, Val w0, Val g, Type t, bool relu_mask) {
  if (!pool2d_windows_tile(s))
    throw std::invalid_argument(fmt::format("max_pool2d_grad over {}: a window's gradient is computed alone only where "
                                            "the windows tile the input", s.text()));
  WindowMax m = window_max(kb, s, x_at, plane_base, h0, w0, t);
  // A NaN maximum passes the gradient, as relu_grad does at a NaN input (PyTorch's threshold_backward).
  Val pass = relu_mask ? relu_masked(kb, g, m.best.get(), t) : g;
  std::vector<Val> out;
  for_each_window_tap(kb, s, h0, w0, [&](const WindowTap& tap) {
    out.push_back(select(cast(tap.plane_index, Type::I32) == m.best_index.get(), pass, kb.constant(t, 0)));
  });
  return out;
}

namespace {

// One invocation per window, storing its maximum (values) and/or its position (positions).
HeavyKernel window_maxima_kernel(const Pool2dShape& s, Type t, bool values, bool positions) {
  std::string name = std::string(values ? "max_pool2d_" : "max_pool2d_argmax_") + s.text() + "_" +
                     float_suffix(t, "max_pool2d") + (values && positions ? "_argmax" : "");
  check_sizes(s);
  const uint32_t total = uint32_t(s.n * s.c * s.ho * s.wo);
  if (total == 0) return empty_result(name);
  KernelBuilder kb(name, kElementWorkgroup);
  Buf x = kb.buffer("x", t, Access::Read);
  std::optional<Buf> y, argmax;
  if (values) y = kb.buffer("y", t, Access::Write);
  if (positions) argmax = kb.buffer("argmax", Type::I32, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    const auto [plane_base, h0, w0] = window_of(s, o);
    WindowMax m = window_max(kb, s, [&](Val i) { return x[i]; }, plane_base, h0, w0, t);
    if (y) (*y)[o] = m.best.get();
    if (argmax) (*argmax)[o] = m.best_position.get();
  });
  return {kb.finish(), groups_for_threads(total, kElementWorkgroup)};
}

}  // namespace

HeavyKernel max_pool2d_kernel(const Pool2dShape& s, Type t, bool with_argmax) {
  return window_maxima_kernel(s, t, true, with_argmax);
}

HeavyKernel max_pool2d_argmax_kernel(const Pool2dShape& s, Type t) { return window_maxima_kernel(s, t, false, true); }

std::vector<Val> max_pool2d_window_grads_at(KernelBuilder& kb, const Pool2dShape& s, Val position, Val g, Type t) {
  std::vector<Val> out;
  for (int32_t k = 0; k < int32_t(s.kh * s.kw); ++k) out.push_back(select(position == k, g, kb.constant(t, 0)));
  return out;
}

namespace {

// Where a max pooling's gradient finds each window's maximum: the pooled input (found again) or the forward pass's
// positions. Both kernels share the rest.
struct MaxGradSource {
  const char* op;
  const char* buffer;  // the second buffer's name, and its type
  Type type;
  bool mask_reads_pooled;  // under the ReLU's mask, the pooled values come in a fourth buffer (else `window` masks)
  // The gradient at each element of the window (row-major) that begins at plane_base + (h0, w0) and whose pooled
  // element is w: where windows tile the input.
  std::function<std::vector<Val>(KernelBuilder& kb, Buf src, Val w, Val plane_base, Val h0, Val w0, Val g)> window;
  // Whether window w (its corner (h0, w0) in its plane) sends its gradient to the element at (hi, wi), plane index me.
  std::function<Val(KernelBuilder& kb, Buf src, Val w, Val plane_base, Val h0, Val w0, Val hi, Val wi, Val me)> routes;
};

// Buffers grad_y (read), the source (read), grad_x (write), then with relu_mask "pooled" (read). Windows that tile
// the input exactly (stride = window, no padding, nothing left over: LeNet's 2x2 pools): one invocation per window
// writes all of it (its gradient where its maximum is, zeros elsewhere); else one invocation per input element adds the
// gradients of the windows that route theirs to it.
// sum_chunks > 0 (windows that tile the input): also each channel's sum of the gradients read, per chunk of images
// (max_pool2d_grad_argmax_kernel's channel sums).
HeavyKernel max_pool2d_grad_from(const Pool2dShape& s, Type t, bool relu_mask, const MaxGradSource& src,
                                 uint32_t sum_chunks = 0, bool loads_first = false) {
  std::string name = std::string(src.op) + "_" + s.text() + "_" + float_suffix(t, src.op) + (relu_mask ? "_relu_mask" : "") +
                     (sum_chunks > 0 ? fmt::format("_sums{}{}", sum_chunks, loads_first ? "_lf" : "") : "");
  check_sizes(s);
  if (relu_mask && !pool2d_windows_tile(s))
    throw std::invalid_argument(fmt::format("{} over {}: the ReLU's mask is applied where the windows tile the input "
                                            "only", src.op, s.text()));
  if (sum_chunks > 0 && (!pool2d_windows_tile(s) || sum_chunks != max_pool2d_grad_sum_chunks(s)))
    throw std::invalid_argument(fmt::format("{} over {}: channel sums need windows that tile the input, in {} chunks of "
                                            "images", src.op, s.text(), max_pool2d_grad_sum_chunks(s)));
  const uint32_t total = uint32_t(s.n * s.c * s.h * s.w);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  KernelBuilder kb(name, kElementWorkgroup);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf source = kb.buffer(src.buffer, src.type, Access::Read);
  Buf gx = kb.buffer("grad_x", t, Access::Write);
  std::optional<Buf> pooled;
  if (relu_mask && src.mask_reads_pooled) pooled = kb.buffer("pooled", t, Access::Read);
  if (sum_chunks > 0) {
    // Workgroup (channel c, chunk): the windows of channel c in the chunk's images, invocation lid taking every
    // kElementWorkgroup-th in a fixed number of rounds; loads clamped (all issued), stores only for real windows. Then the
    // workgroup's sum of the gradients it read, in a fixed order, is the chunk's partial sum [chunk][C].
    Buf partial = kb.buffer("partial_sums", t, Access::Write);
    const uint32_t N = uint32_t(s.n), C = uint32_t(s.c), plane = Ho * Wo;
    const uint32_t images = (N + sum_chunks - 1) / sum_chunks, items = images * plane;
    const uint32_t rounds = (items + kElementWorkgroup - 1) / kElementWorkgroup;
    Shared tree = kb.shared("tree", t, kElementWorkgroup);
    Val lid = kb.local_id(), c = kb.group_id() % C, first = (kb.group_id() / C) * images;
    // loads_first: every round's loads before any store. A compiler that cannot tell the buffers apart keeps a load
    // after an earlier store, which serialized the rounds through ptxas (LeNet's second pooling gradient on the H100:
    // 0.093 ms, 0.075 loads first); NVIDIA's Vulkan compiler did better with each round's stores after its loads
    // (0.073 against 0.085 ms loads first).
    struct Round {
      Val valid, plane_base, h0, w0;
      std::vector<Val> grads;
    };
    std::vector<Round> round_values;
    auto store_round = [&](const Round& r) {
      kb.if_(r.valid, [&] {
        size_t k = 0;
        for_each_window_tap(kb, s, r.h0, r.w0,
                            [&](const WindowTap& tap) { gx[r.plane_base + tap.plane_index] = r.grads[k++]; });
      });
    };
    Var sum = kb.var("sum", kb.constant(t, 0));
    for (uint32_t r = 0; r < rounds; ++r) {
      Val i = lid + r * kElementWorkgroup;
      Val n = first + min(i, items - 1) / plane, j = min(i, items - 1) % plane;
      Val valid = (i < items) & (n < N);
      Val o = (min(n, N - 1) * C + c) * plane + j;
      Val plane_base = (min(n, N - 1) * C + c) * (H * W);
      Val h0 = cast((j / Wo) * uint32_t(s.kh), Type::I32), w0 = cast((j % Wo) * uint32_t(s.kw), Type::I32);
      Val g = pooled ? relu_masked(kb, gy[o], (*pooled)[o], t) : gy[o];
      sum = sum + select(valid, g, kb.constant(t, 0));
      round_values.push_back({valid, plane_base, h0, w0, src.window(kb, source, o, plane_base, h0, w0, g)});
      if (!loads_first) store_round(round_values.back());
    }
    if (loads_first)
      for (const Round& r : round_values) store_round(r);
    WorkgroupReduce(kb, kElementWorkgroup, 0).reduce(tree, sum.get(), TreeOp::Sum);  // the tree: the same order on every device
    kb.if_(lid == 0u, [&] { partial[kb.group_id()] = tree[kb.u32(0)]; });
    return {kb.finish(), uint64_t(C) * sum_chunks};
  }
  Val o = kb.global_id();
  if (pool2d_windows_tile(s)) {
    const uint32_t windows = uint32_t(s.n * s.c * s.ho * s.wo);
    kb.if_(o < windows, [&] {
      Val wo = o % Wo, ho = (o / Wo) % Ho, nc = o / (Ho * Wo);
      Val plane_base = nc * (H * W);
      Val h0 = cast(ho * uint32_t(s.kh), Type::I32), w0 = cast(wo * uint32_t(s.kw), Type::I32);
      Val g = pooled ? relu_masked(kb, gy[o], (*pooled)[o], t) : gy[o];
      const std::vector<Val> grads = src.window(kb, source, o, plane_base, h0, w0, g);
      size_t k = 0;
      for_each_window_tap(kb, s, h0, w0, [&](const WindowTap& tap) { gx[plane_base + tap.plane_index] = grads[k++]; });
    });
    return {kb.finish(), groups_for_threads(windows, kElementWorkgroup)};
  }
  kb.if_(o < total, [&] {
    Val pos = o % (H * W), nc = o / (H * W);
    Val hi = cast(pos / W, Type::I32), wi = cast(pos % W, Type::I32);
    Val plane_base = nc * (H * W), grad_base = nc * (Ho * Wo);
    auto [oh_lo, oh_hi] = covering_windows(hi, s.kh, s.stride_h, s.pad_h, s.ho);
    auto [ow_lo, ow_hi] = covering_windows(wi, s.kw, s.stride_w, s.pad_w, s.wo);
    Var acc = kb.var("acc", kb.constant(t, 0));
    kb.for_(oh_lo, oh_hi, [&](Val oh) {
      kb.for_(ow_lo, ow_hi, [&](Val ow) {
        Val h0 = oh * int32_t(s.stride_h) - int32_t(s.pad_h);
        Val w0 = ow * int32_t(s.stride_w) - int32_t(s.pad_w);
        Val w = grad_base + cast(oh, Type::U32) * Wo + cast(ow, Type::U32);
        kb.if_(src.routes(kb, source, w, plane_base, h0, w0, hi, wi, cast(pos, Type::I32)), [&] { acc += gy[w]; });
      });
    });
    gx[o] = acc.get();
  });
  return {kb.finish(), groups_for_threads(total, kElementWorkgroup)};
}

}  // namespace

uint32_t max_pool2d_grad_sum_chunks(const Pool2dShape& s) {
  // About four rounds of a workgroup's windows per chunk (one image at least).
  const uint64_t plane = std::max<uint64_t>(1, uint64_t(s.ho * s.wo));
  const uint64_t images = std::max<uint64_t>(1, 4 * kElementWorkgroup / plane);
  return uint32_t(std::max<uint64_t>(1, (uint64_t(s.n) + images - 1) / images));
}

HeavyKernel max_pool2d_grad_argmax_kernel(const Pool2dShape& s, Type t, bool relu_mask, uint32_t sum_chunks,
                                          bool loads_first) {
  MaxGradSource src{"max_pool2d_grad_argmax", "argmax", Type::I32, true,
                    [&](KernelBuilder& kb, Buf argmax, Val w, Val, Val, Val, Val g) {
                      return max_pool2d_window_grads_at(kb, s, argmax[w], g, t);
                    },
                    [&](KernelBuilder&, Buf argmax, Val w, Val, Val h0, Val w0, Val hi, Val wi, Val) {
                      return argmax[w] == (hi - h0) * int32_t(s.kw) + (wi - w0);
                    }};
  return max_pool2d_grad_from(s, t, relu_mask, src, sum_chunks, loads_first);
}

HeavyKernel pooled_channel_sums_kernel(const Pool2dShape& s, Type t, bool relu_mask) {
  std::string name = "pooled_channel_sums_" + s.text() + "_" + float_suffix(t, "max_pool2d_grad") +
                     (relu_mask ? "_relu_mask" : "");
  check_sizes(s);
  const uint32_t C = uint32_t(s.c), plane = uint32_t(s.ho * s.wo);
  const uint32_t terms = index_u32(s.n * s.ho * s.wo, "pooled_channel_sums terms");
  index_u32(s.n * s.c * s.ho * s.wo, "pooled_channel_sums elements");
  KernelBuilder kb(name, kElementWorkgroup);
  Buf g = kb.buffer("grad", t, Access::Read);
  std::optional<Buf> pooled;
  if (relu_mask) pooled = kb.buffer("pooled", t, Access::Read);
  Buf out = kb.buffer("sums", t, Access::Write);
  Shared tree = kb.shared("tree", t, kElementWorkgroup);
  Val lid = kb.local_id(), c = kb.group_id();
  // Channel c's terms in image order, invocation lid taking every kElementWorkgroup-th; then a tree in a fixed order.
  Var sum = kb.var("sum", kb.constant(t, 0));
  kb.for_(lid, kb.u32(terms), kb.u32(kElementWorkgroup), [&](Val i) {
    Val at = ((i / plane) * C + c) * plane + i % plane;
    sum = sum + (pooled ? relu_masked(kb, g[at], (*pooled)[at], t) : Val(g[at]));
  });
  WorkgroupReduce(kb, kElementWorkgroup, 0).reduce(tree, sum.get(), TreeOp::Sum);
  kb.if_(lid == 0u, [&] { out[c] = tree[kb.u32(0)]; });
  return {kb.finish(), uint64_t(C)};
}

HeavyKernel max_pool2d_grad_kernel(const Pool2dShape& s, Type t, bool relu_mask) {
  // The mask is that of the pooled input's maximum, which the window finds: no pooled values to read.
  MaxGradSource src{"max_pool2d_grad", "x", t, false,
                    [&](KernelBuilder& kb, Buf x, Val, Val plane_base, Val h0, Val w0, Val g) {
                      return max_pool2d_window_grads(kb, s, [&](Val i) { return x[i]; }, plane_base, h0, w0, g, t,
                                                     relu_mask);
                    },
                    [&](KernelBuilder& kb, Buf x, Val, Val plane_base, Val h0, Val w0, Val, Val, Val me) {
                      return window_max(kb, s, [&](Val i) { return x[i]; }, plane_base, h0, w0, t).best_index.get() == me;
                    }};
  return max_pool2d_grad_from(s, t, relu_mask, src);
}

HeavyKernel avg_pool2d_kernel(const Pool2dShape& s, Type t) {
  std::string name = "avg_pool2d_" + s.text() + "_" + float_suffix(t, "avg_pool2d");
  check_sizes(s);
  const uint32_t total = uint32_t(s.n * s.c * s.ho * s.wo);
  if (total == 0) return empty_result(name);
  KernelBuilder kb(name, kElementWorkgroup);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    const auto [plane_base, h0, w0] = window_of(s, o);
    Var acc = kb.var("acc", kb.constant(t, 0));
    for_each_window_tap(kb, s, h0, w0, [&](const WindowTap& tap) {
      Val v = x[plane_base + tap.plane_index];
      acc += tap.ok.valid() ? select(tap.ok, v, kb.constant(t, 0)) : v;
    });
    y[o] = acc.get() / double(s.kh * s.kw);
  });
  return {kb.finish(), groups_for_threads(total, kElementWorkgroup)};
}

HeavyKernel avg_pool2d_grad_kernel(const Pool2dShape& s, Type t) {
  std::string name = "avg_pool2d_grad_" + s.text() + "_" + float_suffix(t, "avg_pool2d_grad");
  check_sizes(s);
  const uint32_t total = uint32_t(s.n * s.c * s.h * s.w);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  KernelBuilder kb(name, kElementWorkgroup);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf gx = kb.buffer("grad_x", t, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    Val pos = o % (H * W), nc = o / (H * W);
    Val hi = cast(pos / W, Type::I32), wi = cast(pos % W, Type::I32);
    Val grad_base = nc * (Ho * Wo);
    auto [oh_lo, oh_hi] = covering_windows(hi, s.kh, s.stride_h, s.pad_h, s.ho);
    auto [ow_lo, ow_hi] = covering_windows(wi, s.kw, s.stride_w, s.pad_w, s.wo);
    Var acc = kb.var("acc", kb.constant(t, 0));
    kb.for_(oh_lo, oh_hi, [&](Val oh) {
      kb.for_(ow_lo, ow_hi, [&](Val ow) { acc += gy[grad_base + cast(oh, Type::U32) * Wo + cast(ow, Type::U32)]; });
    });
    gx[o] = acc.get() / double(s.kh * s.kw);
  });
  return {kb.finish(), groups_for_threads(total, kElementWorkgroup)};
}

}  // namespace spire::lowering::heavy
