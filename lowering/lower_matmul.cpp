// matmul -> one tiled kernel (kernels/matmul_kernel.h), its tiling tunable; a 2D transpose or a
// cast up from f16/bf16 feeding it is read in place (lowering/fuse.h, in_place_operand). A linear layer's weight
// gradient may also store the layer's bias gradient, the row sums of its A (fuse.h's bias sums).
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/fuse.h"
#include "lowering/heavy_lowering.h"
#include "kernels/matmul_kernel.h"
#include "kernels/matmul_mma_kernel.h"
#include "kernels/matmul_packed_kernel.h"
#include "kernels/matmul_wgmma_kernel.h"
#include "kernels/matmul_workgroup_mma_kernel.h"
#include "kernels/matvec_kernel.h"
#include "lowering/op_lowering.h"
#include "lowering/pointwise_tree.h"
#include "lowering/tunable_ops.h"
#include "op_harness/cases.h"

namespace spire::lowering {

TunableOp tunable_matmul(const graph::Graph& g, graph::Value v, const heavy::Limits& limits, graph::Value bias,
                         const PairedStore* paired) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::MatmulShape s = heavy::matmul_shape(g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape);
  // Transposes and casts up the lowering absorbs are read in place: the operand's buffer is their source.
  const InPlaceOperand a = in_place_operand(g, node.inputs[0]), b = in_place_operand(g, node.inputs[1]);
  s.a_transposed = a.transposed;
  s.b_transposed = b.transposed;
  if (a.half) s.a_half = device_type(*a.half);
  if (b.half) s.b_half = device_type(*b.half);
  // A norm whose result A is (fuse.h's absorbed norms): the few-rows kernel computes it as it reads A.
  std::optional<heavy::RowNorm> norm;
  std::vector<graph::Value> norm_vectors;
  if (a.norm.valid()) {
    const graph::Node& n = g.node(a.norm);
    norm = heavy::RowNorm{.center = graph::op_name(n.op) == "layer_norm", .epsilon = n.attrs.get_float("epsilon"),
                          .scale = device_type(g.type(n.inputs[1]).dtype)};
    norm_vectors.push_back(n.inputs[1]);
    if (norm->center) {
      norm->bias = device_type(g.type(n.inputs[2]).dtype);
      norm_vectors.push_back(n.inputs[2]);
    }
  }
  // The tf32 policy on TF32 tensor cores: f32 operands are rounded to TF32 on them (base/precision.h).
  // (Not where A's row sums are stored beside the product, a linear layer's bias gradient: only the SIMT kernel does.)
  s.tf32 = limits.tf32 && t == kir::Type::F32 && !s.a_half && !s.b_half && !bias.valid();
  TunableOp op;
  op.key = {"matmul", s.text() + (bias.valid() ? "_rowsums" : "") + (norm ? norm->tag() : "") + (paired ? "_paired" : ""),
            heavy::float_suffix(t, "matmul")};
  // 16-bit operands (or TF32 ones) on a device with tensor cores: the tensor-core (wmma) kernel, whatever the shape; on
  // Hopper the warpgroup (wgmma) kernel fed by tensor copies where its tensor maps can describe the operands (it reaches
  // cuBLAS's speed at 8192 on an H100, docs/PERFORMANCE.md), with the wmma kernel's tilings as the tuner's other
  // candidates. On Vulkan devices with workgroup matrices (NVIDIA's VK_NV_cooperative_matrix2) the workgroup-matrix
  // kernel, whose tiles the driver stages, is a candidate after the subgroup kernel's tilings, not the heuristic: on
  // an H200's vulkan:0 it was 20% slower at 8192 and 30% at 4096 (docs/PERFORMANCE.md).
  const bool tensor_cores = limits.cooperative_matrix && heavy::matmul_fits_tensor_cores(s, t);
  const bool warpgroups = heavy::matmul_fits_warpgroup_mma(s, t, limits);
  const bool workgroup = limits.workgroup_matrix && tensor_cores && heavy::matmul_fits_workgroup_mma(s, t);
  // Where the operands' copies pass through registers into 48 KiB of workgroup memory (NVIDIA's Vulkan driver), large
  // products multiply fragments loaded straight from packed operands (matmul_packed_kernel.h), the tensor-core kernel's
  // tilings then being the tuner's other candidates.
  const std::vector<heavy::MatmulTiling> packed =
      tensor_cores && !warpgroups ? heavy::matmul_packed_candidates(s, limits) : std::vector<heavy::MatmulTiling>{};
  // A product of a few rows by one matrix (a decoder's step at batch 1): the matrix-vector kernel, which reads B once
  // at the memory's rate, whatever the device or policy (its sums are f32, so a tf32 policy computes it in strict
  // fp32: the product is bound by reading B, not by multiplying). The GEMMs' tilings stay the tuner's other
  // candidates.
  const bool matvec = !bias.valid() && heavy::matmul_fits_matvec(s, t, limits);
  // A batched B read transposed (fuse.h's absorbed_transpose: attention's keys) only the few-rows kernel reads.
  // So does a norm's result.
  // So does a paired epilogue, which the kernel's pairs of columns compute.
  const bool only_matvec = (s.b_transposed && !s.b_batch.empty()) || norm || paired;
  if (only_matvec && !matvec)
    throw std::logic_error(fmt::format("matmul '{}': {}, which only the few-rows kernel reads, but it does not fit on "
                                       "this device", node.name,
                                       norm ? "A a norm's result" : paired ? "a paired epilogue" : "a batched B read transposed"));
  if (paired) {
    // The heuristic's tiling with at most kMatvecWorkgroup / 2 slices (two columns a workgroup at least), and the
    // candidates that pair.
    heavy::MatmulTiling h = heavy::choose_matvec_tiling(s, t, limits);
    h.matvec_slices = std::min<uint32_t>(h.matvec_slices, heavy::kMatvecWorkgroup / 2);
    if (!heavy::matvec_pairs(s, h.matvec_slices))
      throw std::logic_error(fmt::format("matmul '{}': a paired epilogue, but the few-rows kernel cannot pair {}",
                                         node.name, s.text()));
    op.heuristic = h.config();
    op.candidates.push_back(op.heuristic);
    for (const heavy::MatmulTiling& c : heavy::matvec_candidates(s, t, limits))
      if (heavy::matvec_pairs(s, c.matvec_slices) && !(c.config() == op.heuristic)) op.candidates.push_back(c.config());
    std::vector<ProgramBuffer> io = io_buffers(g, v);
    const graph::TensorType& root = g.type(paired->root);
    io.back() = {ProgramBuffer::Use::Value, -1, device_type(root.dtype), root.numel(), paired->root.id};
    for (graph::Value vector : norm_vectors)
      io.push_back({ProgramBuffer::Use::Value, -1, device_type(g.type(vector).dtype), g.type(vector).numel(), vector.id});
    op.build = [s, t, io, norm, subgroup = limits.subgroup_size, combine = paired->combine,
                out = device_type(root.dtype)](const heavy::Config& c) {
      const heavy::MatmulTiling tiling = heavy::MatmulTiling::from(c);
      std::vector<ProgramBuffer> loaded;
      const heavy::MatvecPair pair{uint32_t(s.n / 2), out, [&](kir::KernelBuilder& kb, kir::Val index, kir::Val first,
                                                               kir::Val second) {
                                     return combine(kb, index, first, second, loaded);
                                   }};
      heavy::HeavyKernel k = heavy::matvec_kernel(s, t, tiling.matvec_slices, norm, subgroup, tiling.unroll, &pair);
      std::vector<ProgramBuffer> bound = io;
      bound.insert(bound.end(), loaded.begin(), loaded.end());
      return single_kernel_program(std::move(bound), std::move(k.kernel), k.groups);
    };
    return op;
  }
  op.heuristic = (matvec           ? heavy::choose_matvec_tiling(s, t, limits)
                  : warpgroups     ? heavy::choose_matmul_wgmma_tiling(s, limits)
                  : !packed.empty() ? packed.front()
                  : tensor_cores   ? heavy::choose_matmul_mma_tiling(s, limits)
                                   : heavy::choose_matmul_tiling(s, t, limits)).config();
  if (matvec)  // the heuristic first
    for (const heavy::Config& c : configs_of(heavy::matvec_candidates(s, t, limits))) op.candidates.push_back(c);
  if (!only_matvec) {
    if (warpgroups)
      for (const heavy::Config& c : configs_of(heavy::matmul_wgmma_candidates(s, limits))) op.candidates.push_back(c);
    for (const heavy::Config& c : configs_of(packed)) op.candidates.push_back(c);
    for (const heavy::Config& c :
         configs_of(tensor_cores ? heavy::matmul_mma_candidates(s, limits) : heavy::matmul_candidates(s, t, limits)))
      op.candidates.push_back(c);
    if (workgroup)
      for (const heavy::Config& c : configs_of(heavy::matmul_workgroup_mma_candidates(s))) op.candidates.push_back(c);
  }
  // A bias sum stored beside the product (fuse.h): A's row sums, on the SIMT kernel (f32 products only).
  std::vector<ProgramBuffer> io = io_buffers(g, v);
  for (graph::Value vector : norm_vectors)
    io.push_back({ProgramBuffer::Use::Value, -1, device_type(g.type(vector).dtype), g.type(vector).numel(), vector.id});
  const bool row_sums = bias.valid();
  if (row_sums) {
    if (tensor_cores || warpgroups || workgroup)
      throw std::logic_error(fmt::format("matmul '{}': a bias sum beside a tensor-core product", node.name));
    io.push_back({ProgramBuffer::Use::Value, -1, t, g.type(bias).numel(), bias.id});
  }
  op.build = [s, t, async = limits.async_copy, io, row_sums, norm, subgroup = limits.subgroup_size](const heavy::Config& c) {
    const heavy::MatmulTiling tiling = heavy::MatmulTiling::from(c);
    if (tiling.matvec()) {
      heavy::HeavyKernel k = heavy::matvec_kernel(s, t, tiling.matvec_slices, norm, subgroup, tiling.unroll);
      return single_kernel_program(io, std::move(k.kernel), k.groups);
    }
    if (tiling.warpgroup_mma()) {
      heavy::HeavyKernel k = heavy::matmul_wgmma_kernel(s, tiling);
      return single_kernel_program(io, std::move(k.kernel), k.groups);
    }
    if (tiling.workgroup_matrix) {
      heavy::HeavyKernel k = heavy::matmul_workgroup_mma_kernel(s, tiling);
      return single_kernel_program(io, std::move(k.kernel), k.groups);
    }
    if (tiling.packed()) {
      // Each operand packed by a launch of its own into scratch (a weight's runs once: parameter_launches.h), then
      // the product from both.
      KernelProgram p;
      p.buffers = io;
      const int32_t packed_a = int32_t(p.buffers.size()), packed_b = packed_a + 1;
      for (bool b : {false, true})
        p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, b ? *s.b_half : *s.a_half,
                             int64_t(heavy::packed_operand_elements(s, tiling, b))});
      for (bool b : {false, true}) {
        heavy::HeavyKernel pack = heavy::matmul_pack_kernel(s, tiling, b, async);
        p.launches.push_back({std::move(pack.kernel), {b ? 1 : 0, b ? packed_b : packed_a}, pack.groups, {}});
      }
      heavy::HeavyKernel k = heavy::matmul_packed_kernel(s, tiling);
      p.launches.push_back({std::move(k.kernel), {packed_a, packed_b, 2}, k.groups, {}});
      return p;
    }
    if (tiling.tensor_cores()) {
      heavy::HeavyKernel k = heavy::matmul_mma_kernel(s, tiling, async);
      return single_kernel_program(io, std::move(k.kernel), k.groups);
    }
    heavy::HeavyKernel k = heavy::matmul_kernel(s, t, tiling, row_sums);
    if (tiling.splits == 1) return single_kernel_program(io, std::move(k.kernel), k.groups);  // a, b, c (, bias)
    // Split-K: partial sums [splits][batches][M][N] (unbatched, each split's followed by its row sums [M]) in scratch,
    // then a second launch adds them into the result (and the bias).
    heavy::HeavyKernel sum = heavy::matmul_split_sum_kernel(s, t, tiling, row_sums);
    KernelProgram p;
    p.buffers = io;
    const int32_t partials = int32_t(p.buffers.size());
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(tiling.splits) * (s.batch_count() * s.m * s.n + (row_sums ? s.m : 0))});
    p.launches.push_back({std::move(k.kernel), {0, 1, partials}, k.groups, {}});
    std::vector<int32_t> sum_buffers{partials, 2};
    if (row_sums) sum_buffers.push_back(3);
    p.launches.push_back({std::move(sum.kernel), std::move(sum_buffers), sum.groups, {}});
    return p;
  };
  return op;
}

