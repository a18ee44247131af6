#include "kernels/conv2d_kernels.h"

#include "base/sliding_window.h"
#include "kernels/conv2d_grad_weight_images_kernel.h"
#include "kernels/conv2d_image_strips_kernel.h"
#include "kernels/conv2d_images_kernel.h"
#include "kernels/pooled_side_output.h"
#include "kernels/staged_copy.h"
#include "kernels/split_sum_kernel.h"

#include <algorithm>
#include <initializer_list>
#include <functional>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

std::string Conv2dShape::text() const {
  return fmt::format("n{}_c{}_h{}_w{}_k{}_r{}x{}_s{}x{}_p{}x{}_d{}x{}_g{}", n, cin, h, w, cout, kh, kw, stride_h, stride_w,
                     pad_h, pad_w, dil_h, dil_w, groups);
}

Conv2dShape conv2d_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation, int64_t groups) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d with input [{}] and weights [{}]: {}", dims_text(x), dims_text(w), why));
  };
  if (x.size() != 4 || w.size() != 4) fail("both must have rank 4");
  if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2) fail("stride, padding and dilation need 2 entries");
  if (stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || padding[0] < 0 || padding[1] < 0)
    fail("stride and dilation must be >= 1 and padding >= 0");
  if (groups < 1 || x[1] % groups || w[0] % groups || w[1] * groups != x[1]) fail(fmt::format("channels do not fit groups={}", groups));
  Conv2dShape s;
  s.n = x[0], s.cin = x[1], s.h = x[2], s.w = x[3];
  s.cout = w[0], s.kh = w[2], s.kw = w[3];
  s.stride_h = stride[0], s.stride_w = stride[1];
  s.pad_h = padding[0], s.pad_w = padding[1];
  s.dil_h = dilation[0], s.dil_w = dilation[1];
  s.groups = groups;
  s.ho = sliding_window_positions(s.h, s.dil_h * (s.kh - 1) + 1, s.stride_h, s.pad_h);
  s.wo = sliding_window_positions(s.w, s.dil_w * (s.kw - 1) + 1, s.stride_w, s.pad_w);
  if (s.ho < 0 || s.wo < 0) fail("the dilated window does not fit the padded input");
  return s;
}

namespace {

// One tap coordinate along one axis: the offset it contributes to an activation index (already clamped into
// range) and to a weight index, and whether it is valid (invalid Val = statically always valid).
struct TapAxis {
  Val ok;
  Val offset;
  Val w_offset;
};

// An input gradient's taps along one axis with a stride and no dilation: only every stride-th tap reaches input
// position i, from a = (i + pad) % stride; the j-th of them is a + j * stride and reads output position
// (i + pad - tap) / stride, exactly. So taps_per_phase(window, stride) taps rather than `window` with all but 1/stride
// of them masked (resnet18's strided layers on the H100: docs/PERFORMANCE.md). A tap past the window, or before the
// output's first position, is masked; its addresses are clamped into range.
TapAxis phased_tap(Val i, Val j, int64_t pad, int64_t stride, int64_t window, uint32_t out, uint32_t out_scale,
                   uint32_t w_scale) {
  Val tap = (i + uint32_t(pad)) % uint32_t(stride) + j * uint32_t(stride);
  Val o = (i + uint32_t(pad) - tap) / uint32_t(stride);
  Val ok = (tap < uint32_t(window)) & (tap <= i + uint32_t(pad)) & (o < out);
  return TapAxis{ok, min(o, out - 1) * out_scale, min(tap, uint32_t(window - 1)) * w_scale};
}
int64_t taps_per_phase(int64_t window, int64_t stride) { return (window + stride - 1) / stride; }

Val both(Val a, Val b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return a & b;
}

// Emits body(row, col) for every tap of a kh x kw window. Small windows are unrolled: row(r) and col(c) are
// then computed once, here (outside any loop the caller opens inside `around`), and `around` wraps the taps
// (e.g. in a channel loop). Large windows loop in the kernel inside `around`.
void for_each_tap(KernelBuilder& kb, int64_t kh, int64_t kw, const std::function<TapAxis(Val)>& row,
                  const std::function<TapAxis(Val)>& col,
                  const std::function<void(const std::function<void()>&)>& around,
                  const std::function<void(const TapAxis&, const TapAxis&)>& body) {
  if (kh * kw <= kMaxUnrolledTaps) {
    std::vector<TapAxis> rows, cols;
    for (int64_t r = 0; r < kh; ++r) rows.push_back(row(kb.u32(uint32_t(r))));
    for (int64_t c = 0; c < kw; ++c) cols.push_back(col(kb.u32(uint32_t(c))));
    around([&] {
      for (const auto& rr : rows)
        for (const auto& cc : cols) body(rr, cc);
    });
  } else {
    around([&] {
      kb.for_(kb.u32(0), kb.u32(uint32_t(kh)), [&](Val r) {
        TapAxis rr = row(r);
        kb.for_(kb.u32(0), kb.u32(uint32_t(kw)), [&](Val c) { body(rr, col(c)); });
      });
    });
  }
}

Val masked(Val ok, Val v) { return ok.valid() ? select(ok, v, like(v, 0)) : v; }

// for_each_tap inside a loop over `channels` (the sum of a direct convolution or its input gradient): body(c, row,
// col) for every tap of every channel c; unrolled taps compute their rows and columns once, outside the loop.
void for_each_channel_tap(KernelBuilder& kb, int64_t kh, int64_t kw, const std::function<TapAxis(Val)>& row,
                          const std::function<TapAxis(Val)>& col, uint32_t channels,
                          const std::function<void(Val c, const TapAxis&, const TapAxis&)>& body) {
  Val channel;  // the loop's variable, set before the taps run
  auto around = [&](const std::function<void()>& taps) {
    kb.for_(kb.u32(0), kb.u32(channels), [&](Val c) {
      channel = c;
      taps();
    });
  };
  for_each_tap(kb, kh, kw, row, col, around, [&](const TapAxis& rr, const TapAxis& cc) { body(channel, rr, cc); });
}

// The running sums of a block of `count` neighbouring result channels, one per channel, and where each channel's
// weights start (w_base + j * w_stride).
struct ChannelSums {
  ChannelSums(KernelBuilder& kb, Type t, uint32_t count, Val w_base, uint32_t w_stride) {
    for (uint32_t j = 0; j < count; ++j) {
      acc.push_back(kb.var(count == 1 ? std::string("acc") : fmt::format("acc{}", j), kb.constant(t, 0)));
      w_bases.push_back(j == 0 ? w_base : w_base + j * w_stride);
    }
  }
  // Stores the sums: one channel's at `o`, else channel j's at first() + j * plane.
  void store(Buf out, Val o, const std::function<Val()>& first, uint32_t plane) const {
    if (acc.size() == 1) {
      out[o] = acc[0].get();
      return;
    }
    Val at = first();
    for (uint32_t j = 0; j < acc.size(); ++j) out[at + j * plane] = acc[j].get();
  }

  std::vector<Var> acc;
  std::vector<Val> w_bases;
};


void check_sizes(const Conv2dShape& s) {
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(s.cout * s.cin_per_group() * s.kh * s.kw, "conv2d weight elements");
}

// The row path of conv2d and conv2d_grad_input: one invocation computes a whole row of the result (at most
// kMaxRowCols columns, each a constant in the kernel). Which source column feeds result column j through
// tap column k is then known while generating the kernel, so the column bounds/stride checks vanish, each
// source element of a row is loaded once for every (j, k) it feeds, and each weight once for the whole row.
// Rows of the window are unrolled (their offsets computed once, outside the channel loop) up to this many
// multiply-adds per window.
constexpr int64_t kMaxUnrolledRowFmas = 2048;

struct RowGather {
  uint32_t out_cols = 0, kh = 0, kw = 0, channels = 0;
  // Source column read by result column j through tap column k, or -1 when that tap falls outside.
  std::function<int64_t(int64_t, int64_t)> src_col;
  // Tap row r -> validity (invalid Val: always valid), the source row's offset in elements, and the weights' row
  // offset (invalid Val: r * kw; a phased input gradient's r-th row of its own taps is another tap row).
  std::function<TapAxis(Val)> row;
  Val src_base, w_base;            // element offsets of channel 0
  uint32_t src_channel_stride = 0, w_channel_stride = 0;
  // The same row of `blocks` neighbouring result channels, each source element loaded once for all of them; the
  // weights of block b start w_block_stride elements after block b - 1's.
  uint32_t blocks = 1, w_block_stride = 0;
  bool loop_rows = false;  // the window's rows as a loop in the kernel even where unrolling them is allowed
  // Every source row starts on an even element (src_base, the channel stride and the row offsets are even, the type
  // f32): neighbouring columns 2i and 2i + 1 then load as one pair, so a backend computes half the addresses (NVIDIA's
  // Vulkan compiler gives each load an address of its own, where ptxas folds a row's columns into immediate offsets).
  bool pairs = false;
};

// Emits the row's sums and returns them, block by block, one per result column (acc[b * out_cols + j]).
std::vector<Var> emit_row_gather(KernelBuilder& kb, Type t, Buf src, Buf w, const RowGather& g) {
  std::vector<Var> acc;
  for (uint32_t b = 0; b < g.blocks; ++b)
    for (uint32_t j = 0; j < g.out_cols; ++j)
      acc.push_back(kb.var(g.blocks == 1 ? fmt::format("acc{}", j) : fmt::format("acc{}_{}", b, j), kb.constant(t, 0)));
  // Columns of the source row that some (j, k) reads, in order.
  std::vector<int64_t> used;
  for (int64_t j = 0; j < g.out_cols; ++j)
    for (int64_t k = 0; k < g.kw; ++k)
      if (int64_t c = g.src_col(j, k); c >= 0 && std::find(used.begin(), used.end(), c) == used.end()) used.push_back(c);
  std::sort(used.begin(), used.end());
  auto one_row = [&](const TapAxis& rr, Val r, Val src_c, Val w_c) {
    std::vector<Val> sv(used.empty() ? 0 : size_t(used.back() + 1));
    for (size_t i = 0; i < used.size(); ++i) {
      const int64_t c = used[i];
      if (g.pairs && c % 2 == 0 && i + 1 < used.size() && used[i + 1] == c + 1) {
        std::vector<Val> pair = src.load_vector(src_c + rr.offset + uint32_t(c), 2);
        sv[size_t(c)] = masked(rr.ok, pair[0]);
        sv[size_t(c + 1)] = masked(rr.ok, pair[1]);
        ++i;
        continue;
      }
      sv[size_t(c)] = masked(rr.ok, src[src_c + rr.offset + uint32_t(c)]);
    }
    for (uint32_t b = 0; b < g.blocks; ++b) {
      Val w_row = w_c + (rr.w_offset.valid() ? rr.w_offset : r * g.kw);
      if (b > 0) w_row = w_row + b * g.w_block_stride;
      std::vector<Val> wv;
      for (uint32_t k = 0; k < g.kw; ++k) wv.push_back(w[w_row + k]);
      for (int64_t j = 0; j < g.out_cols; ++j)
        for (int64_t k = 0; k < g.kw; ++k)
          if (int64_t c = g.src_col(j, k); c >= 0) {
            Var& a = acc[size_t(b * g.out_cols + j)];
            a = fma(sv[size_t(c)], wv[size_t(k)], a);
          }
    }
  };
  const bool unroll_rows = !g.loop_rows && int64_t(g.kh) * g.kw * g.out_cols * g.blocks <= kMaxUnrolledRowFmas;
  std::vector<TapAxis> rows;
  if (unroll_rows)
    for (uint32_t r = 0; r < g.kh; ++r) rows.push_back(g.row(kb.u32(r)));
  kb.for_(kb.u32(0), kb.u32(g.channels), [&](Val c) {
    Val src_c = g.src_base + c * g.src_channel_stride, w_c = g.w_base + c * g.w_channel_stride;
    if (unroll_rows) {
      for (uint32_t r = 0; r < g.kh; ++r) one_row(rows[r], kb.u32(r), src_c, w_c);
    } else {
      kb.for_(kb.u32(0), kb.u32(g.kh), [&](Val r) { one_row(g.row(r), r, src_c, w_c); });
    }
  });
  return acc;
}

// The row path's workgroup: small, so that a batch of short rows still spreads over many workgroups.
constexpr uint32_t kRowThreads = 64;
// The row path gives each invocation a row's worth of work; with fewer rows than this (small batches of few
// channels) a GPU would run few, long invocations, so the per-element kernel is kept there.
constexpr int64_t kMinRowInvocations = 1024;

// A whole result row per invocation needs the row and the window to be short (their columns are unrolled).
bool rows_fit(int64_t cols, int64_t kw) { return cols <= kMaxRowCols && kw <= kMaxRowCols; }
// Rows of c_block channels keep c_block x columns sums in registers: at most this many.
constexpr int64_t kMaxRowSums = 64;

// The shared-weights path (Conv2dConfig::shared_w): weights as [Cin][taps][channels rounded up to 4] in workgroup
// memory.
constexpr int64_t kSharedWeightBytes = 16384;
uint32_t shared_w_channels(int64_t cout) { return uint32_t((cout + 3) / 4 * 4); }
int64_t shared_w_bytes(const Conv2dShape& s, Type t) {
  return s.cin * s.kh * s.kw * shared_w_channels(s.cout) * int64_t(dtype_bytes(t));
}
bool shared_w_fits(const Conv2dShape& s, Type t) {
  return s.groups == 1 && s.cout <= 32 && s.kh * s.kw <= kMaxUnrolledTaps && shared_w_bytes(s, t) <= kSharedWeightBytes;
}

// Throws for a config this shape cannot take; `result_cols` is the result's row length and
// `result_channels_per_group` its channels per group (c_block must divide them).
void check_config(const Conv2dShape& s, const Conv2dConfig& c, int64_t result_cols, int64_t result_channels_per_group,
                  const char* op) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("{}: config '{}' {}", op, c.config().text(), why));
  };
  if (c.wg < 1 || c.wg > 1024) fail("needs a workgroup of 1..1024 invocations");
  if (c.rows && !rows_fit(result_cols, s.kw))
    fail(fmt::format("takes rows, but rows of {} columns (window {} wide) are longer than {}", result_cols, s.kw, kMaxRowCols));
  if (c.c_block < 1 || (c.c_block > 1 && result_channels_per_group % c.c_block != 0))
    fail(fmt::format("needs a c_block dividing the {} result channels per group", result_channels_per_group));
  if (c.rows && result_cols * c.c_block > kMaxRowSums)
    fail(fmt::format("takes rows of {} channels, more than {} sums per invocation for rows of {} columns", c.c_block,
                     kMaxRowSums, result_cols));
  if (c.pixels < 1 || c.pixels > 64 || (c.pixels > 1 && !c.shared_w))
    fail("takes several elements per invocation (1..64), which needs the weights in workgroup memory (shared_w)");
  if (c.row_loop && !c.rows) fail("loops over the window's rows of a result row, which needs rows");
}

