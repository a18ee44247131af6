// layer_norm and rms_norm (ir/graph/ops/norm_ops.cpp) over the last axis: one workgroup per row.
//
// The workgroup's invocations take the row's elements lid, lid + wg, ... ; a workgroup reduction
// (workgroup_reduce.h: one fixed order on every device) sums them into the mean (layer_norm only), then the squared
// deviations into the second moment, and each invocation writes its elements normalized, scaled and shifted. Rows of
// at most 8 elements per invocation keep them in registers between the passes (one read of x); longer rows are read
// again in each pass. The statistics are the kernel's type (f32 under every policy; compute_in_f32 widens half rows).
// Buffers: x (read), scale (read), bias (read, layer_norm only), y (write); a fused epilogue applies to y's stores.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

struct NormShape {
  int64_t rows = 1, length = 1;  // rows of x and the last axis's length
  bool center = true;            // layer_norm (subtract the mean; a bias); false: rms_norm
  double epsilon = 1e-5;
};

// A workgroup of `wg` invocations (a power of two, 32 to 1024) per row: "wg=256".
struct NormConfig {
  uint32_t wg = 256;
  Config config() const;
  static NormConfig from(const Config& c);
  friend bool operator==(const NormConfig&, const NormConfig&) = default;
};

// The heuristic: the smallest power of two from 32 to 256 invocations that leaves each at most 4 elements (rows of
// more than 1024 elements take 256).
NormConfig norm_heuristic(const NormShape& s);
// The heuristic first, then every other power of two from 32 to 256 within the device's workgroup limit.
std::vector<NormConfig> norm_candidates(const NormShape& s, const Limits& limits);

// `subgroup`: the device's Limits::subgroup_size, which the reductions shuffle across (the same bits either way).
HeavyKernel norm_kernel(const NormShape& s, kir::Type t, const NormConfig& c, uint32_t subgroup = 0);

}  // namespace spire::lowering::heavy
