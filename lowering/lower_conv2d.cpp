// conv2d and its two gradients -> one direct kernel each (kernels/conv2d_kernels.h), how
// they spread their work tunable; each may instead be an implicit GEMM (conv2d_gemm_kernels.h), one more family
// of points in the same config space, and a 3x3 convolution at stride 1 (forward and both gradients) a Winograd
// transform around a batched matmul (conv2d_winograd_kernels.h), a third.
#include "lowering/fuse.h"
#include "kernels/channels_last_kernel.h"
#include "kernels/conv2d_forms.h"
#include "kernels/conv2d_gemm_kernels.h"
#include "kernels/conv2d_grad_weight_images_kernel.h"
#include "kernels/conv2d_mma_kernel.h"
#include "kernels/widen_kernel.h"
#include "kernels/pool2d_kernels.h"
#include "kernels/split_sum_kernel.h"
#include "kernels/conv2d_winograd_kernels.h"
#include "kernels/zero_fill_kernel.h"
#include "kernels/conv2d_kernels.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable_ops.h"
#include "op_harness/cases.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace spire::lowering {

namespace {

heavy::Conv2dShape shape_of(const graph::Node& node, const graph::Shape& x, const graph::Shape& w) {
  graph::Conv2dOptions o = graph::conv2d_options(node);
  return heavy::conv2d_shape(x, w, o.stride, o.padding, o.dilation, o.groups);
}

heavy::Config plain_tiling(const heavy::MatmulTiling& tl) { return tl.config(); }
// For the GEMM kernels that do not split K (the forward's, the unphased input gradient's): a split candidate would
// only time the same kernel again.
heavy::Config unsplit_tiling(const heavy::MatmulTiling& tl) {
  heavy::MatmulTiling unsplit = tl;
  unsplit.splits = 1;
  return unsplit.config();
}


// Each config once, at its first place.
std::vector<heavy::Config> unique_configs(const std::vector<heavy::Config>& configs) {
  std::vector<heavy::Config> out;
  for (const heavy::Config& c : configs)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

// The four launches: weights to U, input to V, M = U x V (one product per plane), M to the NCHW result. Buffers: x, w,
// y (for the input gradient: grad_y, w, grad_x, with s the equivalent forward convolution's shape and the weights
// flipped), then U [planes][Cout][Cin], V [planes][Cin][tiles] and M [planes][Cout][tiles] as scratch.
KernelProgram winograd_program(const heavy::Conv2dShape& s, kir::Type t, std::vector<ProgramBuffer> io,
                               const heavy::Config& c, bool flipped = false) {
  const uint32_t tile = heavy::conv2d_winograd_tile_of(c);
  const int64_t tiles = heavy::conv2d_winograd_tiles(s, tile), planes = heavy::conv2d_winograd_planes(tile);
  heavy::HeavyKernel weights = heavy::conv2d_winograd_weight_kernel(s, t, tile, flipped);
  heavy::HeavyKernel input = heavy::conv2d_winograd_input_kernel(s, t, tile);
  heavy::HeavyKernel product = heavy::matmul_kernel(heavy::conv2d_winograd_gemm_shape(s, tile), t, heavy::MatmulTiling::from(c));
  heavy::HeavyKernel output = heavy::conv2d_winograd_output_kernel(s, t, tile);
  KernelProgram p;
  p.buffers = std::move(io);
  const int32_t u = int32_t(p.buffers.size()), v = u + 1, m = u + 2;  // after the io list (a pooled form's is longer)
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, planes * s.cout * s.cin});
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, planes * s.cin * tiles});
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, planes * s.cout * tiles});
  p.launches.push_back({std::move(weights.kernel), {1, u}, weights.groups, {}});
  p.launches.push_back({std::move(input.kernel), {0, v}, input.groups, {}});
  p.launches.push_back({std::move(product.kernel), {u, v, m}, product.groups, {}});
  p.launches.push_back({std::move(output.kernel), {m, 2}, output.groups, {}});
  return p;
}

// The weight gradient by Winograd (conv2d_winograd_kernels.h): the input and gradient transforms, the products, one
// per plane (split over the tiles where their result is small), and the transform back, which adds the splits.
// Buffers: grad_y, x, grad_w, then V [planes][Cin][tiles], Gy [planes][tiles][Cout] and the products'
// [splits][planes][Cin][Cout] as scratch.
KernelProgram winograd_grad_weight_program(const heavy::Conv2dShape& s, kir::Type t, std::vector<ProgramBuffer> io,
                                           const heavy::Config& c) {
  const uint32_t tile = heavy::conv2d_winograd_tile_of(c);
  const heavy::MatmulTiling tl = heavy::MatmulTiling::from(c);
  const int64_t tiles = heavy::conv2d_winograd_tiles(s, tile), planes = heavy::conv2d_winograd_planes(tile);
  heavy::HeavyKernel input = heavy::conv2d_winograd_input_kernel(s, t, tile);
  heavy::HeavyKernel grad_y = heavy::conv2d_winograd_grad_y_kernel(s, t, tile);
  heavy::HeavyKernel product = heavy::matmul_kernel(heavy::conv2d_winograd_grad_weight_gemm_shape(s, tile), t, tl);
  heavy::HeavyKernel back = heavy::conv2d_winograd_grad_weight_kernel(s, t, tile, tl.splits);
  KernelProgram p;
  p.buffers = std::move(io);
  const int32_t v = int32_t(p.buffers.size()), gy = v + 1, n = v + 2;
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, planes * s.cin * tiles});
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, planes * tiles * s.cout});
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(tl.splits) * planes * s.cin * s.cout});
  p.launches.push_back({std::move(input.kernel), {1, v}, input.groups, {}});
  p.launches.push_back({std::move(grad_y.kernel), {0, gy}, grad_y.groups, {}});
  p.launches.push_back({std::move(product.kernel), {v, gy, n}, product.groups, {}});
  p.launches.push_back({std::move(back.kernel), {n, 2}, back.groups, {}});
  return p;
}