// The config's values after the kernel's name, where they are not what the name already implies (the
// heuristic's): kernels of two configs must be told apart in plans.
std::string name_suffix(const Conv2dConfig& c, const Conv2dConfig& heuristic) {
  if (c == heuristic) return "";
  std::string out = fmt::format("_{}_wg{}", c.rows ? "rows" : "elems", c.wg);
  if (c.c_block > 1) out += fmt::format("_c{}", c.c_block);
  if (c.shared_w) out += "_sw";
  if (c.pixels > 1) out += fmt::format("_px{}", c.pixels);
  if (c.row_loop) out += "_rl";
  if (c.per_core > 0) out += fmt::format("_pc{}", c.per_core);
  return out;
}

}  // namespace

Config Conv2dConfig::config() const {
  Config c{{"rows", rows ? 1 : 0}, {"wg", wg}, {"c_block", c_block}};
  if (shared_w) c.set("shared_w", 1);  // configs without it keep the text tuning caches already hold
  if (pixels > 1) c.set("pixels", pixels);
  if (row_loop) c.set("row_loop", 1);
  if (per_core > 0) c.set("per_core", per_core);
  if (images) c.set("images", 1);
  return c;
}

Conv2dConfig Conv2dConfig::from(const Config& c) {
  int64_t rows = c.get("rows"), wg = c.get("wg"), co = c.get("c_block");
  int64_t sw = c.has("shared_w") ? c.get("shared_w") : 0;
  int64_t px = c.has("pixels") ? c.get("pixels") : 1;
  int64_t rl = c.has("row_loop") ? c.get("row_loop") : 0;
  int64_t pc = c.has("per_core") ? c.get("per_core") : 0;
  if ((rows != 0 && rows != 1) || wg < 1 || wg > 1024 || co < 1 || co > 64 || (sw != 0 && sw != 1) || px < 1 ||
      px > 64 || (rl != 0 && rl != 1) || pc < 0 || pc > 32)
    throw std::invalid_argument(fmt::format("conv2d config '{}': rows 0 or 1, wg 1..1024, c_block 1..64, shared_w 0 or "
                                            "1, pixels 1..64, row_loop 0 or 1, per_core 0..32",
                                            c.text()));
  Conv2dConfig out{rows == 1, uint32_t(wg), uint32_t(co), sw == 1, uint32_t(px), rl == 1, uint32_t(pc)};
  if (c.has("images")) {
    if (c.get("images") != 0 && c.get("images") != 1)
      throw std::invalid_argument(fmt::format("conv2d config '{}': images 0 or 1", c.text()));
    out.images = c.get("images") == 1;
  }
  return out;
}

namespace {

// The occupancy request (Conv2dConfig / GradWeightConfig::per_core) that asks for `resident` invocations per core
// from workgroups of `wg`: at most 32 workgroups, what a core holds; 0 (no request) for 0.
uint32_t per_core_for(uint32_t resident, uint32_t wg) { return std::min<uint32_t>(32, resident / wg); }

// A config with each of the `resident` occupancy requests, for the tuner (GPUs only: PTX caps the registers to fit
// them, other backends ignore the request).
template <class C>
std::vector<C> with_requests(const C& config, std::initializer_list<uint32_t> resident) {
  std::vector<C> out;
  for (uint32_t r : resident) {
    C c = config;
    c.per_core = per_core_for(r, c.wg);
    out.push_back(c);
  }
  return out;
}

// The row path's heuristic: where rows are many (`rows` of them, one channel each), rows of the most neighbouring
// channels (dividing the channels per group) whose sums stay within 48 per invocation, in workgroups of 32 when that
// is more than one. Measured on the H100 (LeNet's step, docs/PERFORMANCE.md): at batch 8192 the tuner's picks on
// cuda:0 for all three row layers and on vulkan:0 for two; at batch 64 fewer, longer invocations cost cuda:0's step 7%,
// so a block must leave at least 65536 invocations.
//
// Rows of several channels on a GPU loop over the window's rows instead of unrolling them (row_loop): LeNet's second
// convolution at batch 8192 then took 128 registers per invocation instead of 175 (forward) and 218 (input
// gradient) on the H100's cuda:0, twice the resident warps, and 0.366 -> 0.346 ms / 0.308 -> 0.300 ms (vulkan:0
// 0.293 -> 0.287 / 0.267 -> 0.260; fresh processes, docs/PERFORMANCE.md). One-channel rows (batch 64) stay unrolled.
// Looped rows ask for `resident` invocations per core (per_core), which caps PTX's registers below those 128.
//
// A CPU device needs no more invocations than its cores' SIMD lanes, so there the rows take the most channels whose sums
// fit an invocation (kMaxRowSums), each source element loaded once for all of them: on lavapipe at batch 64 LeNet's
// second convolution took 15.8 ms in rows of one channel and 4.8 in rows of 4 (the tuner's pick), its input gradient
// 11.3 ms against 6.6 for the tuner's 3 channels (docs/PERFORMANCE.md, "Lavapipe (CPU device)").
Conv2dConfig row_heuristic(int64_t rows, int64_t cols, int64_t channels_per_group, bool gpu, uint32_t resident) {
  uint32_t cb = 1;
  for (uint32_t c : {2u, 3u, 4u, 6u, 8u})
    if (channels_per_group % c == 0 && (gpu ? cols * c <= 48 && rows / c >= 65536 : cols * c <= kMaxRowSums)) cb = c;
  const uint32_t wg = cb > 1 ? 32u : kRowThreads;
  const bool loop = gpu && cb > 1;
  return {true, wg, cb, false, 1, loop, loop ? per_core_for(resident, wg) : 0};
}

// The looped rows' occupancy requests, on an H200's cuda:0 at batch 8192 (LeNet's second convolution, fresh
// processes, docs/PERFORMANCE.md): the forward 0.346 ms at 128 registers, 0.340 at 96 (640 resident), 0.328 at 80
// (768), 0.335 at 64 (1024); the input gradient 0.300, 0.290, 0.303, 0.332. Since the PTX backend puts an index's
// constant terms into the loads' offsets (backends/ptx/ptx_translator.h), the input gradient needs fewer registers and
// no request serves it best (H100: 0.241 ms at 640 resident, 0.234 with none or 512, 0.277 at 768).
constexpr uint32_t kForwardResident = 768, kGradInputResident = 0;

// The staged-image heuristics (conv2d images and strips, conv2d_grad_weight all_pairs) take them only where an image
// (and the weights) in f32 stay within this much workgroup memory, as on LeNet's convolutions where they were measured
// (17 and 20 KB on the second, 5 KB on the first): larger ones leave few workgroups per core, unmeasured.
constexpr uint64_t kMeasuredStagedBytes = 24 * 1024;

}  // namespace

