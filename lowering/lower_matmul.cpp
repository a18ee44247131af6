// matmul -> one tiled kernel (kernels/matmul_kernel.h), its tiling tunable; a 2D transpose or a
// cast up from f16/bf16 feeding it is read in place (lowering/fuse.h, in_place_operand). A linear layer's weight
// gradient may also store the layer's bias gradient, the row sums of its A (fuse.h's bias sums).
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
#include "lowering/tunable_ops.h"
#include "op_harness/cases.h"

namespace spire::lowering {

TunableOp tunable_matmul(const graph::Graph& g, graph::Value v, const heavy::Limits& limits, graph::Value bias) {
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
  op.key = {"matmul", s.text() + (bias.valid() ? "_rowsums" : "") + (norm ? norm->tag() : ""),
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
  const bool only_matvec = (s.b_transposed && !s.b_batch.empty()) || norm;
  if (only_matvec && !matvec)
    throw std::logic_error(fmt::format("matmul '{}': {}, which only the few-rows kernel reads, but it does not fit on "
                                       "this device", node.name, norm ? "A a norm's result" : "a batched B read transposed"));
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

void lower_matmul(LoweringContext& ctx, graph::Value v) {
  const graph::Value bias = ctx.side_outputs(v).bias;  // a linear layer's bias gradient, where it is stored too (fuse.h)
  lower_tunable(ctx, v, [&] { return tunable_matmul(ctx.graph(), v, ctx.limits(), bias); });
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
