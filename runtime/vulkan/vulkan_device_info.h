// What runtime/vulkan learns about a physical device: the public DeviceInfo, plus the facts open() and the
// allocator need (queue family, memory types, which optional features and extensions exist).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_functions.h"
#include "runtime/vulkan/vulkan_khr_matrix.h"

namespace spire::rt::vulkan {

struct PhysicalDeviceFacts {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  InstanceFunctions instance_functions;  // of the instance the physical device was enumerated from
  DeviceInfo info;  // features already reduced by SPIRE_MASK_FEATURES
  uint32_t api_version = 0;
  // What names a driver build for the pipeline cache (vulkan_pipeline_cache.h).
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
  uint32_t queue_family = ~0u;  // a family with compute (timestamps preferred); ~0u when none
  uint32_t timestamp_valid_bits = 0;
  float timestamp_period_ns = 1.0f;
  uint32_t max_push_constant_bytes = 128;
  uint32_t max_storage_buffers_per_stage = 4;  // maxPerStageDescriptorStorageBuffers
  uint64_t max_allocation_bytes = 0;  // maxMemoryAllocationSize
  VkPhysicalDeviceMemoryProperties memory{};
  // Optional capabilities present on the device (before masking), which open() may enable. For an adopted device
  // (vulkan_external.h): only those the host program enabled.
  bool has_float64 = false;              // shaderFloat64
  bool has_int64 = false;                // shaderInt64
  bool has_float16_arith = false;        // shaderFloat16
  bool has_storage_buffer_16bit = false; // storageBuffer16BitAccess
  bool has_push_constant_16bit = false;  // storagePushConstant16
  bool float16_int8_core = false;        // Vulkan 1.2: no extension to enable for shaderFloat16
  bool has_float16_int8_extension = false;
  bool has_atomic_float_extension = false;
  bool has_atomic_float_add = false;     // shaderBufferFloat32AtomicAdd
  bool has_subgroup_shuffle = false;     // basic and shuffle subgroup operations in the compute stage (core 1.1 query)
  bool has_pipeline_executable_properties = false;  // VK_KHR_pipeline_executable_properties (vulkan_pipeline_stats.h)
  bool has_portability_subset = false;   // VK_KHR_portability_subset must then be enabled (MoltenVK)
  bool has_int16 = false;                // shaderInt16
  // Tensor-core matrices as kir's fragments use them (backends/spirv/emit_matrix.cpp): VK_KHR_cooperative_matrix
  // with 16x16x16 subgroup products of f16 and of bf16 into f32 (VK_KHR_shader_bfloat16), the Vulkan memory model
  // and shaderInt16 (bf16 staged in workgroup memory as 16-bit words). kir has one feature for both operand types,
  // so a device offering only one of them is reported without it.
  bool has_cooperative_matrix = false;
  // Workgroup matrices as kir uses them (Feature::WorkgroupMatrix): VK_NV_cooperative_matrix2's workgroup scope,
  // flexible dimensions and tensor addressing, with flexible-dimension entries for f16 and bf16 products into f32 at
  // workgroup scope by 256 invocations in steps that divide 32 x 32 x 16 (kir's workgroup matrix kernels use those
  // multiples), on top of has_cooperative_matrix.
  bool has_workgroup_matrix = false;
  bool memory_model_core = false;        // Vulkan 1.2: no extension to enable for vulkanMemoryModel
  // VK_EXT_pipeline_robustness with its pipelineRobustness feature: pipelines may then ask for storage buffer accesses
  // without bounds checks (vulkan_kernel.cpp).
  bool has_pipeline_robustness = false;
  // Vulkan 1.2's hostQueryReset: a timestamp query pool may be reset from the host, not by a command that costs the
  // GPU microseconds at the start of every submission (vulkan_command_stream.cpp).
  bool has_host_query_reset = false;
  // VK_KHR_external_memory_fd: buffers whose memory another API on the same GPU imports by a file descriptor
  // (vulkan_cuda_bridge.h), and the UUID that API names the GPU by (VkPhysicalDeviceIDProperties::deviceUUID).
  bool has_external_memory_fd = false;
  // Vulkan 1.2's timelineSemaphore and VK_KHR_external_semaphore_fd: a timeline semaphore that another API on the same
  // GPU imports by a file descriptor, so that the two order their work on the device (vulkan_cuda_bridge.h).
  bool has_shared_timeline = false;
  uint8_t device_uuid[VK_UUID_SIZE] = {};
};

// Queries one physical device through `instance_functions`; N is its index in vkEnumeratePhysicalDevices order.
PhysicalDeviceFacts describe_physical_device(const InstanceFunctions& instance_functions, VkPhysicalDevice pd, int index);

// The kir features the capabilities in `f` (has_float64, has_float16_arith, ...) offer, less those
// SPIRE_MASK_FEATURES hides: what DeviceInfo::features reports.
Features offered_features(const PhysicalDeviceFacts& f);

// Whether `entries` (a driver's VkCooperativeMatrixPropertiesKHR list) hold 16x16x16 subgroup products with f32 sums of
// f16 operands and of bf16 ones: what kir's cooperative matrices need.
bool offers_kir_matrix_shapes(const std::vector<VkCooperativeMatrixPropertiesKHR>& entries);

// Whether `entries` (a driver's VkCooperativeMatrixFlexibleDimensionsPropertiesNV list) hold workgroup-scope products
// with f32 sums of f16 operands and of bf16 ones for workgroups of 256 invocations, in granularities that divide
// 32 (M, N) and 16 (K): what kir's workgroup matrix kernels use.
bool offers_kir_workgroup_matrices(const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& entries);

// "NVIDIA", "AMD", "Intel", "Mesa", ..., or the id in hex.
std::string vendor_name(uint32_t vendor_id);

}  // namespace spire::rt::vulkan