namespace {

// The heuristic among the row and element kernels (conv2d_heuristic's where images do not apply, and the base of the
// tuner's other candidates).
Conv2dConfig direct_heuristic(const Conv2dShape& s, const Limits& limits) {
  // Few output channels (LeNet's first layer) on a GPU: one element of all of them per invocation, the weights in
  // workgroup memory (at batch 8192, 6 channels: cuda:0 0.484 -> 0.192 ms against the row kernel; on lavapipe at batch
  // 64 it took 7.8 ms against the row kernel's 3.6). The f64 check keeps the config valid for either type.
  if (!limits.cpu && s.cout <= 8 && shared_w_fits(s, Type::F64)) {
    // Each workgroup copies the weights first. Where many elements leave enough workgroups (528: four per core of a
    // 132-core GPU), 16 elements per invocation in workgroups of 64, the tuner's pick on the H100's cuda:0 for LeNet's
    // first layer at batch 8192 (0.216 ms at one element in 128, 0.181 at 8 in 64, 0.153 at 16 in 64; vulkan:0
    // 0.180 -> 0.174, docs/PERFORMANCE.md). Batch 64 keeps one element in 128.
    const uint64_t elements = uint64_t(s.n * s.ho * s.wo);
    if (elements / (64 * 16) >= 528) return {false, 64, uint32_t(s.cout), true, 16};
    return {false, 128, uint32_t(s.cout), true, 1};
  }
  const int64_t rows = s.n * s.cout * s.ho;
  if (rows_fit(s.wo, s.kw) && rows >= kMinRowInvocations)
    return row_heuristic(rows, s.wo, s.cout_per_group(), !limits.cpu, kForwardResident);
  return {false, kElementWorkgroup, 1};
}

// Many images of a small convolution through ptxas (LeNet's second at batch 8192): whole images staged in workgroup
// memory with every weight, one output row of one channel per invocation (conv2d_images_kernel.h). On the H100 (fresh
// processes, forced configs): cuda:0 0.329 -> 0.260 ms against the looped rows; 2 or 4 channels per invocation took
// 0.30-0.47 (their registers: 128 and 244). NVIDIA's Vulkan compiler makes the same kernel slower than its rows (0.305
// against 0.287 ms), so other backends keep rows. Layers of at most 8 output channels keep their weights-in-workgroup-
// memory elements.
std::optional<Conv2dConfig> images_heuristic(const Conv2dShape& s, const Limits& limits) {
  if (!limits.ptx || limits.cpu || s.n < 1024 || direct_heuristic(s, limits).shared_w) return std::nullopt;
  Conv2dConfig images{true, conv2d_images_owners(s, 1), 1};
  images.images = true;
  try {
    check_conv2d_images(s, Type::F64, images, limits);  // f64 takes twice the memory: valid for either type
    // Where it was measured to pay: a small image and few weights (LeNet's: 17 KB), so that many workgroups share a core.
    if (images.wg >= 64 && conv2d_images_elements(s, 1) * 4 <= kMeasuredStagedBytes) return images;
  } catch (const std::invalid_argument&) {
    // Not for this shape (strides, groups, long rows, too many channels or too little workgroup memory).
  }
  return std::nullopt;
}

// Many images of a convolution with few output channels (LeNet's first at batch 8192), where the row and element
// heuristic keeps the weights in workgroup memory: whole images staged too, strips of elements of every channel per
// invocation (conv2d_image_strips_kernel.h), about 384 invocations per workgroup. On the H100 (fresh processes, forced
// configs, the fused bias and ReLU included; the shared_w elements 0.180 ms on cuda:0, 0.177 on vulkan:0): strips of
// 2 rows, one image per 392 invocations, 0.143 / 0.118 ms; of 4 rows, two images per 392, 0.166 / 0.112; 4 rows, one
// image, 0.149 / 0.115; 7 rows 0.147-0.164 / 0.114-0.138; 8 rows 0.187-0.208 / 0.174-0.226. So ptxas's builds take 2
// rows, other compilers 4. Through ptxas a one-image workgroup asks for 4 per core: with its poolings and positions
// (the step's form since pool_grad_by_argmax.h) ptxas gave it 56 registers, two workgroups of 416 per core, and the
// request 0.125 ms against 0.147 (3 per core: 0.132; docs/PERFORMANCE.md).
std::optional<Conv2dConfig> strips_heuristic(const Conv2dShape& s, const Limits& limits) {
  if (limits.cpu || s.n < 1024 || !direct_heuristic(s, limits).shared_w) return std::nullopt;
  const uint32_t pixels = limits.ptx ? 2 : 4, owners = conv2d_image_strips_owners(s, pixels);
  Conv2dConfig strips{false, owners * std::max<uint32_t>(1, (384 + owners - 1) / owners), uint32_t(s.cout), false, pixels};
  strips.images = true;
  if (limits.ptx && strips.wg == owners) strips.per_core = 4;
  try {
    check_conv2d_image_strips(s, Type::F64, strips, limits);  // f64 takes twice the memory: valid for either type
    if (conv2d_image_strips_elements(s, strips) * 4 <= kMeasuredStagedBytes) return strips;
  } catch (const std::invalid_argument&) {
    // Not for this shape (strides, groups, too many channels or too little workgroup memory).
  }
  return std::nullopt;
}

}  // namespace

Conv2dConfig conv2d_heuristic(const Conv2dShape& s, const Limits& limits) {
  if (auto images = images_heuristic(s, limits)) return *images;
  if (auto strips = strips_heuristic(s, limits)) return *strips;
  return direct_heuristic(s, limits);
}

Conv2dConfig conv2d_grad_input_heuristic(const Conv2dShape& s, const Limits& limits) {
  const int64_t rows = s.n * s.cin * s.h;
  if (rows_fit(s.w, s.kw) && rows >= kMinRowInvocations)
    return row_heuristic(rows, s.w, s.cin_per_group(), !limits.cpu, kGradInputResident);
  // Elements of every input channel of a group when there are at most 4 (an image's gradient): each grad_y element
  // loaded then serves all of them. resnet18's first layer (3 channels) at batch 64 on the H100: 4.17 -> 2.70 ms on
  // vulkan:0 and 5.75 -> 4.23 on cuda:0, the tuner's pick on both (docs/PERFORMANCE.md).
  if (s.cin_per_group() <= 4) return {false, kElementWorkgroup, uint32_t(s.cin_per_group())};
  return {false, kElementWorkgroup, 1};
}

namespace {

// Staged-image configs (conv2d_images_kernel.h) of each of `blocks` result channels per invocation that divides
// `channels`: one image's invocations per workgroup, or two, the window's rows unrolled or looped; those `check`
// refuses (the shape, the device's workgroup memory) are left out.
void add_images_candidates(std::vector<Conv2dConfig>& out, int64_t channels, std::initializer_list<uint32_t> blocks,
                           const std::function<uint32_t(uint32_t)>& owners,
                           const std::function<void(const Conv2dConfig&)>& check) {
  for (uint32_t cb : blocks) {
    if (channels % cb != 0) continue;
    for (uint32_t wg : {owners(cb), 2 * owners(cb)})
      for (bool row_loop : {false, true}) {
        Conv2dConfig c{true, wg, cb, false, 1, row_loop};
        c.images = true;
        try {
          check(c);
          if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        } catch (const std::invalid_argument&) {
          // Not for this shape or device.
        }
      }
  }
}

// Rows (where they fit) and elements of 1 to 8 channels (dividing `channels_per_group`), each with a few
// workgroup sizes.
std::vector<Conv2dConfig> candidates(const Conv2dConfig& heuristic, int64_t result_cols, int64_t kw,
                                     int64_t channels_per_group, const Limits& limits) {
  std::vector<Conv2dConfig> out{heuristic};
  auto add = [&](Conv2dConfig c) {
    if (c.wg <= limits.max_invocations && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  if (rows_fit(result_cols, kw)) {
    for (uint32_t wg : {32u, 64u, 128u, 256u}) add({true, wg, 1});
    // Rows of several channels: each source element loaded once for all of them (small-channel layers: LeNet's).
    for (uint32_t cb : {2u, 3u, 4u, 6u, 8u})
      if (channels_per_group % cb == 0 && result_cols * cb <= kMaxRowSums)
        for (uint32_t wg : {32u, 64u, 128u}) add({true, wg, cb});
    // The window's rows as a loop: fewer registers, more invocations resident.
    for (uint32_t cb : {1u, 2u, 3u})
      if (channels_per_group % cb == 0 && result_cols * cb <= kMaxRowSums)
        for (uint32_t wg : {32u, 64u}) add({true, wg, cb, false, 1, true});
    // The heuristic's looped rows with more or fewer registers: no request, or 512 to 1024 invocations resident.
    if (!limits.cpu && heuristic.rows && heuristic.row_loop)
      for (const Conv2dConfig& c : with_requests(heuristic, {0, 512, 640, 768, 1024})) add(c);
  }
  for (uint32_t cb : {1u, 2u, 3u, 4u, 6u, 8u})
    if (channels_per_group % cb == 0)
      for (uint32_t wg : {64u, 128u, 256u}) add({false, wg, cb});
  return out;
}

}  // namespace

std::vector<Conv2dConfig> conv2d_candidates(const Conv2dShape& s, const Limits& limits, Type t) {
  // The heuristic first; the others vary the row and element kernels' heuristic.
  const Conv2dConfig heuristic = direct_heuristic(s, limits);
  std::vector<Conv2dConfig> out = candidates(heuristic, s.wo, s.kw, s.cout_per_group(), limits);
  if (auto images = images_heuristic(s, limits)) out.insert(out.begin(), *images);
  if (auto strips = strips_heuristic(s, limits)) out.insert(out.begin(), *strips);
  // The heuristic's weights-in-workgroup-memory elements (many sums per invocation) with 512 to 1024 invocations
  // resident.
  if (!limits.cpu && heuristic.shared_w)
    for (const Conv2dConfig& c : with_requests(heuristic, {512, 768, 1024}))
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  // Elements of every output channel with the weights in workgroup memory.
  if (shared_w_fits(s, t) && shared_w_bytes(s, t) <= limits.shared_bytes)
    for (uint32_t wg : {64u, 128u, 256u})
      for (uint32_t px : {1u, 4u, 8u, 16u})
        if (wg <= limits.max_invocations) {
          const Conv2dConfig c{false, wg, uint32_t(s.cout), true, px};
          if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        }
  // Whole images staged in workgroup memory with every weight.
  add_images_candidates(out, s.cout, {1, 2, 4, 8}, [&](uint32_t cb) { return conv2d_images_owners(s, cb); },
                        [&](const Conv2dConfig& c) { check_conv2d_images(s, t, c, limits); });
  // ... in strips of elements of every output channel (conv2d_image_strips_kernel.h), one to four images per workgroup.
  for (uint32_t px : {2u, 4u, 7u, 8u, 14u})
    for (uint32_t images : {1u, 2u, 4u}) {
      Conv2dConfig c{false, images * conv2d_image_strips_owners(s, px), uint32_t(s.cout), false, px};
      c.images = true;
      try {
        check_conv2d_image_strips(s, t, c, limits);
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        // One image's strips of 2 or 4 rows asking for 3 or 4 workgroups per core (PTX caps the registers to fit;
        // other backends ignore the request).
        if (images == 1 && (px == 2 || px == 4) && limits.ptx)
          for (uint32_t pc : {3u, 4u}) {
            Conv2dConfig r = c;
            r.per_core = pc;
            if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
          }
      } catch (const std::invalid_argument&) {
        // Not for this shape or device.
      }
    }
  return out;
}

std::vector<Conv2dConfig> conv2d_grad_input_candidates(const Conv2dShape& s, const Limits& limits, Type t) {
  std::vector<Conv2dConfig> out = candidates(conv2d_grad_input_heuristic(s, limits), s.w, s.kw, s.cin_per_group(), limits);
  // Whole images of grad_y staged with every weight (turned around).
  add_images_candidates(out, s.cin, {1, 2, 3}, [&](uint32_t cb) { return conv2d_grad_input_images_owners(s, cb); },
                        [&](const Conv2dConfig& c) { check_conv2d_grad_input_images(s, t, c, limits); });
  return out;
}

static HeavyKernel conv2d_kernel_pooling(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits,
                                         const PooledOutputs* pool);

bool conv2d_pools_in_kernel(const Conv2dShape& s, const Conv2dConfig& c, const Pool2dShape& pool, const Limits& limits) {
  if (!pools_in_pairs(pool, s.ho, s.wo, limits) || pool.n != s.n || pool.c != s.cout || c.wg % 2 != 0) return false;
  if (c.images) return c.rows || c.pixels % 2 == 0;
  return c.rows;
}

HeavyKernel conv2d_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  return conv2d_kernel_pooling(s, t, c, limits, nullptr);
}

HeavyKernel conv2d_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits,
                          const PooledOutputs& pool) {
  if (!conv2d_pools_in_kernel(s, c, pool.pool, limits))
    throw std::invalid_argument(fmt::format("conv2d {}: config '{}' cannot store the pooling {} of its result (rows or "
                                            "staged images over 2x2 windows that tile it, even workgroups, subgroup "
                                            "shuffles)",
                                            s.text(), c.config().text(), pool.pool.text()));
  return conv2d_kernel_pooling(s, t, c, limits, &pool);
}

