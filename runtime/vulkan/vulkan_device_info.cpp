#include "runtime/vulkan/vulkan_device_info.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace spire::rt::vulkan {

std::string vendor_name(uint32_t vendor_id) {
  switch (vendor_id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x10005: return "Mesa";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x1010: return "Imagination";
    case 0x14E4: return "Broadcom";
    case 0x1AE0: return "Google";
    case 0x1414: return "Microsoft";
    case 0x10002: return "VeriSilicon";
    case 0x10004: return "Codeplay";
    case 0x10006: return "PoCL";
    default: return fmt::format("0x{:04X}", vendor_id);
  }
}

namespace {

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

DeviceType device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::DiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::IntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::VirtualGpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::Cpu;
    default: return DeviceType::Other;
  }
}

std::vector<VkExtensionProperties> device_extensions(const InstanceFunctions& vki, VkPhysicalDevice pd) {
  uint32_t n = 0;
  if (vki.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkExtensionProperties> exts(n);
  if (vki.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()) < 0) return {};
  exts.resize(n);
  return exts;
}

// The driver's own version encoding where it is known (NVIDIA packs 10.8.8.6 bits), else Vulkan's.
std::string driver_version_text(uint32_t vendor, uint32_t v) {
  if (vendor == 0x10DE) return fmt::format("{}.{}.{}", v >> 22, (v >> 14) & 0xFF, (v >> 6) & 0xFF);
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

// Picks the queue family: compute with timestamps first; among those, the first in the list (the universal
// graphics+compute queue on most drivers, which every driver schedules best).
void choose_queue_family(PhysicalDeviceFacts& f) {
  uint32_t n = 0;
  f.instance_functions.vkGetPhysicalDeviceQueueFamilyProperties(f.handle, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  f.instance_functions.vkGetPhysicalDeviceQueueFamilyProperties(f.handle, &n, fams.data());
  for (int pass = 0; pass < 2 && f.queue_family == ~0u; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fams[i].queueCount == 0) continue;
      if (pass == 0 && fams[i].timestampValidBits == 0) continue;
      f.queue_family = i;
      f.timestamp_valid_bits = fams[i].timestampValidBits;
      break;
    }
  }
}

// A driver's list of `Entry` structures (of type `type`) through the two-call `query`; empty when the driver has no
// such query or lists nothing.
template <class Entry, class Query>
std::vector<Entry> driver_entries(Query query, VkPhysicalDevice pd, VkStructureType type) {
  if (!query) return {};
  uint32_t n = 0;
  if (query(pd, &n, nullptr) != VK_SUCCESS || n == 0) return {};
  std::vector<Entry> entries(n);
  for (auto& e : entries) e = {type};
  if (query(pd, &n, entries.data()) < 0) return {};
  entries.resize(n);
  return entries;
}

// The driver's cooperative-matrix entries.
std::vector<VkCooperativeMatrixPropertiesKHR> cooperative_matrix_entries(const InstanceFunctions& vki, VkPhysicalDevice pd) {
  return driver_entries<VkCooperativeMatrixPropertiesKHR>(vki.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR, pd,
                                                          VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
}

// The driver's flexible-dimension entries (VK_NV_cooperative_matrix2).
std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> flexible_matrix_entries(const InstanceFunctions& vki,
                                                                                       VkPhysicalDevice pd) {
  return driver_entries<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vki.vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV, pd,
      VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV);
}

}  // namespace

bool offers_kir_workgroup_matrices(const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& entries) {
  auto offers = [&](VkComponentTypeKHR operand) {
    for (const auto& e : entries)
      if (e.scope == VK_SCOPE_WORKGROUP_KHR && e.workgroupInvocations == 256 && e.AType == operand &&
          e.BType == operand && e.CType == VK_COMPONENT_TYPE_FLOAT32_KHR && e.ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
          e.MGranularity && 32 % e.MGranularity == 0 && e.NGranularity && 32 % e.NGranularity == 0 && e.KGranularity &&
          16 % e.KGranularity == 0)
        return true;
    return false;
  };
  return offers(VK_COMPONENT_TYPE_FLOAT16_KHR) && offers(VK_COMPONENT_TYPE_BFLOAT16_KHR);
}

