#include "lowering/precision_policy.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering {

bool has_tf32_matrices(const rt::DeviceInfo& info) {
  return info.backend == rt::Backend::Cuda && info.compute_capability >= 80 &&
         info.features.has(Feature::CooperativeMatrix) && info.subgroup_size == 32;
}

heavy::Limits limits_under(heavy::Limits limits, const rt::DeviceInfo& info, Precision p) {
  if (p == Precision::Bf16 || p == Precision::F16)
    throw std::invalid_argument(fmt::format("--precision {} is not lowered yet (only fp32 and tf32 are); "
                                            "docs/PRECISION.md says what it will do", precision_name(p)));
  limits.tf32 = p == Precision::Tf32 && has_tf32_matrices(info) && limits.cooperative_matrix && limits.ptx;
  return limits;
}

std::string precision_note(const rt::DeviceInfo& info, Precision p) {
  if (p != Precision::Tf32 || has_tf32_matrices(info)) return "";
  if (info.backend == rt::Backend::Vulkan)
    return fmt::format("{} has no TF32 cooperative matrices; tf32 runs as fp32", info.id);
  return fmt::format("{} has no TF32 tensor cores (sm_80 or newer); tf32 runs as fp32", info.id);
}

}  // namespace spire::lowering