// The pooled side output, where asked for (pooled_side_output.h), from the row and staged-image kernels.
static HeavyKernel conv2d_kernel_pooling(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits,
                                         const PooledOutputs* pool) {
  std::string name = "conv2d_" + s.text() + "_" + float_suffix(t, "conv2d") + name_suffix(c, conv2d_heuristic(s)) +
                     (pool ? pool->suffix() : "");
  check_sizes(s);
  if (c.images) {
    if (s.n * s.cout * s.ho * s.wo == 0) return empty_result(name);
    return c.rows ? conv2d_images_kernel(s, t, c, limits, pool) : conv2d_image_strips_kernel(s, t, c, limits, pool);
  }
  check_config(s, c, s.wo, s.cout_per_group(), "conv2d");
  if (c.shared_w && (c.rows || c.c_block != s.cout || !shared_w_fits(s, t)))
    throw std::invalid_argument(fmt::format(
        "conv2d {}: config '{}' keeps the weights in workgroup memory, which needs elements of all {} output channels "
        "(no rows, no groups), at most 32 channels, {} taps and {} bytes of {} weights (these take {})",
        s.text(), c.config().text(), s.cout, kMaxUnrolledTaps, kSharedWeightBytes, dtype_name(t), shared_w_bytes(s, t)));
  const uint32_t total = uint32_t(s.n * s.cout * s.ho * s.wo);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t taps = uint32_t(s.kh * s.kw);

  if (c.rows) {
    // One invocation per row of c_block neighbouring output channels.
    const uint32_t cob = c.c_block, co_count = uint32_t(s.cout) / cob;
    const uint32_t rows_total = uint32_t(s.n * co_count * s.ho);
    const uint32_t threads = pool ? pooled_workgroup(c.wg, limits) : c.wg;
    KernelBuilder kb(name, threads);
    if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
    Buf x = kb.buffer("x", t, Access::Read);
    Buf w = kb.buffer("w", t, Access::Read);
    Buf y = kb.buffer("y", t, Access::Write);
    Val o = kb.global_id();
    // With a pooled output the sums outlive the branch: rows 2k and 2k + 1 of a channel (invocations o and o + 1,
    // local ids of the same parity as o's) swap their halves after it.
    std::vector<Var> sums;
    if (pool)
      for (uint32_t i = 0; i < cob * Wo; ++i) sums.push_back(kb.var(fmt::format("sum{}", i), kb.constant(t, 0)));
    kb.if_(o < rows_total, [&] {
      Val ho = o % Ho, t1 = o / Ho;
      Val co = cob == 1 ? t1 % co_count : (t1 % co_count) * cob, n = t1 / co_count;
      Val hi0 = cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h);
      RowGather g;
      g.out_cols = Wo, g.kh = uint32_t(s.kh), g.kw = uint32_t(s.kw), g.channels = cpg;
      g.src_col = [&](int64_t j, int64_t k) {
        int64_t wi = j * s.stride_w - s.pad_w + k * s.dil_w;
        return wi >= 0 && wi < s.w ? wi : -1;
      };
      g.row = [&](Val r) {
        Val hi = hi0 + cast(r, Type::I32) * int32_t(s.dil_h);
        if (s.pad_h == 0) return TapAxis{Val(), cast(hi, Type::U32) * W, Val()};
        return TapAxis{(hi >= 0) & (hi < int32_t(H)), clamped_index(hi, H) * W, Val()};
      };
      g.src_base = (n * uint32_t(s.cin) + (co / opg) * cpg) * (H * W);
      g.w_base = co * (cpg * taps);
      g.src_channel_stride = H * W, g.w_channel_stride = taps;
      g.blocks = cob, g.w_block_stride = cpg * taps;
      g.loop_rows = c.row_loop;
      g.pairs = t == Type::F32 && W % 2 == 0;
      std::vector<Var> acc = emit_row_gather(kb, t, x, w, g);
      Val y_row = cob == 1 ? o * Wo : ((n * uint32_t(s.cout) + co) * Ho + ho) * Wo;
      for (uint32_t b = 0; b < cob; ++b)
        for (uint32_t j = 0; j < Wo; ++j) {
          Val at = y_row + (b * Ho * Wo + j);
          if (!pool) {
            y[at] = acc[b * Wo + j].get();
            continue;
          }
          // The pooling takes what is stored: the value the epilogue (if the lowering folds one in) makes of the sum.
          sums[b * Wo + j] = kb.epilogue_tap(y, at, acc[b * Wo + j].get());
          if (pool->result) y[at] = sums[b * Wo + j].get();
        }
    });
    if (pool) {
      const PooledBuffers out = declare_pooled_buffers(kb, *pool, t);
      std::vector<WindowHalf> halves;  // [block][window column]: the row's two columns
      for (uint32_t b = 0; b < cob; ++b)
        for (uint32_t j = 0; j < Wo; j += 2) halves.push_back({sums[b * Wo + j].get(), sums[b * Wo + j + 1].get()});
      // q = o / 2 counts the window rows of every (image, channel block) in order; block b's plane is channel co + b.
      const uint32_t plane_rows = Ho / 2;
      Val q = o / 2;
      Val window_row = cob == 1 ? q * (Wo / 2) : ((q / plane_rows) * (cob * plane_rows) + q % plane_rows) * (Wo / 2);
      store_pair_maxima(
          kb, PairStores::Branched, PairHalves::Rows, kb.local_id(), o < rows_total, halves,
          [&](uint32_t k) { return window_row + ((k / (Wo / 2)) * plane_rows * (Wo / 2) + k % (Wo / 2)); }, out);
    }
    return {kb.finish(), groups_for_threads(rows_total, threads)};
  }

  // One invocation per result element of c_block neighbouring output channels (channel co .. co+cob-1 of
  // one group): every input element it loads serves all of them.
  const uint32_t cob = c.c_block, co_count = uint32_t(s.cout) / cob, items = total / cob;
  KernelBuilder kb(name, c.wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  // shared_w: the workgroup copies the weights [Cout][Cin * taps] into w_tile [Cin * taps][channels in fours] first.
  const uint32_t cpad = shared_w_channels(s.cout), window = cpg * taps, weights = uint32_t(s.cout) * window;
  const bool w_vectors = dtype_bytes(t) == 4;
  Shared w_tile;
  if (c.shared_w) {
    w_tile = kb.shared("w_tile", t, window * cpad);
    Val lid = kb.local_id();
    kb.for_(kb.u32(0), kb.u32((weights + c.wg - 1) / c.wg), [&](Val k) {
      Val e = lid + k * c.wg;
      kb.if_(e < weights, [&] { w_tile[(e % window) * cpad + e / window] = Val(w[e]); });
    });
    kb.barrier();
  }
  // Result element o (c.pixels of them per invocation, each pass a workgroup's worth of neighbouring elements).
  auto element = [&](Val o) {
    kb.if_(o < items, [&] {
      Val wo = o % Wo, t1 = o / Wo;
      Val ho = t1 % Ho, t2 = t1 / Ho;
      Val cb = t2 % co_count, n = t2 / co_count;
      Val co = cob == 1 ? cb : cb * cob;
      Val g = co / opg;
      Val x_base = (n * uint32_t(s.cin) + g * cpg) * (H * W);
      Val w_base = co * (cpg * taps);
      Val hi0 = cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h);
      Val wi0 = cast(wo, Type::I32) * int32_t(s.stride_w) - int32_t(s.pad_w);
      // Without padding every tap of every output lies inside the input: no checks at all.
      auto row = [&](Val r) {
        Val hi = hi0 + cast(r, Type::I32) * int32_t(s.dil_h);
        if (s.pad_h == 0) return TapAxis{Val(), cast(hi, Type::U32) * W, r * uint32_t(s.kw)};
        return TapAxis{(hi >= 0) & (hi < int32_t(H)), clamped_index(hi, H) * W, r * uint32_t(s.kw)};
      };
      auto col = [&](Val c) {
        Val wi = wi0 + cast(c, Type::I32) * int32_t(s.dil_w);
        if (s.pad_w == 0) return TapAxis{Val(), cast(wi, Type::U32), c};
        return TapAxis{(wi >= 0) & (wi < int32_t(W)), clamped_index(wi, W), c};
      };
      ChannelSums sums(kb, t, cob, w_base, cpg * taps);  // the block's output channels
      std::vector<Var>& acc = sums.acc;
      for_each_channel_tap(kb, s.kh, s.kw, row, col, cpg, [&](Val ci, const TapAxis& rr, const TapAxis& cc) {
        // Masking the input (not the product) leaves one fma per tap and output channel.
        Val xv = masked(both(rr.ok, cc.ok), x[x_base + ci * (H * W) + rr.offset + cc.offset]);
        if (c.shared_w) {
          // Four channels' weights of this tap per workgroup-memory read (lanes past Cout are never used).
          Val at = (ci * taps + rr.w_offset + cc.w_offset) * cpad;
          for (uint32_t q = 0; q < cpad; q += 4) {
            std::vector<Val> wv;
            if (w_vectors) wv = w_tile.load_vector(at + q, 4);
            else
              for (uint32_t l = 0; l < 4; ++l) wv.push_back(w_tile[at + (q + l)]);
            for (uint32_t l = 0; l < 4 && q + l < cob; ++l) acc[q + l] = fma(xv, wv[l], acc[q + l]);
          }
          return;
        }
        for (uint32_t j = 0; j < cob; ++j) {
          Val wv = w[sums.w_bases[j] + ci * taps + rr.w_offset + cc.w_offset];
          acc[j] = fma(xv, wv, acc[j]);
        }
      });
      sums.store(y, o, [&] { return ((n * uint32_t(s.cout) + co) * Ho + ho) * Wo + wo; }, Ho * Wo);
    });
  };
  if (c.pixels == 1) {
    element(kb.global_id());
  } else {
    Val first = kb.group_id() * (c.pixels * c.wg) + kb.local_id();
    kb.for_(kb.u32(0), kb.u32(c.pixels), [&](Val k) { element(first + k * c.wg); });
  }
  return {kb.finish(), groups_for_threads(items, c.wg * c.pixels)};
}