// The heuristic first, then the offered configs, each once.
void add_offered(TunableOp& op, const std::vector<heavy::Config>& offered) {
  op.candidates.insert(op.candidates.begin(), op.heuristic);
  op.candidates.insert(op.candidates.end(), offered.begin(), offered.end());
  op.candidates = unique_configs(op.candidates);
}

// Offers the weight gradient by Winograd with the heuristic product tiling at several splits and every other product
// tiling, and makes it the heuristic where it pays (the forward's rules).
void add_winograd_grad_weight(TunableOp& op, const heavy::Conv2dShape& s, kir::Type t, const heavy::Limits& limits) {
  const heavy::Conv2dWinogradTiles tiles = heavy::conv2d_winograd_tiles_offered(s, t, 64);
  std::vector<heavy::Config> offered;
  for (uint32_t tile : tiles.offered) {
    const heavy::MatmulShape product = heavy::conv2d_winograd_grad_weight_gemm_shape(s, tile);
    const heavy::MatmulTiling best = heavy::conv2d_winograd_grad_weight_tiling(product, t);
    if (heavy::conv2d_winograd_pays(s, t) && tile == tiles.chosen) op.heuristic = heavy::conv2d_winograd_config(best, tile);
    offered.push_back(heavy::conv2d_winograd_config(best, tile));
    for (uint32_t splits : {best.splits / 2, best.splits * 2}) {
      heavy::MatmulTiling tl = best;
      tl.splits = splits;
      if (splits >= 1 && splits <= 64 && (product.k + tl.tile_k - 1) / tl.tile_k >= 8 * int64_t(splits))
        offered.push_back(heavy::conv2d_winograd_config(tl, tile));
    }
    for (const heavy::MatmulTiling& tl : heavy::matmul_candidates(product, t, limits))
      offered.push_back(heavy::conv2d_winograd_config(tl, tile));
  }
  add_offered(op, offered);
}

// The weight gradient's GEMM configs carry their split of K.
heavy::Config split_tiling(const heavy::Conv2dShape& s, const heavy::MatmulTiling& tl) {
  heavy::Config c = tl.config();
  c.set("splits", heavy::conv2d_grad_weight_gemm_splits(s, tl));
  return c;
}

// Offers Winograd (of the forward convolution `e`) with every product tiling, where its scratch is addressable with
// 32-bit indices, and makes it the heuristic where it pays.
void add_winograd(TunableOp& op, const heavy::Conv2dShape& e, kir::Type t, const heavy::Limits& limits) {
  const heavy::Conv2dWinogradTiles tiles = heavy::conv2d_winograd_tiles_offered(e, t, 1);
  std::vector<heavy::Config> offered;
  for (uint32_t tile : tiles.offered) {
    const heavy::MatmulShape product = heavy::conv2d_winograd_gemm_shape(e, tile);
    if (heavy::conv2d_winograd_pays(e, t) && tile == tiles.chosen) op.heuristic = heavy::conv2d_winograd_config(heavy::conv2d_winograd_tiling(product, t), tile);
    offered.push_back(heavy::conv2d_winograd_config(heavy::conv2d_winograd_tiling(product, t), tile));
    for (const heavy::MatmulTiling& tl : heavy::matmul_candidates(product, t, limits))
      offered.push_back(heavy::conv2d_winograd_config(tl, tile));
  }
  add_offered(op, offered);
}

// The pooling `pool` (a max_pool2d value) of convolution v's result or of its epilogue's root, as a kernel shape.
heavy::Pool2dShape side_pool_shape(const graph::Graph& g, graph::Value pool) {
  const graph::Node& p = g.node(pool);
  const graph::Pool2dOptions o = graph::pool2d_options(p);
  return heavy::pool2d_shape(g.type(p.inputs[0]).shape, o.kernel, o.stride, o.padding);
}

// A convolution's input and weights may be read in place from f16/bf16 values (fuse.h's absorbed casts up): the type
// each is stored in, or unset where it is stored in the convolution's own type.
struct HalfOperands {
  std::optional<kir::Type> x, w;
  bool any() const { return x || w; }
  // Both stored in the same 16-bit type: the tensor-core kernel's operands.
  std::optional<kir::Type> same() const { return x && w && *x == *w ? x : std::nullopt; }
};
HalfOperands half_operands(const graph::Graph& g, const graph::Node& node) {
  HalfOperands h;
  if (auto x = in_place_operand(g, node.inputs[0]).half) h.x = device_type(*x);
  if (auto w = in_place_operand(g, node.inputs[1]).half) h.w = device_type(*w);
  return h;
}

// Launch `l`'s kernel reading its buffer `j` (an operand of f32) as stored in `half`, converting each element it
// loads: a parameter of the half type is added to the kernel and bound to the same buffer, and the f32 one stays
// declared, no longer read, retyped to `half` (so that it may stay bound there too: a launch reading only parameters
// stays one, parameter_launches.h). False (the launch unchanged) where the kernel reads it other than element by
// element (vector loads, copies) or writes it.
bool read_in_place(ProgramLaunch& l, size_t j, kir::Type half) {
  const std::string name = fmt::format("{}_{}", l.kernel.buffers.at(j).name, dtype_name(half));
  kir::KernelBuilder kb(std::move(l.kernel));
  std::optional<kir::Buf> stored;  // added at the first load rewritten (rewrite_loads refuses before any)
  bool rewritten = true;
  try {
    kb.rewrite_loads(uint32_t(j), [&](kir::Val at) {
      if (!stored) stored = kb.buffer(name, half, kir::Access::Read);
      return kir::cast((*stored)[at.type() == kir::Type::U32 ? at : kir::cast(at, kir::Type::U32)], kir::Type::F32);
    });
  } catch (const std::invalid_argument&) {
    rewritten = false;
  }
  l.kernel = kb.finish();
  if (!rewritten || !stored) return false;
  l.kernel.name += fmt::format("_reads_{}", dtype_name(half));
  l.kernel.buffers[j].elem = half;
  l.buffers.push_back(l.buffers[j]);
  return true;
}

