#include "bundle/compiler/target_profiles.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::bundle {

namespace {

rt::DeviceInfo portable_vulkan() {
  rt::DeviceInfo d;
  d.id = "spirv";
  d.backend = rt::Backend::Vulkan;
  d.name = "any Vulkan 1.1 device";
  d.type = rt::DeviceType::Other;
  d.subgroup_size = 0;  // unknown: kernels must not depend on it
  d.shared_memory_bytes = 32768;
  d.max_workgroup_invocations = 256;
  d.max_workgroup_size = {256, 256, 64};
  d.max_workgroup_count = {65535, 65535, 65535};
  d.max_buffer_bytes = uint64_t(1) << 30;
  d.max_kernel_buffers = 24;  // what mobile GPUs offer; desktop drivers offer thousands
  d.memory_bytes = uint64_t(1) << 32;
  d.min_storage_offset_alignment = 256;
  // A half model's kernels need 16-bit storage, which lavapipe and the desktop drivers offer; a device without it
  // refuses them by name at load, as one without float64 or int64 refuses those.
  d.features = Features(Feature::Float64) | Feature::Int64 | Feature::AtomicAddInt |
               Feature::Float16 | Feature::BFloat16;
  return d;
}

rt::DeviceInfo nvidia_ptx(uint32_t sm) {
  rt::DeviceInfo d;
  d.id = sm == 75 ? "ptx" : fmt::format("ptx:sm_{}", sm);
  d.backend = rt::Backend::Cuda;
  d.name = fmt::format("NVIDIA sm_{} or newer", sm);
  d.vendor = "NVIDIA";
  d.type = rt::DeviceType::DiscreteGpu;
  d.subgroup_size = 32;
  d.shared_memory_bytes = 49152;
  d.max_workgroup_invocations = 1024;
  d.max_workgroup_size = {1024, 1024, 64};
  d.max_workgroup_count = {2147483647u, 65535, 65535};
  d.max_buffer_bytes = d.memory_bytes = uint64_t(8) << 30;
  d.max_kernel_buffers = 256;
  d.min_storage_offset_alignment = 16;
  d.compute_capability = sm;
  d.features = Features(Feature::Float16) | Feature::Float64 | Feature::Int64 |
               Feature::AtomicAddInt | Feature::AtomicAddF32 | Feature::SubgroupShuffle |
               Feature::BFloat16;
  if (sm >= 80) d.features |= Features(Feature::CooperativeMatrix) | Feature::AsyncCopy;  // as runtime/cuda
  return d;
}

}  // namespace

rt::DeviceInfo target_profile(const std::string& name) {
  if (name == "spirv") return portable_vulkan();
  if (name == "ptx") return nvidia_ptx(75);
  if (name.rfind("ptx:sm_", 0) == 0) {
    const std::string digits = name.substr(7);
    if (!digits.empty() && digits.size() <= 3 && digits.find_first_not_of("0123456789") == std::string::npos) {
      const int sm = std::stoi(digits);
      if (sm >= 75) return nvidia_ptx(uint32_t(sm));
      throw std::invalid_argument(fmt::format("target '{}': spire's PTX needs sm_75 or newer", name));
    }
  }
  throw std::invalid_argument(fmt::format("unknown target '{}' (known: spirv, ptx, ptx:sm_NN)", name));
}

std::vector<rt::DeviceInfo> target_profiles(const std::string& comma_list) {
  std::vector<rt::DeviceInfo> out;
  size_t at = 0;
  while (at <= comma_list.size()) {
    const size_t end = std::min(comma_list.find(',', at), comma_list.size());
    const std::string name = comma_list.substr(at, end - at);
    if (name.empty()) throw std::invalid_argument(fmt::format("--targets '{}': an empty name", comma_list));
    out.push_back(target_profile(name));
    at = end + 1;
  }
  return out;
}

}  // namespace spire::bundle