HeavyKernel conv2d_grad_input_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  std::string name = "conv2d_grad_input_" + s.text() + "_" + float_suffix(t, "conv2d_grad_input") +
                     name_suffix(c, conv2d_grad_input_heuristic(s));
  check_sizes(s);
  check_config(s, c, s.w, s.cin_per_group(), "conv2d_grad_input");
  if (c.images) {
    if (s.n * s.cin * s.h * s.w == 0) return empty_result(name);
    return conv2d_grad_input_images_kernel(s, t, c, limits);
  }
  if (c.shared_w)
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: config '{}': shared_w is conv2d's only", s.text(),
                                            c.config().text()));
  const uint32_t total = uint32_t(s.n * s.cin * s.h * s.w);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t taps = uint32_t(s.kh * s.kw);
  const bool phased_h = s.stride_h > 1 && s.dil_h == 1, phased_w = s.stride_w > 1 && s.dil_w == 1;
  KernelBuilder kb(name, c.wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf gx = kb.buffer("grad_x", t, Access::Write);
  Val o = kb.global_id();

  if (c.rows) {
    // One invocation per row of c_block neighbouring input channels (of one group).
    const uint32_t cib = c.c_block, ci_count = uint32_t(s.cin) / cib;
    const uint32_t rows_total = uint32_t(s.n * ci_count * s.h);
    kb.if_(o < rows_total, [&] {
      Val hi = o % H, t1 = o / H;
      Val ci = cib == 1 ? t1 % ci_count : (t1 % ci_count) * cib, n = t1 / ci_count;
      Val g_idx = ci / cpg, cil = ci % cpg;
      RowGather g;
      g.out_cols = W, g.kh = uint32_t(s.kh), g.kw = uint32_t(s.kw), g.channels = opg;
      // Tap k of output column wo reads input column wo*stride - pad + k*dil.
      g.src_col = [&](int64_t j, int64_t k) -> int64_t {
        int64_t tw = j + s.pad_w - k * s.dil_w;
        if (tw < 0 || tw % s.stride_w != 0 || tw / s.stride_w >= s.wo) return -1;
        return tw / s.stride_w;
      };
      g.row = [&](Val r) {
        if (phased_h) return phased_tap(hi, r, s.pad_h, s.stride_h, s.kh, Ho, Wo, uint32_t(s.kw));
        Val th = cast(hi, Type::I32) + int32_t(s.pad_h) - cast(r, Type::I32) * int32_t(s.dil_h);
        Val thc = max(th, 0);
        Val oh = thc / int32_t(s.stride_h);
        Val ok = (th >= 0) & (oh < int32_t(Ho));
        if (s.stride_h > 1) ok = ok & (thc % int32_t(s.stride_h) == 0);
        return TapAxis{ok, clamped_index(oh, Ho) * Wo, Val()};
      };
      if (phased_h) g.kh = uint32_t(taps_per_phase(s.kh, s.stride_h));
      g.src_base = (n * uint32_t(s.cout) + g_idx * opg) * (Ho * Wo);
      g.w_base = (g_idx * opg * cpg + cil) * taps;
      g.src_channel_stride = Ho * Wo, g.w_channel_stride = cpg * taps;
      g.blocks = cib, g.w_block_stride = taps;
      g.loop_rows = c.row_loop;
      g.pairs = t == Type::F32 && Wo % 2 == 0;
      std::vector<Var> acc = emit_row_gather(kb, t, gy, w, g);
      Val x_row = cib == 1 ? o * W : ((n * uint32_t(s.cin) + ci) * H + hi) * W;
      for (uint32_t b = 0; b < cib; ++b)
        for (uint32_t j = 0; j < W; ++j) gx[x_row + (b * H * W + j)] = acc[b * W + j].get();
    });
    return {kb.finish(), groups_for_threads(rows_total, c.wg)};
  }

  // One invocation per result element of c_block neighbouring input channels (of one group): every grad_y
  // element it loads serves all of them.
  const uint32_t cib = c.c_block, ci_count = uint32_t(s.cin) / cib, items = total / cib;
  kb.if_(o < items, [&] {
    Val wi = o % W, t1 = o / W;
    Val hi = t1 % H, t2 = t1 / H;
    Val cb = t2 % ci_count, n = t2 / ci_count;
    Val ci = cib == 1 ? cb : cb * cib;
    Val g = ci / cpg, cil = ci % cpg;
    Val gy_base = (n * uint32_t(s.cout) + g * opg) * (Ho * Wo);
    Val w_base = (g * opg * cpg + cil) * taps;
    // Tap r of output row oh reads input row oh*stride - pad + r*dil; so this row is read by tap r of
    // oh = (hi + pad - r*dil) / stride when that is a whole number in [0, Ho).
    auto axis = [&](Val i, Val tap, int64_t pad, int64_t dil, int64_t stride, uint32_t out, uint32_t out_scale,
                    uint32_t w_scale) {
      Val th = cast(i, Type::I32) + int32_t(pad) - cast(tap, Type::I32) * int32_t(dil);
      Val thc = max(th, 0);
      Val oh = thc / int32_t(stride);
      Val ok = (th >= 0) & (oh < int32_t(out));
      if (stride > 1) ok = ok & (thc % int32_t(stride) == 0);
      return TapAxis{ok, clamped_index(oh, out) * out_scale, tap * w_scale};
    };
    auto row = [&](Val r) {
      return phased_h ? phased_tap(hi, r, s.pad_h, s.stride_h, s.kh, Ho, Wo, uint32_t(s.kw))
                      : axis(hi, r, s.pad_h, s.dil_h, s.stride_h, Ho, Wo, uint32_t(s.kw));
    };
    auto col = [&](Val c) {
      return phased_w ? phased_tap(wi, c, s.pad_w, s.stride_w, s.kw, Wo, 1, 1) : axis(wi, c, s.pad_w, s.dil_w, s.stride_w, Wo, 1, 1);
    };
    const int64_t rows_of_taps = phased_h ? taps_per_phase(s.kh, s.stride_h) : s.kh;
    const int64_t cols_of_taps = phased_w ? taps_per_phase(s.kw, s.stride_w) : s.kw;
    ChannelSums sums(kb, t, cib, w_base, taps);  // the block's input channels
    // Each output channel of the group (its index within the group: oc) reads grad_y and its weights.
    for_each_channel_tap(kb, rows_of_taps, cols_of_taps, row, col, opg, [&](Val oc, const TapAxis& rr, const TapAxis& cc) {
      Val gv = masked(both(rr.ok, cc.ok), gy[gy_base + oc * (Ho * Wo) + rr.offset + cc.offset]);
      for (uint32_t j = 0; j < cib; ++j) {
        Val wv = w[sums.w_bases[j] + oc * (cpg * taps) + rr.w_offset + cc.w_offset];
        sums.acc[j] = fma(gv, wv, sums.acc[j]);
      }
    });
    sums.store(gx, o, [&] { return ((n * uint32_t(s.cin) + ci) * H + hi) * W + wi; }, H * W);
  });
  return {kb.finish(), groups_for_threads(items, c.wg)};
}