// A program built for f32 operands, run on half ones (buffer 0: x, 1: w). Each launch reading a half operand loads it
// as stored and converts each element (read_in_place). Where a launch cannot (it reads the operand in vectors), the
// operand is widened into scratch by a launch of its own first, which that launch reads: the same launch as before
// fusion absorbed the cast, now inside the convolution's program. (Widened inputs were a launch per layer at every
// step: 19 of an f16 resnet18's 69 at batch 1 on the H100.)
KernelProgram widened(KernelProgram p, const HalfOperands& h) {
  std::vector<ProgramLaunch> widen;
  for (int32_t i : {0, 1}) {
    const std::optional<kir::Type> half = i == 0 ? h.x : h.w;
    if (!half) continue;
    const int64_t n = p.buffers.at(size_t(i)).elements;
    int32_t wide = -1;  // the widened copy, where a launch needs one
    for (ProgramLaunch& l : p.launches) {
      const size_t bound = l.buffers.size();  // read_in_place appends
      for (size_t j = 0; j < bound; ++j) {
        if (l.buffers[j] != i || read_in_place(l, j, *half)) continue;
        if (wide < 0) {
          wide = int32_t(p.buffers.size());
          p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, kir::Type::F32, n});
          heavy::HeavyKernel k = heavy::widen_kernel(*half, heavy::index_u32(n, "conv2d operand elements"));
          widen.push_back({std::move(k.kernel), {i, wide}, k.groups, {}});
        }
        l.buffers[j] = wide;
      }
    }
  }
  widen.insert(widen.end(), std::make_move_iterator(p.launches.begin()), std::make_move_iterator(p.launches.end()));
  p.launches = std::move(widen);
  return p;
}

// A config of the tensor-core family: a GEMM tiling with subgroups (conv2d_mma_kernel.h), "channels_last=1" after it
// where the kernel reads channels-last copies of its operands.
bool is_mma_config(const heavy::Config& c) { return c.has("tile_m") && heavy::MatmulTiling::from(c).tensor_cores(); }
bool is_channels_last_config(const heavy::Config& c) { return c.has("channels_last") && c.get("channels_last") == 1; }
heavy::Config channels_last_config(const heavy::MatmulTiling& t) { return t.config().set("channels_last", 1); }

// The tensor-core kernel over channels-last copies of the operands: the input moved to NHWC and the weights to
// [Cout, kh, kw, Cin] into scratch by launches of their own, channels padded with zeros to a multiple of 8 (a 1x1
// window's weights with whole groups of 8 channels are that already), then the convolution reads the copies.
// Buffers: io's x, w, y, then the copies.
KernelProgram channels_last_program(const heavy::Conv2dShape& s, kir::Type half, const heavy::MatmulTiling& tiling,
                                    const heavy::Limits& limits, std::vector<ProgramBuffer> io) {
  KernelProgram p;
  p.buffers = std::move(io);
  const int64_t depth = heavy::conv2d_channels_last_depth(s);
  auto moved = [&](int32_t from, int64_t batches, int64_t positions) {
    const int32_t to = int32_t(p.buffers.size());
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, half, batches * depth * positions});
    heavy::HeavyKernel k = heavy::channels_last_kernel(half, heavy::index_u32(batches, "conv2d channels-last batches"),
                                                       heavy::index_u32(s.cin, "conv2d channels"),
                                                       heavy::index_u32(positions, "conv2d positions"),
                                                       heavy::index_u32(depth, "conv2d channels"));
    p.launches.push_back({std::move(k.kernel), {from, to}, k.groups, {}});
    return to;
  };
  const int32_t x = moved(0, s.n, s.h * s.w);
  const int32_t w = s.kh * s.kw == 1 && depth == s.cin ? 1 : moved(1, s.cout, s.kh * s.kw);
  heavy::HeavyKernel k = heavy::conv2d_mma_kernel(s, half, tiling, limits.async_copy, true);
  p.launches.push_back({std::move(k.kernel), {x, w, 2}, k.groups, {}});
  return p;
}

}  // namespace