bool offers_kir_matrix_shapes(const std::vector<VkCooperativeMatrixPropertiesKHR>& entries) {
  auto offers = [&](VkComponentTypeKHR operand) {
    for (const auto& e : entries)
      if (e.MSize == 16 && e.NSize == 16 && e.KSize == 16 && e.AType == operand && e.BType == operand &&
          e.CType == VK_COMPONENT_TYPE_FLOAT32_KHR && e.ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
          e.scope == VK_SCOPE_SUBGROUP_KHR)
        return true;
    return false;
  };
  return offers(VK_COMPONENT_TYPE_FLOAT16_KHR) && offers(VK_COMPONENT_TYPE_BFLOAT16_KHR);
}

PhysicalDeviceFacts describe_physical_device(const InstanceFunctions& vki, VkPhysicalDevice pd, int index) {
  PhysicalDeviceFacts f;
  f.handle = pd;
  f.instance_functions = vki;
  VkPhysicalDeviceProperties base{};
  vki.vkGetPhysicalDeviceProperties(pd, &base);
  f.api_version = base.apiVersion;
  f.vendor_id = base.vendorID;
  f.device_id = base.deviceID;
  f.driver_version = base.driverVersion;
  std::copy(std::begin(base.pipelineCacheUUID), std::end(base.pipelineCacheUUID), f.pipeline_cache_uuid);
  auto exts = device_extensions(vki, pd);
  bool v12 = base.apiVersion >= VK_API_VERSION_1_2;

  // Properties: subgroup and maintenance3 are core in 1.1; driver properties in 1.2 or by extension.
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  props.pNext = &subgroup;
  subgroup.pNext = &maint3;
  maint3.pNext = &ids;
  bool has_driver_props = v12 || has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (has_driver_props) ids.pNext = &driver;
  vki.vkGetPhysicalDeviceProperties2(pd, &props);

  // Features: 16-bit storage is core in 1.1; float16 arithmetic in 1.2 or by extension; atomic float by extension.
  f.float16_int8_core = v12;
  f.has_float16_int8_extension = has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  f.has_atomic_float_extension = has_extension(exts, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  void** tail = &feats.pNext;
  *tail = &storage16;
  tail = &storage16.pNext;
  if (f.float16_int8_core || f.has_float16_int8_extension) {
    *tail = &f16;
    tail = &f16.pNext;
  }
  if (f.has_atomic_float_extension) {
    *tail = &atomic_float;
    tail = &atomic_float.pNext;
  }
  // Cooperative matrices: the extension's features, bf16's, and the Vulkan memory model's (core in 1.2).
  f.memory_model_core = v12;
  const bool coop_extensions = has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                               has_extension(exts, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME) &&
                               (v12 || has_extension(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME));
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (coop_extensions) {
    *tail = &coop;
    coop.pNext = &bf16;
    bf16.pNext = &memory_model;
    tail = &memory_model.pNext;
  }
  const bool coop2_extension = coop_extensions && has_extension(exts, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (coop2_extension) {
    *tail = &coop2;
    tail = &coop2.pNext;
  }
  const bool robustness_extension = has_extension(exts, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME);
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
  if (robustness_extension) {
    *tail = &robustness;
    tail = &robustness.pNext;
  }
  VkPhysicalDeviceHostQueryResetFeatures host_reset{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES};
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  if (v12) {
    *tail = &host_reset;
    host_reset.pNext = &timeline;
    tail = &timeline.pNext;
  }
  vki.vkGetPhysicalDeviceFeatures2(pd, &feats);
  f.has_host_query_reset = v12 && host_reset.hostQueryReset;
  f.has_shared_timeline = v12 && timeline.timelineSemaphore &&
                          has_extension(exts, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  f.has_pipeline_robustness = robustness_extension && robustness.pipelineRobustness;
  f.has_float64 = feats.features.shaderFloat64;
  f.has_int64 = feats.features.shaderInt64;
  f.has_float16_arith = f16.shaderFloat16;
  f.has_storage_buffer_16bit = storage16.storageBuffer16BitAccess;
  f.has_push_constant_16bit = storage16.storagePushConstant16;
  f.has_atomic_float_add = f.has_atomic_float_extension && atomic_float.shaderBufferFloat32AtomicAdd;
  f.has_int16 = feats.features.shaderInt16;
  f.has_cooperative_matrix = coop_extensions && coop.cooperativeMatrix && bf16.shaderBFloat16Type &&
                             bf16.shaderBFloat16CooperativeMatrix && memory_model.vulkanMemoryModel && f.has_int16 &&
                             offers_kir_matrix_shapes(cooperative_matrix_entries(vki, pd));
  f.has_workgroup_matrix = f.has_cooperative_matrix && coop2_extension && coop2.cooperativeMatrixWorkgroupScope &&
                           coop2.cooperativeMatrixFlexibleDimensions && coop2.cooperativeMatrixTensorAddressing &&
                           offers_kir_workgroup_matrices(flexible_matrix_entries(vki, pd));
  const VkSubgroupFeatureFlags shuffle_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  f.has_subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                           (subgroup.supportedOperations & shuffle_ops) == shuffle_ops;

  vki.vkGetPhysicalDeviceMemoryProperties(pd, &f.memory);
  choose_queue_family(f);
  f.timestamp_period_ns = base.limits.timestampPeriod;
  f.max_push_constant_bytes = base.limits.maxPushConstantsSize;
  f.max_storage_buffers_per_stage = base.limits.maxPerStageDescriptorStorageBuffers;
  f.has_portability_subset = has_extension(exts, "VK_KHR_portability_subset");
  f.has_pipeline_executable_properties = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  f.has_external_memory_fd = has_extension(exts, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  std::copy(std::begin(ids.deviceUUID), std::end(ids.deviceUUID), f.device_uuid);
  f.max_allocation_bytes = apply_allocation_cap(maint3.maxMemoryAllocationSize);

  DeviceInfo& d = f.info;
  d.id = fmt::format("vulkan:{}", index);
  d.backend = Backend::Vulkan;
  d.index = index;
  d.name = base.deviceName;
  d.vendor = vendor_name(base.vendorID);
  if (has_driver_props)
    d.driver = trim(fmt::format("{} {}", driver.driverName, driver.driverInfo));
  else
    d.driver = driver_version_text(base.vendorID, base.driverVersion);
  d.type = device_type(base.deviceType);
  d.subgroup_size = subgroup.subgroupSize;
  d.shared_memory_bytes = base.limits.maxComputeSharedMemorySize;
  d.max_workgroup_invocations = base.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    d.max_workgroup_size[i] = base.limits.maxComputeWorkGroupSize[i];
    d.max_workgroup_count[i] = base.limits.maxComputeWorkGroupCount[i];
  }
  d.max_buffer_bytes = base.limits.maxStorageBufferRange;
  d.max_allocation_bytes = f.max_allocation_bytes;
  d.max_kernel_buffers = base.limits.maxPerStageDescriptorStorageBuffers;
  for (uint32_t h = 0; h < f.memory.memoryHeapCount; ++h)
    if (f.memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.memory_bytes = std::max<uint64_t>(d.memory_bytes, f.memory.memoryHeaps[h].size);
  // 16 at least, as on CUDA: kernels read buffers 16 bytes at a time from any multiple-of-4 index
  // (LoadBufferVector), which needs every view to start on 16 bytes; memory plans align to 16 anyway.
  d.min_storage_offset_alignment = uint32_t(std::max<VkDeviceSize>(16, base.limits.minStorageBufferOffsetAlignment));
  d.compute_capability = 0;

  d.features = offered_features(f);
  return f;
}

Features offered_features(const PhysicalDeviceFacts& f) {
  // 32-bit storage-buffer atomics are core Vulkan; copies into workgroup memory are plain SPIR-V loads and stores
  // (backends/spirv/emit_copies.cpp), so every device has them.
  Features have = Features(Feature::AtomicAddInt) | Feature::AsyncCopy;
  if (f.has_float64) have |= Feature::Float64;
  if (f.has_int64) have |= Feature::Int64;
  if (f.has_float16_arith && f.has_storage_buffer_16bit) have |= Feature::Float16;
  if (f.has_storage_buffer_16bit) have |= Feature::BFloat16;  // bf16 kernels compute in f32 (kir/types.h)
  if (f.has_atomic_float_add) have |= Feature::AtomicAddF32;
  if (f.has_subgroup_shuffle) have |= Feature::SubgroupShuffle;
  // Fragments belong to subgroups of 32 (kir/kernel.h) and their kernels read subgroup builtins.
  if (f.has_cooperative_matrix && f.has_subgroup_shuffle && f.info.subgroup_size == 32 && f.has_storage_buffer_16bit)
    have |= Feature::CooperativeMatrix;
  // On top of cooperative matrices (the same types, at workgroup scope), and for workgroups of 256 invocations.
  if (have.has(Feature::CooperativeMatrix) && f.has_workgroup_matrix && f.info.max_workgroup_invocations >= 256)
    have |= Feature::WorkgroupMatrix;
  return rt::apply_feature_mask(have);
}

}  // namespace spire::rt::vulkan