namespace {

// How conv2d_grad_weight tiles its work: a workgroup owns one (cout, cin-in-group) pair, a block of
// rows x cols taps of the window, and one split of the N x Ho x Wo sum. Each invocation keeps one running sum
// per tap of its block in registers, so every grad_y element it reads (and the index decoding) serves all
// those taps at once.
struct GradWeightTiling {
  uint32_t rows = 1, cols = 1;          // taps per block along kh and kw
  uint32_t row_blocks = 1, col_blocks = 1;
  uint32_t wg = 32;                     // invocations per workgroup
  uint32_t splits = 1;                  // workgroups sharing one sum over N x Ho x Wo (partials, then a sum launch)
  uint32_t terms = 0;                   // N x Ho x Wo, or N x Ho in row mode
  bool row_mode = false;
  uint32_t co_block = 1;                // output channels per workgroup
  bool staged = false;                  // row mode through workgroup memory; terms are then N (whole images)
  uint32_t blocks() const { return row_blocks * col_blocks; }
};

// At most this many per-tap sums live in registers per invocation (and this many with several output channels).
constexpr uint32_t kMaxBlockTaps = 32;
constexpr uint32_t kMaxBlockSums = 64;

// The staged row mode's layout in workgroup memory, per step of `images` images: their grad_y planes of the
// workgroup's co_block output channels, then their input planes of its input channel, each as in memory.
struct StagedLayout {
  uint32_t images = 0;                          // per step: invocations / output rows
  uint32_t gy_per_image = 0, x_per_image = 0;   // elements
  uint32_t gy_at = 0, x_at = 0;                 // element offsets of the two regions
  uint32_t elements = 0;                        // both regions
};

StagedLayout staged_layout(const Conv2dShape& s, uint32_t wg, uint32_t co_block) {
  StagedLayout l;
  l.images = uint32_t(wg / std::max<int64_t>(s.ho, 1));
  l.gy_per_image = uint32_t(co_block * s.ho * s.wo);
  l.x_per_image = uint32_t(s.h * s.w);
  l.gy_at = 0;
  l.x_at = l.images * l.gy_per_image;
  l.elements = l.x_at + l.images * l.x_per_image;
  return l;
}

// Staged configs' splits: about ten workgroups per core of a 132-core GPU, each split at least two steps of images.
uint32_t staged_splits(const Conv2dShape& s, uint32_t co_block, uint32_t wg) {
  const uint64_t pairs = std::max<uint64_t>(1, uint64_t(s.cout / co_block) * uint64_t(s.cin_per_group()));
  const uint64_t images_per_step = std::max<uint32_t>(1, staged_layout(s, wg, co_block).images);
  uint64_t want = (1320 + pairs - 1) / pairs;
  want = std::min<uint64_t>(want, std::max<uint64_t>(1, uint64_t(s.n) / (2 * images_per_step)));
  return uint32_t(std::clamp<uint64_t>(want, 1, kMaxStagedSplits));
}

GradWeightTiling grad_weight_tiling(const Conv2dShape& s, Type t) {
  GradWeightTiling g;
  g.cols = uint32_t(std::min<int64_t>(s.kw, kMaxBlockTaps));
  g.rows = uint32_t(std::max<int64_t>(1, std::min<int64_t>(s.kh, kMaxBlockTaps / g.cols)));
  g.row_blocks = uint32_t((s.kh + g.rows - 1) / g.rows);
  g.col_blocks = uint32_t((s.kw + g.cols - 1) / g.cols);
  // Row mode: an invocation takes whole output rows (n, ho), so grad_y's row and each input row it needs are
  // loaded once for all the taps they feed; needs the whole window width in one block and short rows.
  g.row_mode = g.col_blocks == 1 && s.wo <= kMaxRowCols;
  g.terms = g.row_mode ? index_u32(s.n * s.ho, "conv2d_grad_weight rows per weight")
                       : index_u32(s.n * s.ho * s.wo, "conv2d_grad_weight terms per weight");
  const uint32_t block_taps = g.rows * g.cols;
  const uint32_t elem = t == Type::F64 ? 8 : 4;
  uint32_t wg = g.row_mode ? 64 : 256;
  while (wg > 32 && block_taps * wg * elem > kMinSharedBytes) wg /= 2;
  g.wg = std::min(wg, pow2_clamped(std::max<uint32_t>(g.terms, 1), 32, 256));
  // Enough workgroups to fill a large GPU (~132: one per SM of an H100) where the sum is long enough to keep
  // each invocation busy (>= 8 terms, or 2 rows); one split per 32 terms (8 rows) per invocation at least, so
  // no invocation loops long; never more than 64 partials per weight. Each split costs a reduction, which
  // is what a CPU device pays most for, so no more than that.
  const uint64_t pairs = uint64_t(s.cout) * uint64_t(s.cin_per_group()) * g.blocks();
  const uint64_t per_wg_min = uint64_t(g.wg) * (g.row_mode ? 2 : 8), per_wg_max = uint64_t(g.wg) * (g.row_mode ? 8 : 32);
  uint64_t want = std::max<uint64_t>((g.terms + per_wg_max - 1) / per_wg_max, (132 + pairs - 1) / std::max<uint64_t>(pairs, 1));
  want = std::min<uint64_t>(want, (g.terms + per_wg_min - 1) / per_wg_min);
  g.splits = uint32_t(std::clamp<uint64_t>(want, 1, 64));
  return g;
}

// Row mode needs the block to span the window's width and output rows short enough to unroll.
bool row_mode_fits(const Conv2dShape& s, uint32_t block_cols) { return block_cols == s.kw && s.wo <= kMaxRowCols; }

// The tiling a config asks for; throws std::invalid_argument for one the shape or the limits cannot take.
GradWeightTiling tiling_of(const Conv2dShape& s, Type t, const GradWeightConfig& c, const Limits& limits) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d_grad_weight: config '{}' {}", c.config().text(), why));
  };
  const uint32_t max_splits = c.staged ? kMaxStagedSplits : 64;
  if (c.splits < 1 || c.splits > max_splits) fail(fmt::format("has {} splits (1..{})", c.splits, max_splits));
  if (c.block_rows < 1 || c.block_rows > s.kh || c.block_cols < 1 || c.block_cols > s.kw ||
      c.block_rows * c.block_cols > kMaxBlockTaps)
    fail(fmt::format("needs a block of at most {} taps within the {}x{} window", kMaxBlockTaps, s.kh, s.kw));
  if (c.wg < 1 || c.wg > 1024 || (c.wg & (c.wg - 1)) != 0) fail("needs a power-of-two workgroup of 1..1024 invocations");
  if (c.co_block < 1 || s.cout_per_group() % c.co_block != 0 || c.block_rows * c.block_cols * c.co_block > kMaxBlockSums)
    fail(fmt::format("needs a co_block dividing the {} output channels per group, at most {} sums per invocation",
                     s.cout_per_group(), kMaxBlockSums));
  const uint32_t elem = t == Type::F64 ? 8 : 4;
  if (uint64_t(c.block_rows) * c.block_cols * c.co_block * c.wg * elem > std::max(limits.shared_bytes, kMinSharedBytes))
    fail("needs more workgroup memory than the device has");
  if (c.row_mode && !row_mode_fits(s, c.block_cols)) fail("takes whole output rows, which this shape does not allow");
  if (c.staged) {
    if (!c.row_mode) fail("stages rows through workgroup memory, which needs row_mode");
    if (s.ho > c.wg) fail(fmt::format("stages whole images, which needs a workgroup of at least their {} output rows", s.ho));
    const StagedLayout l = staged_layout(s, c.wg, c.co_block);
    const uint64_t bytes = uint64_t(std::max(l.elements, c.block_rows * c.block_cols * c.co_block * c.wg)) * elem;
    if (bytes > std::max(limits.shared_bytes, kMinSharedBytes))
      fail(fmt::format("stages {} bytes of images in workgroup memory, more than the device has", bytes));
  }
  GradWeightTiling g;
  g.rows = c.block_rows, g.cols = c.block_cols;
  g.row_blocks = uint32_t((s.kh + g.rows - 1) / g.rows);
  g.col_blocks = uint32_t((s.kw + g.cols - 1) / g.cols);
  g.row_mode = c.row_mode;
  g.terms = g.row_mode ? index_u32(s.n * s.ho, "conv2d_grad_weight rows per weight")
                       : index_u32(s.n * s.ho * s.wo, "conv2d_grad_weight terms per weight");
  g.staged = c.staged;
  if (g.staged) g.terms = index_u32(s.n, "conv2d_grad_weight images");
  g.wg = c.wg;
  g.splits = c.splits;
  g.co_block = c.co_block;
  return g;
}

// Every weight in one workgroup (conv2d_grad_weight_images_kernel.h) on GPUs, for small convolutions over many images:
// at least 64 invocations owning sums (co_block 4, else 2, else 1 output channels each) and 16 images per split
// leaving at least 256 splits. LeNet's second convolution at batch 8192 on the H100 (fresh processes, forced
// configs): 0.419 -> 0.214 ms on cuda:0 (co_block 4, 512 splits; 256: 0.228, co_block 2: 0.250, 8: 0.226) and
// 0.427 -> 0.244 ms on vulkan:0 (256 splits: 0.243, but its partial sums' launch takes 0.010 ms instead of 0.018).
//
// Where fewer own sums (LeNet's first convolution: 6 output channels x 5 window rows), co_block 2 with each owner's
// rows split among invocations (row_split), at least 192 of them, in 256 splits. LeNet's first convolution at batch
// 8192 on the H100 (same method, the partial sums' launch included): the staged rows 0.148 ms on cuda:0 and 0.152 on
// vulkan:0 against 0.121 and 0.112 (co_block 2, 14 row groups: 210 invocations; 512 splits 0.123 / 0.122, their
// sums take longer; 28 row groups 0.136 / 0.117; co_block 3 or 6, or 1 with 7 row groups: 0.122-0.148 / 0.101-0.148).
std::optional<GradWeightConfig> all_pairs_heuristic(const Conv2dShape& s, Type t, const Limits& limits) {
  if (limits.cpu) return std::nullopt;
  const uint32_t splits = uint32_t(std::min<int64_t>(s.n / 16, 512));
  if (splits < 256) return std::nullopt;
  auto measured = [&](const GradWeightConfig& c) -> std::optional<GradWeightConfig> {
    // Where it was measured to pay: a small staged image (LeNet's: 20 KB and 23 KB), so that many workgroups share
    // a core.
    if (grad_weight_images_elements(s, c) * 4 > kMeasuredStagedBytes) return std::nullopt;
    try {
      check_grad_weight_images(s, t, c, limits);
      return c;
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // not for this shape (strides, groups, long rows, an image too large for workgroup memory)
    }
  };
  if (grad_weight_images_owners(s, 1) < 64) {
    const uint32_t cob = s.cout % 2 == 0 ? 2 : 1, owners = grad_weight_images_owners(s, cob);
    for (uint32_t rs : {4u, 7u, 14u, 28u})
      if (rs <= s.ho && owners * rs >= 192 && owners * rs <= 1024) {
        GradWeightConfig c{uint32_t(s.kh), uint32_t(s.kw), (owners * rs + 31) / 32 * 32, 256, true, cob};
        c.all_pairs = true;
        c.row_split = rs;
        return measured(c);
      }
    return std::nullopt;
  }
  for (uint32_t cob : {4u, 2u, 1u}) {
    if (s.cout % cob != 0) continue;
    const uint32_t owners = grad_weight_images_owners(s, cob);
    if (owners < 64 || owners > 1024) continue;
    // Where it was measured to pay: a small staged image (LeNet's: 20 KB), so that many workgroups share a core.
    GradWeightConfig c{uint32_t(s.kh), uint32_t(s.kw), pow2_clamped(owners, 32, 1024), splits, true, cob};
    c.all_pairs = true;
    // Through NVIDIA's Vulkan compiler, owners' rows split in two where that still makes at most 256 invocations
    // (LeNet's second convolution: 0.244 -> 0.229 ms on vulkan:0; through ptxas 0.214 either way, so PTX keeps one),
    // and half the splits, at least 256 (twice the images per split: the step 1.387 -> 1.379 ms on the H100).
    if (!limits.ptx && owners * 2 <= 256) {
      c.row_split = 2;
      c.wg = pow2_clamped(owners * 2, 32, 1024);
      c.splits = std::max(256u, splits / 2);
    }
    return measured(c);
  }
  return std::nullopt;
}

}  // namespace

Config GradWeightConfig::config() const {
  Config c{{"block_rows", block_rows}, {"block_cols", block_cols}, {"wg", wg}, {"splits", splits},
           {"row_mode", row_mode ? 1 : 0}};
  if (co_block > 1) c.set("co_block", co_block);  // configs without it keep the text tuning caches already hold
  if (staged) c.set("staged", 1);
  if (per_core > 0) c.set("per_core", per_core);
  if (all_pairs) c.set("all_pairs", 1);
  if (row_split > 1) c.set("row_split", row_split);
  return c;
}

GradWeightConfig GradWeightConfig::from(const Config& c) {
  auto u = [&](const char* name, int64_t hi) {
    int64_t v = c.get(name);
    if (v < 0 || v > hi) throw std::invalid_argument(fmt::format("conv2d_grad_weight config '{}': {} must be 0..{}", c.text(), name, hi));
    return uint32_t(v);
  };
  GradWeightConfig g{u("block_rows", 1024), u("block_cols", 1024), u("wg", 1024), u("splits", kMaxStagedSplits), u("row_mode", 1) == 1};
  if (c.has("co_block")) g.co_block = u("co_block", 64);
  if (c.has("staged")) g.staged = u("staged", 1) == 1;
  if (c.has("per_core")) g.per_core = u("per_core", 32);
  if (c.has("all_pairs")) g.all_pairs = u("all_pairs", 1) == 1;
  if (c.has("row_split")) g.row_split = u("row_split", 1024);
  return g;
}