TunableOp tunable_conv2d(const graph::Graph& g, graph::Value v, const heavy::Limits& limits, const SideOutputs& side) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape);
  const HalfOperands halves = half_operands(g, node);
  // Input and weights both f16 (or both bf16) on a device with tensor cores: the implicit GEMM on them is offered
  // beside the f32 kernels (which widen the operands first), and is the heuristic where it pays.
  // Under the tf32 policy on TF32 tensor cores (limits.tf32), f32 input and weights go there too, rounded to TF32
  // (mma_type f32: conv2d_mma_kernel.h).
  const bool tf32 = limits.tf32 && t == kir::Type::F32 && !halves.any() && heavy::conv2d_fits_tensor_cores(s);
  const bool on_tensor_cores = tf32 || (limits.cooperative_matrix && t == kir::Type::F32 &&
                                        heavy::conv2d_fits_tensor_cores(s) && halves.same().has_value());
  // (A plain type and a flag, not an optional: GCC 12 warned the optional's value might be read uninitialized.)
  const kir::Type mma_type = on_tensor_cores && !tf32 ? *halves.same() : kir::Type::F32;
  TunableOp op;
  op.key = {"conv2d", s.text() + (tf32 ? "_tf32" : ""), heavy::float_suffix(t, "conv2d")};
  if (halves.any())
    op.key.shape += fmt::format("_{}_{}_operands", halves.x ? dtype_name(*halves.x) : "f32",
                                halves.w ? dtype_name(*halves.w) : "f32");
  std::optional<heavy::PooledOutputs> pooled;
  if (side.pool.valid()) {
    pooled = heavy::PooledOutputs{side_pool_shape(g, side.pool), side.argmax.valid(), !side.result_unread};
    // The kernels differ in what they store: each form is timed under its own key.
    op.key.shape += fmt::format("_pooled_k{}x{}{}", pooled->pool.kh, pooled->pool.kw,
                                pooled->suffix().substr(std::string("_pooled").size()));
  }
  const heavy::MatmulShape gemm = heavy::conv2d_gemm_shape(s);
  const auto tiling = heavy::conv2d_gemm_pays(s, gemm, t);
  const auto few_positions = tiling ? std::nullopt : heavy::conv2d_small_gemm_pays(s, gemm, t, limits);
  op.heuristic = tiling          ? tiling->config()
                 : few_positions ? few_positions->config()
                                 : heavy::conv2d_heuristic(s, limits).config();
  op.candidates = heavy::conv2d_with_gemm_candidates(op.heuristic, configs_of(heavy::conv2d_candidates(s, limits, t)), s, gemm, t, limits,
                                       unsplit_tiling);
  if (heavy::conv2d_winograd_applies(s)) add_winograd(op, s, t, limits);
  if (on_tensor_cores) {
    // Both layouts, channels last first where it pays (its heuristic tiling then leads the list, else as stored).
    const bool last_first = heavy::conv2d_channels_last_pays(s, mma_type);
    std::vector<heavy::Config> offered = configs_of(heavy::conv2d_mma_candidates(s, mma_type, limits));
    std::vector<heavy::Config> last;
    for (const heavy::MatmulTiling& tl : heavy::conv2d_channels_last_candidates(s, mma_type, limits))
      last.push_back(channels_last_config(tl));
    offered.insert(last_first ? offered.begin() : offered.end(), last.begin(), last.end());
    if (heavy::conv2d_tensor_cores_pay(s, mma_type, limits)) {
      op.candidates.insert(op.candidates.begin(), offered.begin(), offered.end());
      op.heuristic = offered.front();
    } else {
      op.candidates.insert(op.candidates.end(), offered.begin(), offered.end());
    }
  }
  // The convolution's own launches over the io list's first three buffers (x, w, y).
  auto program = [s, t, limits, halves, tf32](std::vector<ProgramBuffer> io, const heavy::Config& c) {
    if (is_mma_config(c)) {
      if (!halves.same() && !tf32)
        throw std::invalid_argument(fmt::format("conv2d {}: tensor-core configs need the input and the weights both "
                                                "stored as f16 or both as bf16, or the tf32 policy", s.text()));
      const kir::Type operands = tf32 ? kir::Type::F32 : *halves.same();
      if (is_channels_last_config(c))
        return channels_last_program(s, operands, heavy::MatmulTiling::from(c), limits, std::move(io));
      heavy::HeavyKernel k = heavy::conv2d_mma_kernel(s, operands, heavy::MatmulTiling::from(c), limits.async_copy);
      KernelProgram p;
      p.buffers = std::move(io);
      p.launches.push_back({std::move(k.kernel), {0, 1, 2}, k.groups, {}});
      return p;
    }
    if (heavy::conv2d_is_winograd_config(c)) return widened(winograd_program(s, t, std::move(io), c), halves);
    heavy::HeavyKernel k = heavy::conv2d_is_gemm_config(c) ? heavy::conv2d_gemm_kernel(s, t, heavy::MatmulTiling::from(c))
                                             : heavy::conv2d_kernel(s, t, heavy::Conv2dConfig::from(c), limits);
    KernelProgram p;
    p.buffers = std::move(io);
    p.launches.push_back({std::move(k.kernel), {0, 1, 2}, k.groups, {}});
    return widened(std::move(p), halves);
  };
  if (!pooled) {
    op.build = [program, io = io_buffers(g, v)](const heavy::Config& c) { return program(io, c); };
    return op;
  }
  // A convolution whose launch also stores a max pooling of its result, maybe the pooling's positions, maybe not the
  // result itself (fuse.h's side outputs). Buffers: x, w, y, the pooled result, the pooling's input (the epilogue's
  // root, or y itself), then the positions if asked. The configs whose kernels can (rows, staged images) pool the
  // values they store (epilogue included, through kir's epilogue taps); the others store the result and run the
  // pooling over it in a second launch of the same program, as its own launch did before.
  std::vector<ProgramBuffer> io = io_buffers(g, v);
  const graph::Value pool_input = g.node(side.pool).inputs[0];
  io.push_back({ProgramBuffer::Use::Value, -1, t, g.type(side.pool).numel(), side.pool.id});
  io.push_back({ProgramBuffer::Use::Value, -1, t, g.type(pool_input).numel(), pool_input.id});
  if (side.argmax.valid())
    io.push_back({ProgramBuffer::Use::Value, -1, kir::Type::I32, g.type(side.argmax).numel(), side.argmax.id});
  op.build = [s, t, limits, io, program, out = *pooled, halves](const heavy::Config& c) {
    const int32_t pooled = 3, input = 4, argmax = 5;
    if (!heavy::conv2d_is_gemm_config(c) && !heavy::conv2d_is_winograd_config(c)) {
      const heavy::Conv2dConfig cfg = heavy::Conv2dConfig::from(c);
      if (heavy::conv2d_pools_in_kernel(s, cfg, out.pool, limits)) {
        heavy::HeavyKernel k = heavy::conv2d_kernel(s, t, cfg, limits, out);
        KernelProgram p;
        p.buffers = io;
        std::vector<int32_t> bound{0, 1, 2, pooled};
        if (out.argmax) bound.push_back(argmax);
        p.launches.push_back({std::move(k.kernel), std::move(bound), k.groups, {}});
        return widened(std::move(p), halves);
      }
    }
    KernelProgram p = program(io, c);
    heavy::HeavyKernel k = heavy::max_pool2d_kernel(out.pool, t, out.argmax);
    std::vector<int32_t> bound{input, pooled};
    if (out.argmax) bound.push_back(argmax);
    p.launches.push_back({std::move(k.kernel), std::move(bound), k.groups, {}});
    return p;
  };
  return op;
}