namespace {

// A paired epilogue's combine (fuse.h): root's tree over the two halves of v's result (or of its epilogue's root e,
// computed here from each sum first), each half a slice the tree reads at the root's own element.
PairedStore paired_store(LoweringContext& ctx, graph::Value v, graph::Value root) {
  const graph::Graph& g = ctx.graph();
  const std::vector<std::vector<graph::Value>> users = g.users();
  auto slices_of = [&](graph::Value x) {
    std::vector<graph::Value> out;
    for (graph::Value u : users[size_t(x.id)])
      if (graph::op_name(g.node(u).op) == "slice" && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    return out;
  };
  graph::Value e = v;
  if (slices_of(v).size() != 2) e = users[size_t(v.id)].at(0);  // the epilogue's root, computed in the launch
  std::vector<graph::Value> halves = slices_of(e);
  if (halves.size() != 2) throw std::logic_error(fmt::format("matmul '{}': a paired epilogue without its two halves",
                                                             g.node(v).name));
  if (g.node(halves[0]).attrs.get_ints("starts").back() != 0) std::swap(halves[0], halves[1]);
  const uint32_t n = uint32_t(g.type(v).shape.back()), half = n / 2;
  return {root, [&ctx, v, e, halves, n, half, root](kir::KernelBuilder& kb, kir::Val index, kir::Val first,
                                                    kir::Val second, std::vector<ProgramBuffer>& loaded) {
            PointwiseTree tree(ctx, kb);
            const kir::Val row = index / half, column = index % half;
            auto through_epilogue = [&](kir::Val sum, kir::Val at) {  // e's element `at` from v's there
              if (e == v) return sum;
              tree.forget_computed();
              tree.substitute(v, sum);
              return tree.root(e, at);
            };
            const kir::Val a = through_epilogue(first, row * n + column);
            const kir::Val b = through_epilogue(second, row * n + half + column);
            tree.forget_computed();
            tree.substitute(halves[0], a);
            tree.substitute(halves[1], b);
            const kir::Val out = tree.root(root, index);
            for (graph::Value l : tree.loaded())
              loaded.push_back({ProgramBuffer::Use::Value, -1, device_type(ctx.graph().type(l).dtype),
                                ctx.graph().type(l).numel(), l.id});
            return out;
          }};
}

void lower_matmul(LoweringContext& ctx, graph::Value v) {
  const SideOutputs side = ctx.side_outputs(v);
  if (side.pair_root.valid()) {
    const PairedStore paired = paired_store(ctx, v, side.pair_root);
    lower_tunable(ctx, v, [&] { return tunable_matmul(ctx.graph(), v, ctx.limits(), {}, &paired); });
    return;
  }
  // A linear layer's bias gradient, where it is stored too (fuse.h).
  lower_tunable(ctx, v, [&] { return tunable_matmul(ctx.graph(), v, ctx.limits(), side.bias); });
}

// What the tuner times for a matmul node on its own (a bias sum stored beside it is tuned by tunable_ops()).
std::optional<TunableOp> matmul_alone(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  return tunable_matmul(g, v, limits);
}

}  // namespace

std::vector<OpLowering> matmul_lowerings() {
  return {{.op = "matmul", .lower = lower_matmul, .tunable = matmul_alone, .takes_epilogue = true,
           .cases = harness::matmul_cases}};
}

}  // namespace spire::lowering
