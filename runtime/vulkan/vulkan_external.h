// Running spire on the host program's own Vulkan device: a game or an app that already has a VkInstance, a
// VkDevice and a queue hands them to spire instead of letting spire create a second device, and lends spire its
// VkBuffers as kernel inputs and outputs, so no data goes through the host.
//
// Ownership. Everything in ExternalVulkan and every adopted VkBuffer stays the host's: spire never destroys or
// frees them. Destroying the rt::Device (and the last buffer, kernel and stream made from it) destroys only what
// spire created on the device: pipelines, the pipeline cache, command pools, descriptor pools, fences, query
// pools and its own buffers (alloc() and its staging buffer). The host must keep its instance, device and
// buffers alive until then, and must not destroy an adopted VkBuffer while a spire object uses it.
//
// The queue. Vulkan requires a queue's users to be externally synchronized. spire uses the queue in
// vkQueueSubmit and vkQueueWaitIdle only, during the calls that submit or wait (run, submit, upload, download,
// fill, wait_idle, and the device's destruction). Either the host never uses that queue while such a call runs
// on another thread, or it gives lock_queue/unlock_queue: spire then takes that lock around each use. Do not
// call spire while holding that lock yourself. Synchronous transfers and the device's destruction wait for the
// whole queue to go idle (vkQueueWaitIdle), the host's work on it included.
//
// Memory order with the host's own work on the same queue: every spire submission begins with a barrier from
// earlier compute and transfer writes to its own reads and writes, and ends with one to host reads. Work the
// host submits after spire's and that reads an output must start with its own barrier from
// VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT / VK_ACCESS_SHADER_WRITE_BIT (and TRANSFER/TRANSFER_WRITE, for copies and
// fills). Work on another queue needs the host's own semaphores or fences: spire waits for its work before it
// returns from run() and from every synchronous transfer.
//
// Features. Vulkan cannot report which features a VkDevice was created with, so the host says so in
// enabled_features: the VkPhysicalDeviceFeatures2 chain it gave vkCreateDevice (spire reads shaderFloat64,
// shaderInt64, 16-bit storage and push constants, shaderFloat16 and shaderBufferFloat32AtomicAdd from
// VkPhysicalDeviceFeatures2, VkPhysicalDeviceVulkan11Features, VkPhysicalDeviceVulkan12Features,
// VkPhysicalDevice16BitStorageFeatures, VkPhysicalDeviceShaderFloat16Int8Features and
// VkPhysicalDeviceShaderAtomicFloatFeaturesEXT; other structures are skipped). Null means only what every Vulkan
// 1.1 device has: then DeviceInfo::features holds no float64, int64, float16 or f32 atomics, and kernels needing
// them are refused with MissingFeature rather than failing in the driver. DeviceInfo is otherwise filled as for a
// listed device (name, vendor, driver, limits, subgroup size, SPIRE_MASK_FEATURES applies) with the id
// "vulkan:app" and the index -1: an adopted device is not one of list_devices().
//
// Functions. Every Vulkan function spire calls on the adopted device comes from the host's
// get_instance_proc_addr (and the vkGetDeviceProcAddr it returns), never from the libvulkan spire loads itself,
// so a host with its own loader, or with layers of its own, works; spire's own devices in the same process keep
// working beside it.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_api.h"

namespace spire::rt::vulkan {

struct ExternalVulkan {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;  // must support compute
  VkQueue queue = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;  // the host's loader entry
  // The VkApplicationInfo::apiVersion the host created its instance with: spire's SPIR-V needs Vulkan 1.1.
  uint32_t api_version = VK_API_VERSION_1_1;
  // The features chain the host passed to vkCreateDevice; null: Vulkan 1.1 core only (see above).
  const VkPhysicalDeviceFeatures2* enabled_features = nullptr;
  // Optional: the host's lock for `queue` (both or neither).
  void (*lock_queue)(void* user_data) = nullptr;
  void (*unlock_queue)(void* user_data) = nullptr;
  void* queue_lock_user_data = nullptr;
};

// An rt::Device on the host's VkDevice. Throws rt::Error for a missing handle or function, a queue family without
// compute, or a Vulkan version below 1.1.
std::unique_ptr<Device> adopt_device(const ExternalVulkan& app);

// A host VkBuffer, created on the adopted VkDevice with STORAGE_BUFFER usage (and TRANSFER_SRC / TRANSFER_DST for
// copies, fills, uploads and downloads) and bound to memory, as an rt::Buffer that can be bound in dispatches and
// used in copies, fills, uploads and downloads. spire does not free it. `bytes` is the usable size from its start:
// a multiple of 4 (fills and copies write whole 32-bit words) and no more than the buffer holds. Throws rt::Error
// for a null buffer, a device that is not a Vulkan device, or a size that is 0, not a multiple of 4, or larger
// than the buffer's memory requirements (Vulkan cannot report a buffer's size, so a size between the buffer's
// real size and its memory requirements goes unnoticed).
std::shared_ptr<Buffer> adopt_buffer(Device& device, VkBuffer buffer, uint64_t bytes);

}  // namespace spire::rt::vulkan