// (grad_out, w) with attr input_shape -> grad_x.
TunableOp tunable_conv2d_grad_input(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, node.type.shape, g.type(node.inputs[1]).shape);
  TunableOp op;
  op.key = {"conv2d_grad_input", s.text(), heavy::float_suffix(t, "conv2d_grad_input")};
  // With a stride (and no dilation) the GEMM form runs as one dense GEMM per phase, all in one launch
  // (conv2d_gemm_kernels.h): its tiling is chosen for the largest phase. Otherwise one GEMM over every input position,
  // where with a stride (dilated) all but 1/stride² of each window's terms are zeros it still multiplies: there it runs
  // only for 1x1 windows (on the H100 3x3 stride-2 layers ran slower than the direct kernel that way,
  // docs/PERFORMANCE.md).
  const bool phased = heavy::conv2d_grad_input_phased(s);
  heavy::MatmulShape gemm = heavy::conv2d_grad_input_gemm_shape(s);
  if (phased) {
    gemm.k = gemm.n = 0;
    for (const heavy::GradInputPhase& phase : heavy::conv2d_grad_input_phases(s)) {
      const heavy::MatmulShape p = heavy::conv2d_grad_input_phase_gemm_shape(s, phase);
      gemm.k = std::max(gemm.k, p.k);
      gemm.n = std::max(gemm.n, p.n);
    }
  }
  const bool dense = phased || (s.stride_h == 1 && s.stride_w == 1) || (s.kh == 1 && s.kw == 1);
  const auto tiling = dense ? heavy::conv2d_gemm_pays(s, gemm, t) : std::nullopt;
  const auto small = phased && !tiling ? heavy::conv2d_small_grad_input_tiling(s, gemm, t, limits) : std::nullopt;
  op.heuristic = tiling  ? tiling->config()
                 : small ? small->config()
                         : heavy::conv2d_grad_input_heuristic(s, limits).config();
  op.candidates = heavy::conv2d_with_gemm_candidates(op.heuristic, configs_of(heavy::conv2d_grad_input_candidates(s, limits, t)), s, gemm,
                                       t, limits, phased ? plain_tiling : unsplit_tiling);
  // The phases' split-K forms of the small blocks, for the tuner.
  if (phased && s.groups == 1) {
    const bool f64 = t == kir::Type::F64;
    for (heavy::MatmulTiling tl : {heavy::MatmulTiling{16, 16, f64 ? 8u : 16u, 1, 1}, heavy::MatmulTiling{32, 32, f64 ? 16u : 32u, 2, 2}})
      for (uint32_t splits : {2u, 4u, 8u, 16u}) {
        tl.splits = splits;
        const heavy::Config c = tl.config();
        if ((gemm.k + tl.tile_k - 1) / tl.tile_k >= 4 * int64_t(splits) &&
            std::find(op.candidates.begin(), op.candidates.end(), c) == op.candidates.end())
          op.candidates.push_back(c);
      }
  }
  // A 3x3 window at stride 1: the input gradient is a forward convolution of grad_y (conv2d_winograd_kernels.h).
  if (heavy::conv2d_winograd_grad_input_applies(s)) add_winograd(op, heavy::conv2d_winograd_grad_input_shape(s), t, limits);
  op.build = [s, t, limits, phased, io = io_buffers(g, v)](const heavy::Config& c) {
    if (heavy::conv2d_is_winograd_config(c))
      return winograd_program(heavy::conv2d_winograd_grad_input_shape(s), t, io, c, true);
    if (phased && heavy::conv2d_is_gemm_config(c)) {
      const heavy::MatmulTiling tl = heavy::MatmulTiling::from(c);
      // Unsplit with phases no tap reaches (a window smaller than the stride: resnet's 1x1 downsamples): a zero fill
      // of grad_x, then the reached phases' GEMMs alone.
      if (tl.splits == 1 && heavy::conv2d_grad_input_has_unreached_phases(s)) {
        const int64_t elements = s.n * s.cin * s.h * s.w;
        heavy::HeavyKernel fill = heavy::zero_fill_kernel(
            fmt::format("conv2d_grad_input_{}_{}_zeros", s.text(), heavy::float_suffix(t, "conv2d_grad_input")), t,
            uint32_t(elements));
        heavy::HeavyKernel k = heavy::conv2d_grad_input_phases_kernel(s, t, tl, true);
        KernelProgram p;
        p.buffers = io;
        p.launches.push_back({std::move(fill.kernel), {2}, fill.groups, {}});
        p.launches.push_back({std::move(k.kernel), {0, 1, 2}, k.groups, {}});
        return p;
      }
      heavy::HeavyKernel k = heavy::conv2d_grad_input_phases_kernel(s, t, tl);
      if (tl.splits == 1) return single_kernel_program(io, std::move(k.kernel), k.groups);
      // The splits' partial sums [splits][grad_x], then their sum in split order.
      KernelProgram p;
      p.buffers = io;
      const int64_t elements = s.n * s.cin * s.h * s.w;
      p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(tl.splits) * elements});
      heavy::HeavyKernel sum = heavy::split_sum_kernel(
          fmt::format("conv2d_grad_input_{}_{}_split_sum_s{}", s.text(), heavy::float_suffix(t, "conv2d_grad_input"), tl.splits),
          t, uint32_t(elements), tl.splits);
      p.launches.push_back({std::move(k.kernel), {0, 1, 3}, k.groups, {}});
      p.launches.push_back({std::move(sum.kernel), {3, 2}, sum.groups, {}});
      return p;
    }
    heavy::HeavyKernel k = heavy::conv2d_is_gemm_config(c)
                               ? heavy::conv2d_grad_input_gemm_kernel(s, t, heavy::MatmulTiling::from(c))
                               : heavy::conv2d_grad_input_kernel(s, t, heavy::Conv2dConfig::from(c), limits);
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