namespace {

// The heuristic among the row and element kernels (what conv2d_grad_weight_heuristic takes where all_pairs does not
// apply, and the base of the tuner's other candidates).
GradWeightConfig rows_heuristic(const Conv2dShape& s, Type t, const Limits& limits) {
  GradWeightTiling g = grad_weight_tiling(s, t);
  GradWeightConfig c{g.rows, g.cols, g.wg, g.splits, g.row_mode};
  // Rows of a few input channels feeding an even number of output channels (LeNet's second convolution, 6 -> 16):
  // two output channels per workgroup of 32, each input row loaded once for both. Measured on the H100 at batch 8192
  // (fresh processes): 0.648 -> 0.462 ms on cuda:0, 0.635 -> 0.425 ms on vulkan:0. Not on CPU devices, unmeasured
  // there.
  if (!limits.cpu && g.row_mode && s.cin_per_group() >= 2 && s.cin_per_group() <= 8 && s.cout_per_group() % 2 == 0 &&
      g.rows * g.cols * 2 <= kMaxBlockSums) {
    c.co_block = 2;
    c.wg = 32;
  }
  // A CPU device needs few workgroups and pays for every split's partial sums: two output channels per invocation
  // wherever they fit, each input row loaded once for both, and only the splits that make 16 workgroups (the most
  // threads lavapipe runs). On lavapipe at batch 64 LeNet's weight gradients took 15.4 ms (first convolution, 14
  // splits of one channel) and 16.0 ms (second, 2 splits) in the GPU heuristic's rows, 2.1-4.2 and 6.0-9.2 ms in the
  // tuner's picks of this form (docs/PERFORMANCE.md, "Lavapipe (CPU device)").
  if (limits.cpu && g.row_mode) {
    c.wg = 32;
    if (s.cout_per_group() % 2 == 0 && g.rows * g.cols * 2 <= kMaxBlockSums) c.co_block = 2;
    const uint64_t unsplit = uint64_t(s.cout / c.co_block) * uint64_t(s.cin_per_group()) * g.blocks();
    c.splits = uint32_t(std::clamp<uint64_t>((16 + unsplit - 1) / std::max<uint64_t>(unsplit, 1), 1, g.splits));
    return c;
  }
  // Row mode's many sums (LeNet's second convolution: 25 taps x 2 channels, plus both grad_y rows) took 187 registers
  // on cuda:0, 10 warps per core. Asking for 512 resident invocations per core caps them at 128: on an H200's cuda:0 at
  // batch 8192, 0.461 -> 0.418 ms (640 invocations: 80 registers, spills, 0.581 ms; 1024: 1.79 ms). Only where the
  // launch has that many workgroups for each core of a 132-core GPU: at batch 64 (96 workgroups) the capped kernel
  // made cuda:0's step 2% slower. Other backends ignore the request.
  const uint32_t per_core = std::max<uint32_t>(1, per_core_for(512, c.wg));
  const uint64_t groups = uint64_t(s.cout / c.co_block) * uint64_t(s.cin_per_group()) * g.blocks() * c.splits;
  if (!limits.cpu && g.row_mode && g.rows * g.cols * c.co_block >= 32 && groups >= 132ull * per_core)
    c.per_core = per_core;
  // Few weights over a long sum (LeNet's first convolution at batch 8192: 6 (cout, cin) pairs): where the plain row
  // mode wants more than its 64 splits and those leave fewer workgroups than a GPU has cores times four, stage whole
  // images through workgroup memory instead, whose splits may go beyond 64. Measured on the H100 at batch 8192 (fresh
  // processes): 0.268 -> 0.143 ms on cuda:0 (also the tuner's pick), 0.251 -> 0.143 ms on vulkan:0. The second
  // convolution (48 pairs x 64 splits) gained nothing from staging (0.46 -> 0.44-0.62 ms on cuda:0, 0.43 -> 0.47-0.60
  // on vulkan:0), so it keeps rows.
  if (!limits.cpu && g.row_mode && c.co_block == 1 && g.splits == 64 &&
      uint64_t(s.cout) * uint64_t(s.cin_per_group()) * g.splits < 528) {
    GradWeightConfig staged{g.rows, g.cols, 64, staged_splits(s, 1, 64), true, 1, true};
    try {
      tiling_of(s, t, staged, limits);
      return staged;
    } catch (const std::invalid_argument&) {
      // Not for this shape (rows longer than the workgroup, images too large for workgroup memory): plain rows.
    }
  }
  return c;
}

}  // namespace

GradWeightConfig conv2d_grad_weight_heuristic(const Conv2dShape& s, Type t, const Limits& limits) {
  if (auto all = all_pairs_heuristic(s, t, limits)) return *all;
  return rows_heuristic(s, t, limits);
}

std::vector<GradWeightConfig> conv2d_grad_weight_candidates(const Conv2dShape& s, Type t, const Limits& limits) {
  // The heuristic first, then the row and element kernels' heuristic (where they differ), whose variations follow.
  const GradWeightConfig h = rows_heuristic(s, t, limits);
  std::vector<GradWeightConfig> out{conv2d_grad_weight_heuristic(s, t, limits)};
  if (out.front() != h) out.push_back(h);
  auto add = [&](GradWeightConfig c) {
    if (c.wg > limits.max_invocations || std::find(out.begin(), out.end(), c) != out.end()) return;
    try {
      if (c.all_pairs) {
        check_grad_weight_images(s, t, c, limits);
        out.push_back(c);
        return;
      }
      GradWeightTiling g = tiling_of(s, t, c, limits);
      // Every split should give each invocation at least one term (staged: each step its images) on average.
      const uint64_t per_split = c.staged ? staged_layout(s, c.wg, c.co_block).images : c.wg;
      if (c.splits > 1 && uint64_t(c.splits) * per_split > std::max<uint64_t>(g.terms, 1)) return;
      out.push_back(c);
    } catch (const std::invalid_argument&) {
      // Not a config this shape takes: not a candidate.
    }
  };
  std::vector<uint32_t> splits;
  // Two splits as well: what a CPU of few cores picks for few pairs (LeNet's first convolution on lavapipe).
  for (uint32_t sp : {1u, 2u, (h.splits + 1) / 2, h.splits, 2 * h.splits, 4 * h.splits})
    if (sp <= 64 && std::find(splits.begin(), splits.end(), sp) == splits.end()) splits.push_back(sp);
  std::vector<bool> modes{h.row_mode};
  if (h.row_mode || row_mode_fits(s, h.block_cols)) modes.push_back(!h.row_mode);  // element mode always fits
  for (bool mode : modes)
    for (uint32_t wg : {32u, 64u, 128u, 256u})
      for (uint32_t sp : splits) add({h.block_rows, h.block_cols, wg, sp, mode});
  // One row of taps per block: fewer register sums, more workgroups.
  if (h.block_rows > 1)
    for (uint32_t sp : splits) add({1, h.block_cols, h.wg, sp, h.row_mode});
  // Several output channels per workgroup, each input row loaded once for all of them (small-channel layers).
  for (uint32_t cob : {2u, 4u})
    for (uint32_t wg : {32u, 64u, 128u})
      for (uint32_t sp : splits) add({h.block_rows, h.block_cols, wg, sp, h.row_mode, cob});
  // The heuristic's row mode (staged or not) with more or fewer registers per invocation: no request, or 384 to 1024
  // invocations resident.
  if (!limits.cpu && h.row_mode)
    for (const GradWeightConfig& c : with_requests(h, {0, 384, 512, 640, 768, 1024})) add(c);
  // Rows staged through workgroup memory, whole images per step: splits divide the images.
  if (row_mode_fits(s, h.block_cols))
    for (uint32_t cob : {1u, 2u})
      for (uint32_t wg : {32u, 64u, 128u}) {
        const uint32_t base = staged_splits(s, cob, wg);
        for (uint32_t sp : {base / 2, base, 2 * base})
          if (sp >= 1 && sp <= kMaxStagedSplits) add({h.block_rows, h.block_cols, wg, sp, true, cob, true});
      }
  // Every weight in one workgroup, images staged one per step (small convolutions over many images).
  for (uint32_t cob : {1u, 2u, 4u, 8u}) {
    if (s.cout % cob != 0) continue;
    const uint32_t wg = pow2_clamped(std::max<uint32_t>(1, uint32_t(s.cout / cob * s.cin * s.kh)), 32, 1024);
    for (uint32_t sp : {1u, 2u, 64u, 128u, 256u, 512u}) {
      GradWeightConfig c{uint32_t(s.kh), uint32_t(s.kw), wg, sp, true, cob};
      c.all_pairs = true;
      add(c);
    }
  }
  // ... with each owner's rows split among several invocations where few own sums (the first convolution's 5 window
  // rows x 6 output channels: 4 to 28 row groups; up to 128 owners, as the second convolution's 120 at co_block 4:
  // two), in workgroups of whole subgroups.
  for (uint32_t cob : {1u, 2u, 3u, 4u, 6u, 8u}) {
    if (s.cout % cob != 0) continue;
    const uint32_t owners = uint32_t(s.cout / cob * s.cin * s.kh);
    if (owners > 128) continue;
    for (uint32_t rs : owners < 64 ? std::vector<uint32_t>{4, 7, 14, 28} : std::vector<uint32_t>{2}) {
      if (rs > s.ho || owners * rs > 1024) continue;
      // Many splits for many images (at least 16 each), one or two for a few.
      for (uint32_t sp : s.n >= 256 * 16 ? std::vector<uint32_t>{256, 512} : std::vector<uint32_t>{1, 2}) {
        GradWeightConfig c{uint32_t(s.kh), uint32_t(s.kw), (owners * rs + 31) / 32 * 32, sp, true, cob};
        c.all_pairs = true;
        c.row_split = rs;
        add(c);
      }
    }
  }
  return out;
}

uint32_t conv2d_grad_weight_splits(const Conv2dShape& s, Type t) { return grad_weight_tiling(s, t).splits; }

HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, Type t) {
  return conv2d_grad_weight_kernel(s, t, 1);
}

HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, Type t, uint32_t splits) {
  std::string name = "conv2d_grad_weight_" + s.text() + "_" + float_suffix(t, "conv2d_grad_weight");
  check_sizes(s);
  if (s.cout * s.cin_per_group() * s.kh * s.kw == 0) return empty_result(name);
  GradWeightConfig c = conv2d_grad_weight_heuristic(s, t);
  c.splits = splits;
  return conv2d_grad_weight_kernel(s, t, c);
}

HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, Type t, const GradWeightConfig& c, const Limits& limits) {
  std::string name = "conv2d_grad_weight_" + s.text() + "_" + float_suffix(t, "conv2d_grad_weight");
  check_sizes(s);
  const uint32_t weights = uint32_t(s.cout * s.cin_per_group() * s.kh * s.kw);
  if (weights == 0) return empty_result(name);
  if (c.all_pairs) return conv2d_grad_weight_images_kernel(s, t, c, limits);
  if (c.row_split != 1)
    throw std::invalid_argument(fmt::format("conv2d_grad_weight {}: config '{}' splits rows among invocations, which "
                                            "only all_pairs does", s.text(), c.config().text()));
  const uint32_t splits = c.splits;
  GradWeightTiling g = tiling_of(s, t, c, limits);
  index_u32(int64_t(weights) * splits, "conv2d_grad_weight partial sums");
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t KH = uint32_t(s.kh), KW = uint32_t(s.kw), taps = KH * KW;
  const uint32_t wg = g.wg, block_taps = g.rows * g.cols, cob = g.co_block, sums = block_taps * cob;
  const uint32_t pairs = uint32_t(s.cout) / cob * cpg;  // (block of output channels, input channel in its group)
  const uint32_t chunk = (g.terms + splits - 1) / splits;  // terms per split
  const uint64_t groups = uint64_t(pairs) * g.blocks() * splits;

  KernelBuilder kb(name + fmt::format("_wg{}_b{}x{}_s{}{}{}{}", wg, g.rows, g.cols, splits,
                                      g.row_mode ? (g.staged ? "_rows_staged" : "_rows") : "",
                                      cob > 1 ? fmt::format("_co{}", cob) : "",
                                      c.per_core > 0 ? fmt::format("_pc{}", c.per_core) : ""),
                   wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf x = kb.buffer("x", t, Access::Read);
  // splits == 1: grad_w itself; otherwise partial sums [splits][weights] that conv2d_grad_weight_sum_kernel adds.
  Buf out = kb.buffer(splits == 1 ? "grad_w" : "partial_grad_w", t, Access::Write);
  // Staged: one array holds the staged images and, after the last step, the reduction's partial sums.
  const StagedLayout staged = g.staged ? staged_layout(s, wg, cob) : StagedLayout{};
  Shared part = kb.shared(g.staged ? "staged" : "partial", t, std::max(sums * wg, staged.elements));
  Val lid = kb.local_id();
  Val e = kb.group_id();
  // Uniform per workgroup: groups past the work (a folded grid) skip everything, barriers included.
  kb.if_(e < uint32_t(groups), [&] {
    Val pair = e % pairs, t1 = e / pairs;
    Val block = t1 % g.blocks(), split = t1 / g.blocks();
    Val cil = pair % cpg, co = cob == 1 ? pair / cpg : (pair / cpg) * cob;  // the block's first output channel
    Val ci = (co / opg) * cpg + cil;
    // The block's first tap; constant 0 when one block covers the axis.
    Val r0 = g.row_blocks == 1 ? kb.u32(0) : (block / g.col_blocks) * g.rows;
    Val c0 = g.col_blocks == 1 ? kb.u32(0) : (block % g.col_blocks) * g.cols;
    const bool rows_ragged = KH % g.rows != 0, cols_ragged = KW % g.cols != 0;
    // acc[b * block_taps + tap of the block]: output channel co + b.
    std::vector<Var> acc;
    for (uint32_t i = 0; i < sums; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
    Val begin = split * chunk;
    Val end = splits == 1 ? kb.u32(g.terms) : min(begin + chunk, g.terms);
    // Row mode's body: output row ho of one image, whose grad_y row starts at gy_row (channel co; channel co + b is
    // b x Ho x Wo further) and whose input channel ci starts at x_base, read through load_gy / load_x (memory, or the
    // staged copy in workgroup memory). Every column of the row and of the window (one block covers them all,
    // starting at column 0) is a constant here.
    auto row_body = [&](Val ho, Val gy_row, Val x_base, const std::function<Val(Val)>& load_gy,
                        const std::function<Val(Val)>& load_x) {
      std::vector<std::vector<Val>> gv(cob);  // gv[b][j]: grad_y of channel co + b at column j
      for (uint32_t b = 0; b < cob; ++b)
        for (uint32_t j = 0; j < Wo; ++j) gv[b].push_back(load_gy(gy_row + (b * Ho * Wo + j)));
      Val hi0 = cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h);
      auto src_col = [&](int64_t j, int64_t c) -> int64_t {
        int64_t wi = j * s.stride_w - s.pad_w + c * s.dil_w;
        return wi >= 0 && wi < s.w ? wi : -1;
      };
      for (uint32_t i = 0; i < g.rows; ++i) {
        Val tap = r0 + i;
        Val hi = hi0 + cast(tap, Type::I32) * int32_t(s.dil_h);
        Val ok;
        if (s.pad_h > 0 || rows_ragged) ok = (hi >= 0) & (hi < int32_t(H));
        if (rows_ragged) ok = ok & (tap < KH);
        Val x_row = x_base + ((s.pad_h > 0 || rows_ragged) ? clamped_index(hi, H) : cast(hi, Type::U32)) * W;
        std::vector<Val> xv(size_t(s.w));
        for (int64_t j = 0; j < s.wo; ++j)
          for (int64_t c = 0; c < s.kw; ++c)
            if (int64_t col = src_col(j, c); col >= 0 && !xv[size_t(col)].valid())
              xv[size_t(col)] = masked(ok, load_x(x_row + uint32_t(col)));
        for (uint32_t b = 0; b < cob; ++b)
          for (uint32_t c = 0; c < KW; ++c) {
            Val sum;
            for (int64_t j = 0; j < s.wo; ++j)
              if (int64_t col = src_col(j, c); col >= 0) {
                Val p = gv[b][size_t(j)] * xv[size_t(col)];
                sum = sum.valid() ? sum + p : p;
              }
            if (sum.valid()) acc[b * block_taps + i * g.cols + c] += sum;
          }
      }
    };
    if (g.terms > 0 && g.staged) {
      // Staged row mode: `staged.images` whole images per step (terms are images). The workgroup first copies their
      // grad_y planes (channels co .. co + cob - 1: contiguous in memory) and input planes (channel ci) into
      // workgroup memory, all loads issued before any store; then invocation lid < images x Ho takes output row
      // lid % Ho of image lid / Ho from there.
      const StagedLayout& l = staged;
      const uint32_t N = uint32_t(s.n), plane = Ho * Wo;
      const uint32_t gy_image = uint32_t(s.cout) * plane, x_image = uint32_t(s.cin) * (H * W);
      kb.for_(begin, end, kb.u32(l.images), [&](Val img0) {
        kb.barrier();  // every invocation is done with the previous step's images
        // Images past N read the last one (their rows are skipped below).
        auto range = [&](uint32_t count, uint32_t per_image, uint32_t at, const Buf& src, Val image_stride, Val plane0) {
          return StagedRange{count, [=, &src](Val e) -> std::pair<Val, Val> {
            Val im = e / per_image, off = e % per_image;
            Val n = min(img0 + im, N - 1);
            return {at + e, src[n * image_stride + plane0 + off]};
          }};
        };
        stage_ranges(kb, part, lid, wg,
                     {range(l.images * l.gy_per_image, l.gy_per_image, l.gy_at, gy, kb.u32(gy_image), co * plane),
                      range(l.images * l.x_per_image, l.x_per_image, l.x_at, x, kb.u32(x_image), ci * (H * W))});
        kb.barrier();
        Val im = lid / Ho, ho = lid % Ho;
        kb.if_((lid < l.images * Ho) & (img0 + im < end), [&] {
          row_body(ho, l.gy_at + im * l.gy_per_image + ho * Wo, l.x_at + im * l.x_per_image,
                   [&](Val i) { return Val(part[i]); }, [&](Val i) { return Val(part[i]); });
        });
      });
      kb.barrier();  // the reduction below reuses the staged images' memory
    } else if (g.terms > 0 && g.row_mode) {
      // Row mode: one output row (n, ho) per step, straight from memory.
      kb.for_(begin + lid, end, kb.u32(wg), [&](Val idx) {
        Val ho = idx % Ho, n = idx / Ho;
        row_body(ho, (n * uint32_t(s.cout) + co) * (Ho * Wo) + ho * Wo, (n * uint32_t(s.cin) + ci) * (H * W),
                 [&](Val i) { return Val(gy[i]); }, [&](Val i) { return Val(x[i]); });
      });
    } else if (g.terms > 0) {
      kb.for_(begin + lid, end, kb.u32(wg), [&](Val idx) {
        Val pos = idx % (Ho * Wo), n = idx / (Ho * Wo);
        Val ho = pos / Wo, wo = pos % Wo;
        std::vector<Val> gv;  // channel co + b
        for (uint32_t b = 0; b < cob; ++b) gv.push_back(gy[(n * uint32_t(s.cout) + co) * (Ho * Wo) + (b * Ho * Wo) + pos]);
        Val x_base = (n * uint32_t(s.cin) + ci) * (H * W);
        Val hi0 = cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h);
        Val wi0 = cast(wo, Type::I32) * int32_t(s.stride_w) - int32_t(s.pad_w);
        // Per row and per column of the block: the index offset (clamped into range) and its validity. Taps
        // past a ragged window edge read a clamped element and are masked (their sums are never written).
        auto axis = [&](Val start, Val base0, uint32_t i, int64_t dil, int64_t pad, uint32_t size, bool ragged,
                        uint32_t extent, uint32_t scale) {
          Val tap = start + i;
          Val v = base0 + cast(tap, Type::I32) * int32_t(dil);
          Val ok;
          if (pad > 0 || ragged) ok = (v >= 0) & (v < int32_t(size));
          Val offset = (pad > 0 || ragged) ? clamped_index(v, size) : cast(v, Type::U32);
          if (ragged) ok = ok & (tap < extent);
          return TapAxis{ok, offset * scale, Val()};
        };
        std::vector<TapAxis> rows, cols;
        for (uint32_t i = 0; i < g.rows; ++i) rows.push_back(axis(r0, hi0, i, s.dil_h, s.pad_h, H, rows_ragged, KH, W));
        for (uint32_t i = 0; i < g.cols; ++i) cols.push_back(axis(c0, wi0, i, s.dil_w, s.pad_w, W, cols_ragged, KW, 1));
        for (uint32_t i = 0; i < g.rows; ++i)
          for (uint32_t j = 0; j < g.cols; ++j) {
            Val xv = masked(both(rows[i].ok, cols[j].ok), x[x_base + rows[i].offset + cols[j].offset]);
            for (uint32_t b = 0; b < cob; ++b) {
              Var& a = acc[b * block_taps + i * g.cols + j];
              a = fma(gv[b], xv, a);
            }
          }
      });
    }
    // One tree per tap, all taps level by level: part[tap][lid], and at each level the tap x half additions
    // are spread over the whole workgroup. The pairing is fixed, so results do not depend on scheduling.
    for (uint32_t i = 0; i < sums; ++i) part[lid + i * wg] = acc[i].get();
    kb.barrier();
    for (uint32_t half = wg / 2; half > 0; half /= 2) {
      const uint32_t items = sums * half;
      kb.for_(lid, kb.u32(items), kb.u32(wg), [&](Val j) {
        Val at = (j / half) * wg + j % half;
        part[at] = part[at] + part[at + half];
      });
      kb.barrier();
    }
    kb.for_(lid, kb.u32(sums), kb.u32(wg), [&](Val item) {
      Val b = item / block_taps, tap = item % block_taps;
      Val r = r0 + tap / g.cols, c = c0 + tap % g.cols;
      Val inside = (r < KH) & (c < KW);
      if (!rows_ragged && !cols_ragged) inside = kb.boolean(true);
      kb.if_(inside, [&] {
        Val widx = ((co + b) * cpg + cil) * taps + r * KW + c;
        if (splits == 1)
          out[widx] = part[item * wg];
        else
          out[split * weights + widx] = part[item * wg];
      });
    });
  });
  return {kb.finish(), groups};
}

HeavyKernel conv2d_grad_weight_sum_kernel(const Conv2dShape& s, Type t, uint32_t splits, bool bias) {
  std::string name = "conv2d_grad_weight_sum_" + s.text() + fmt::format("_s{}_", splits) +
                     float_suffix(t, "conv2d_grad_weight") + (bias ? "_bias" : "");
  check_sizes(s);
  const uint32_t weights = uint32_t(s.cout * s.cin_per_group() * s.kh * s.kw);
  if (!bias) return split_sum_kernel(name, t, weights, splits);
  return split_sum_kernel(name, t, weights + uint32_t(s.cout), splits, weights);
}

std::string staged_rows_refusal(const Conv2dShape& s) {
  if (!s.dense_unit_stride()) return "needs stride 1, dilation 1 and one group";
  if (s.wo > kMaxRowCols) return fmt::format("takes output rows whole, which must be at most {} wide", kMaxRowCols);
  return "";
}

}  // namespace spire::lowering::heavy
