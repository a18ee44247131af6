#include "lowering/precision_policy.h"

#include <fmt/format.h>

#include "passes/fuse_norms.h"
#include "passes/half_storage.h"

namespace spire::lowering {

bool has_tf32_matrices(const rt::DeviceInfo& info) {
  return info.backend == rt::Backend::Cuda && info.compute_capability >= 80 &&
         info.features.has(Feature::CooperativeMatrix) && info.subgroup_size == 32;
}

namespace {

// The feature a half policy's storage type needs (base/features.h), or None for fp32 and tf32.
Feature half_feature(Precision p) {
  if (p == Precision::Bf16) return Feature::BFloat16;
  if (p == Precision::F16) return Feature::Float16;
  return Feature::None;
}

}  // namespace

bool has_half_storage(const rt::DeviceInfo& info, Precision p) {
  return half_feature(p) != Feature::None && info.features.has(half_feature(p));
}

graph::Graph graph_under(const graph::Graph& g, const rt::DeviceInfo& info, Precision p) {
  if (!has_half_storage(info, p)) return g;
  // The norms are found first: the half storage's casts would hide the f32 chains fuse_norms looks for.
  return passes::store_in_half(passes::fuse_norms(g), p == Precision::Bf16 ? graph::DType::BF16 : graph::DType::F16);
}

heavy::Limits limits_under(heavy::Limits limits, const rt::DeviceInfo& info, Precision p) {
  limits.tf32 = p == Precision::Tf32 && has_tf32_matrices(info) && limits.cooperative_matrix && limits.ptx;
  return limits;
}

std::string precision_note(const rt::DeviceInfo& info, Precision p) {
  if (half_feature(p) != Feature::None)
    return has_half_storage(info, p) ? ""
                                     : fmt::format("{} has no {} storage; {} runs as fp32", info.id,
                                                   feature_name(half_feature(p)), precision_name(p));
  if (p != Precision::Tf32 || has_tf32_matrices(info)) return "";
  if (info.backend == rt::Backend::Vulkan)
    return fmt::format("{} has no TF32 cooperative matrices; tf32 runs as fp32", info.id);
  return fmt::format("{} has no TF32 tensor cores (sm_80 or newer); tf32 runs as fp32", info.id);
}

}  // namespace spire::lowering