namespace {

// A weight gradient whose grad_out is a pooling's gradient (fuse.h's gathered prologues) reads the pooled gradient and
// the pooling's input: all_pairs configs stage grad_y window by window from them (PooledGradOut); the other direct
// configs first run the pooling's gradient (with the ReLU's mask) into a scratch buffer, as a launch of its own did
// before. Buffers: pooled gradient, x, grad_w, pooling input, then the scratch grad_y and/or partial sums.
TunableOp tunable_pooled_conv2d_grad_weight(const graph::Graph& g, graph::Value v, const heavy::Conv2dShape& s,
                                            kir::Type t, const heavy::Limits& limits, graph::Value bias) {
  const std::optional<PooledGradOutSource> src = pooled_grad_out(g, v);
  if (!src)
    throw std::logic_error(fmt::format("conv2d_grad_weight '{}': lowered from a pooling's gradient, but grad_out is not "
                                       "one", g.node(v).name));
  if (bias.valid() && !src->pooled.positions)
    throw std::logic_error(fmt::format("conv2d_grad_weight '{}': a bias sum is gathered from positions only",
                                       g.node(v).name));
  TunableOp op;
  heavy::PooledGradOut pooled = src->pooled;
  pooled.bias_sums = bias.valid();
  op.key = {"conv2d_grad_weight",
            fmt::format("{}_pooled_k{}x{}{}{}{}", s.text(), pooled.pool.kh, pooled.pool.kw, pooled.relu_mask ? "_relu" : "",
                        pooled.positions ? "_argmax" : "", pooled.bias_sums ? "_bias" : ""),
            heavy::float_suffix(t, "conv2d_grad_weight")};
  op.candidates = configs_of(heavy::conv2d_grad_weight_candidates(s, t, limits));  // the heuristic first
  op.heuristic = op.candidates.front();
  // Staging a window's gradients (its maximum found, the mask applied) costs more than copying grad_y, so where the
  // heuristic splits the owners' rows, the pooled form spreads that staging differently, if the config is a
  // candidate. Measured on LeNet's first convolution at batch 8192 on the H100, inside the step (docs/PERFORMANCE.md;
  // the heuristic's co_block 2 with 14 row groups: 0.129 ms on cuda:0, 0.137 on vulkan:0): through ptxas, one output
  // channel per owner with 4 row groups (120 invocations) in 512 splits, 0.116 ms; through NVIDIA's Vulkan compiler,
  // twice the row groups (28: 448 invocations), 0.131 ms (the other's pick: 0.140 there, 0.124 on cuda:0).
  auto prefer = [&](const heavy::GradWeightConfig& c) {
    auto it = std::find(op.candidates.begin(), op.candidates.end(), c.config());
    if (it == op.candidates.end()) return;
    op.heuristic = *it;
    std::rotate(op.candidates.begin(), it, it + 1);  // the heuristic first, as everywhere
  };
  const heavy::GradWeightConfig h = heavy::GradWeightConfig::from(op.heuristic);
  if (h.all_pairs && h.row_split > 1) {
    heavy::GradWeightConfig c = h;
    if (limits.ptx) c.co_block = 1, c.row_split = 4, c.splits = 512;
    else c.row_split *= 2;
    c.wg = (heavy::grad_weight_images_owners(s, c.co_block) * c.row_split + 31) / 32 * 32;
    prefer(c);
  }
  // Buffers: the pooled gradient, x, grad_w, the pooling's input or its positions, then the pooled values (the
  // positions' form under the mask).
  std::vector<ProgramBuffer> io = io_buffers(g, v);
  io[0] = {ProgramBuffer::Use::Value, -1, t, g.type(src->grad).numel(), src->grad.id};
  io.push_back({ProgramBuffer::Use::Value, -1, device_type(g.type(src->input).dtype), g.type(src->input).numel(),
                src->input.id});
  std::vector<int32_t> pooling{3};  // what the pooling's gradient reads besides the pooled gradient
  if (src->pooled_values.valid()) {
    io.push_back({ProgramBuffer::Use::Value, -1, t, g.type(src->pooled_values).numel(), src->pooled_values.id});
    pooling.push_back(4);
  }
  const int32_t grad_b = bias.valid() ? int32_t(io.size()) : -1;  // the bias sum, after the others
  if (bias.valid()) io.push_back({ProgramBuffer::Use::Value, -1, t, g.type(bias).numel(), bias.id});
  op.build = [s, t, limits, pooled, io, pooling, grad_b](const heavy::Config& c) {
    const heavy::GradWeightConfig cfg = heavy::GradWeightConfig::from(c);
    KernelProgram p;
    p.buffers = io;
    int32_t grad_y = 0;  // the pooled gradient, read by window (all_pairs), or the scratch grad_y
    if (!cfg.all_pairs) {
      grad_y = int32_t(p.buffers.size());
      p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, s.n * s.cout * s.ho * s.wo});
      heavy::HeavyKernel mask = pooled.positions ? heavy::max_pool2d_grad_argmax_kernel(pooled.pool, t, pooled.relu_mask)
                                                 : heavy::max_pool2d_grad_kernel(pooled.pool, t, pooled.relu_mask);
      std::vector<int32_t> bound{0, 3, grad_y};
      if (pooling.size() > 1) bound.push_back(pooling[1]);
      p.launches.push_back({std::move(mask.kernel), std::move(bound), mask.groups, {}});
    }
    // The staged kernels add the bias sum as they stage the windows; the others sum the pooled gradient (the mask's
    // inputs: a quarter of grad_y's elements for 2x2 windows) in a launch of its own.
    const bool bias_inside = grad_b >= 0 && cfg.all_pairs;
    heavy::HeavyKernel partials = cfg.all_pairs ? heavy::conv2d_grad_weight_images_kernel(s, t, cfg, limits, &pooled)
                                                : heavy::conv2d_grad_weight_kernel(s, t, cfg, limits);
    if (grad_b >= 0 && !cfg.all_pairs) {
      heavy::HeavyKernel sums = heavy::pooled_channel_sums_kernel(pooled.pool, t, pooled.relu_mask);
      std::vector<int32_t> bound{0};
      if (pooled.relu_mask) bound.push_back(pooling[1]);
      bound.push_back(grad_b);
      p.launches.push_back({std::move(sums.kernel), std::move(bound), sums.groups, {}});
    }
    std::vector<int32_t> reads{grad_y, 1};
    auto reads_then = [&](int32_t out) {
      std::vector<int32_t> b = reads;
      b.push_back(out);
      if (cfg.all_pairs) b.insert(b.end(), pooling.begin(), pooling.end());
      if (bias_inside && cfg.splits == 1) b.push_back(grad_b);
      return b;
    };
    if (cfg.splits == 1) {
      p.launches.push_back({std::move(partials.kernel), reads_then(2), partials.groups, {}});
      return p;
    }
    // Each split's partial sums: its weights', then (the staged kernels with a bias) its bias's.
    const int32_t sums = int32_t(p.buffers.size());
    const int64_t per_split = s.cout * s.cin_per_group() * s.kh * s.kw + (bias_inside ? s.cout : 0);
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(cfg.splits) * per_split});
    heavy::HeavyKernel sum = heavy::conv2d_grad_weight_sum_kernel(s, t, cfg.splits, bias_inside);
    p.launches.push_back({std::move(partials.kernel), reads_then(sums), partials.groups, {}});
    std::vector<int32_t> sum_buffers{sums, 2};
    if (bias_inside) sum_buffers.push_back(grad_b);
    p.launches.push_back({std::move(sum.kernel), std::move(sum_buffers), sum.groups, {}});
    return p;
  };
  return op;
}

}  // namespace

bool conv2d_grad_weight_direct(const graph::Graph& g, graph::Value v) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, g.type(node.inputs[1]).shape, node.type.shape);
  return !heavy::conv2d_grad_weight_gemm_pays(s, heavy::conv2d_grad_weight_gemm_shape(s), t);
}

namespace {

// max_pool2d_grad_argmax(relu_grad(grad, pooled), positions) or max_pool2d_grad_argmax(grad, positions).
std::optional<PooledGradOutSource> from_positions(const graph::Graph& g, PooledGradOutSource src) {
  const graph::Node& p = g.node(src.pool);
  if (p.type.dtype != graph::DType::F32) return std::nullopt;
  src.grad = p.inputs[0];
  src.input = p.inputs[1];
  src.pooled.positions = true;
  const graph::Node& m = g.node(src.grad);
  if (m.op == graph::OpKind::ReluGrad) {
    // The mask must be that of the pooled values whose positions these are.
    const graph::Node& pooled = g.node(m.inputs[1]);
    const graph::Node& positions = g.node(src.input);
    if (pooled.op != graph::OpKind::MaxPool2d || positions.op != graph::OpKind::MaxPool2dArgmax ||
        pooled.inputs[0] != positions.inputs[0] || pooled.attrs != positions.attrs)
      return std::nullopt;
    src.mask = src.grad;
    src.grad = m.inputs[0];
    src.pooled_values = m.inputs[1];
    src.pooled.relu_mask = true;
  }
  const graph::Pool2dOptions o = graph::pool2d_options(p);
  src.pooled.pool = heavy::pool2d_shape(p.type.shape, o.kernel, o.stride, o.padding);
  if (!heavy::pool2d_windows_tile(src.pooled.pool)) return std::nullopt;
  return src;
}

}  // namespace

std::optional<PooledGradOutSource> pooled_grad_out(const graph::Graph& g, graph::Value v) {
  const graph::Node& node = g.node(v);
  if (node.op != graph::OpKind::Conv2dGradWeight) return std::nullopt;
  PooledGradOutSource src;
  src.grad_out = node.inputs[0];
  src.pool = src.grad_out;
  if (g.node(src.pool).op == graph::OpKind::MaxPool2dGradArgmax) return from_positions(g, src);
  const graph::Node& r = g.node(src.grad_out);
  if (r.op == graph::OpKind::ReluGrad) {
    src.pool = r.inputs[0];
    src.pooled.relu_mask = true;
  }
  const graph::Node& p = g.node(src.pool);
  if (p.op != graph::OpKind::MaxPool2dGrad || p.type.dtype != graph::DType::F32) return std::nullopt;
  src.grad = p.inputs[0];
  src.input = p.inputs[1];
  // The ReLU's mask must be that of the pooling's input (a ReLU's output), which the window's maximum tells.
  if (src.pooled.relu_mask && r.inputs[1] != src.input) return std::nullopt;
  const graph::Pool2dOptions o = graph::pool2d_options(p);
  src.pooled.pool = heavy::pool2d_shape(p.type.shape, o.kernel, o.stride, o.padding);
  if (!heavy::pool2d_windows_tile(src.pooled.pool)) return std::nullopt;
  return src;
}

// (grad_out, x) with attr weight_shape -> grad_w. Long sums are split over several workgroups: their partial
// sums go to a scratch buffer and a second launch adds them in a fixed order (deterministic, no atomics).
TunableOp tunable_conv2d_grad_weight(const graph::Graph& g, graph::Value v, const heavy::Limits& limits,
                                     bool pooled_form, graph::Value bias) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, g.type(node.inputs[1]).shape, node.type.shape);
  if (pooled_form) return tunable_pooled_conv2d_grad_weight(g, v, s, t, limits, bias);
  if (bias.valid())
    throw std::logic_error(fmt::format("conv2d_grad_weight '{}': a bias sum without the pooled form", node.name));
  TunableOp op;
  op.key = {"conv2d_grad_weight", s.text(), heavy::float_suffix(t, "conv2d_grad_weight")};
  const heavy::MatmulShape gemm = heavy::conv2d_grad_weight_gemm_shape(s);
  const auto tiling = heavy::conv2d_grad_weight_gemm_pays(s, gemm, t);
  op.heuristic = tiling ? split_tiling(s, *tiling) : heavy::conv2d_grad_weight_heuristic(s, t, limits).config();
  op.candidates = heavy::conv2d_with_gemm_candidates(op.heuristic, configs_of(heavy::conv2d_grad_weight_candidates(s, t, limits)), s,
                                       gemm, t, limits, [&](const heavy::MatmulTiling& tl) { return split_tiling(s, tl); });
  // The GEMM's heuristic tiling at half, twice and four times its splits and at 64 to 512 (each split at least 4 slices
  // deep): how far to split a few blocks over a long K is the device's to say (resnet18's first layer at batch 64: 3
  // blocks of 64x64 over 802816 positions).
  if (tiling) {
    const int64_t slices = (gemm.k + tiling->tile_k - 1) / tiling->tile_k;
    const uint32_t base = heavy::conv2d_grad_weight_gemm_splits(s, *tiling);
    for (uint32_t splits : {base / 2, base * 2, base * 4, 64u, 128u, 256u, 512u})
      if (splits >= 1 && splits <= heavy::kMaxGradWeightGemmSplits && slices >= 4 * int64_t(splits)) {
        heavy::Config c = tiling->config();
        c.set("splits", splits);
        if (std::find(op.candidates.begin(), op.candidates.end(), c) == op.candidates.end()) op.candidates.push_back(c);
      }
  }
  // A 3x3 window at stride 1: Winograd (conv2d_winograd_kernels.h).
  if (heavy::conv2d_winograd_applies(s)) add_winograd_grad_weight(op, s, t, limits);
  op.build = [s, t, limits, io = io_buffers(g, v)](const heavy::Config& c) {
    if (heavy::conv2d_is_winograd_config(c)) return winograd_grad_weight_program(s, t, io, c);
    uint32_t splits = 1;
    heavy::HeavyKernel partials;
    if (heavy::conv2d_is_gemm_config(c)) {
      splits = uint32_t(c.get("splits"));
      partials = heavy::conv2d_grad_weight_gemm_kernel(s, t, heavy::MatmulTiling::from(c), splits);
    } else {
      const heavy::GradWeightConfig cfg = heavy::GradWeightConfig::from(c);
      splits = cfg.splits;
      partials = heavy::conv2d_grad_weight_kernel(s, t, cfg, limits);
    }
    if (splits == 1) return single_kernel_program(io, std::move(partials.kernel), partials.groups);
    heavy::HeavyKernel sum = heavy::conv2d_grad_weight_sum_kernel(s, t, splits);
    // Buffers: grad_y, x, grad_w, then the partial sums [splits][weights].
    KernelProgram p;
    p.buffers = io;
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(splits) * s.cout * s.cin_per_group() * s.kh * s.kw});
    p.launches.push_back({std::move(partials.kernel), {0, 1, 3}, partials.groups, {}});
    p.launches.push_back({std::move(sum.kernel), {3, 2}, sum.groups, {}});
    return p;
  };
  return op;
}

namespace {

void lower_conv2d(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_conv2d(ctx.graph(), v, ctx.limits(), ctx.side_outputs(v)); });
}

void lower_conv2d_grad_input(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_conv2d_grad_input(ctx.graph(), v, ctx.limits()); });
}

void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v) {
  // grad_out without a launch of its own: a pooling's gradient gathered by this node's kernels (fuse.h).
  const bool pooled_form = ctx.fused(ctx.graph().node(v).inputs[0]);
  const graph::Value bias = ctx.side_outputs(v).bias;  // the bias sum, where its launches store it too (fuse.h)
  lower_tunable(ctx, v, [&] { return tunable_conv2d_grad_weight(ctx.graph(), v, ctx.limits(), pooled_form, bias); });
}

// What the tuner times for a node on its own (the fused forms, side outputs and gathered prologues, are tuned by
// tunable_ops() under keys of their own).
std::optional<TunableOp> conv2d_alone(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  return tunable_conv2d(g, v, limits);
}
std::optional<TunableOp> grad_input_alone(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  return tunable_conv2d_grad_input(g, v, limits);
}
std::optional<TunableOp> grad_weight_alone(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  return tunable_conv2d_grad_weight(g, v, limits);
}

}  // namespace

std::vector<OpLowering> conv2d_lowerings() {
  return {
      {.op = "conv2d", .lower = lower_conv2d, .tunable = conv2d_alone, .takes_epilogue = true,
       .cases = harness::conv2d_cases},
      {.op = "conv2d_grad_input", .lower = lower_conv2d_grad_input, .tunable = grad_input_alone,
       .takes_epilogue = true, .cases = harness::conv2d_cases},
      {.op = "conv2d_grad_weight", .lower = lower_conv2d_grad_weight, .tunable = grad_weight_alone,
       .takes_epilogue = true, .cases = harness::conv2d_cases},
  };
}

}  // namespace spire::lowering
