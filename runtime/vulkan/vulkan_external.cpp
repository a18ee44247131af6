#include "runtime/vulkan/vulkan_external.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_buffer.h"
#include "runtime/vulkan/vulkan_device.h"
#include "runtime/vulkan/vulkan_device_info.h"

namespace spire::rt::vulkan {

namespace {

constexpr const char* kAdoptedId = "vulkan:app";

// The optional features the host enabled, read from the chain it gave vkCreateDevice.
struct EnabledFeatures {
  bool float64 = false, int64 = false;
  bool storage_buffer_16bit = false, push_constant_16bit = false, float16_arith = false;
  bool atomic_float_add = false;
};

EnabledFeatures read_enabled_features(const VkPhysicalDeviceFeatures2* chain) {
  EnabledFeatures e;
  // Vulkan 1.1's feature structure and the older 16-bit storage one carry the same two fields.
  auto read_16bit_storage = [&e](const auto* f) {
    e.storage_buffer_16bit |= bool(f->storageBuffer16BitAccess);
    e.push_constant_16bit |= bool(f->storagePushConstant16);
  };
  for (auto* s = reinterpret_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceFeatures2*>(s);
        e.float64 |= bool(f->features.shaderFloat64);
        e.int64 |= bool(f->features.shaderInt64);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        read_16bit_storage(reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s));
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        read_16bit_storage(reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s));
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES:
        e.float16_arith |= bool(reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s)->shaderFloat16);
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES:
        e.float16_arith |= bool(reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s)->shaderFloat16);
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT:
        e.atomic_float_add |=
            bool(reinterpret_cast<const VkPhysicalDeviceShaderAtomicFloatFeaturesEXT*>(s)->shaderBufferFloat32AtomicAdd);
        break;
      default: break;  // structures spire does not use
    }
  }
  return e;
}

void require(bool present, const char* what) {
  if (!present) throw InvalidUse(fmt::format("adopt_device: ExternalVulkan::{} is null", what));
}

}  // namespace

std::unique_ptr<Device> adopt_device(const ExternalVulkan& app) {
  require(app.instance, "instance");
  require(app.physical_device, "physical_device");
  require(app.device, "device");
  require(app.queue, "queue");
  require(app.get_instance_proc_addr, "get_instance_proc_addr");
  if (bool(app.lock_queue) != bool(app.unlock_queue))
    throw InvalidUse("adopt_device: give both ExternalVulkan::lock_queue and unlock_queue, or neither");

  PhysicalDeviceFacts facts = describe_physical_device(
      InstanceFunctions::load(app.get_instance_proc_addr, app.instance), app.physical_device, /*index=*/-1);
  DeviceInfo& d = facts.info;
  d.id = kAdoptedId;
  const uint32_t version = std::min(app.api_version, facts.api_version);
  if (version < VK_API_VERSION_1_1)
    throw InvalidUse(fmt::format("adopt_device: {} ({}) is used at Vulkan {}.{}; spire needs Vulkan 1.1 (create the instance "
                            "with VkApplicationInfo::apiVersion 1.1 or newer and say so in ExternalVulkan::api_version)",
                            kAdoptedId, d.name, VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version)));

  // The host's queue family replaces the one spire would have picked.
  uint32_t families = 0;
  facts.instance_functions.vkGetPhysicalDeviceQueueFamilyProperties(app.physical_device, &families, nullptr);
  std::vector<VkQueueFamilyProperties> props(families);
  facts.instance_functions.vkGetPhysicalDeviceQueueFamilyProperties(app.physical_device, &families, props.data());
  if (app.queue_family >= families || !(props[app.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    throw InvalidUse(fmt::format("adopt_device: queue family {} of {} ({}) {}", app.queue_family, kAdoptedId, d.name,
                            app.queue_family >= families ? fmt::format("does not exist ({} families)", families)
                                                         : std::string("has no compute support")));
  facts.queue_family = app.queue_family;
  facts.timestamp_valid_bits = props[app.queue_family].timestampValidBits;

  // Only what the host enabled may be used: enabling is a device-creation-time choice spire cannot make.
  const EnabledFeatures on = read_enabled_features(app.enabled_features);
  facts.has_float64 = facts.has_float64 && on.float64;
  facts.has_int64 = facts.has_int64 && on.int64;
  facts.has_storage_buffer_16bit = facts.has_storage_buffer_16bit && on.storage_buffer_16bit;
  facts.has_push_constant_16bit = facts.has_push_constant_16bit && on.push_constant_16bit;
  facts.has_float16_arith = facts.has_float16_arith && on.float16_arith;
  facts.has_atomic_float_add = facts.has_atomic_float_add && on.atomic_float_add;
  // ExternalVulkan does not say whether the host enabled cooperative matrices (and the memory model and bf16 they
  // need), so spire's kernels on an adopted device run without them.
  facts.has_cooperative_matrix = false;
  facts.has_workgroup_matrix = false;
  facts.has_external_memory_fd = false;  // nor whether it enabled VK_KHR_external_memory_fd
  facts.has_shared_timeline = false;     // or timeline semaphores and VK_KHR_external_semaphore_fd
  d.features = offered_features(facts);

  QueueLock lock{app.lock_queue, app.unlock_queue, app.queue_lock_user_data};
  return std::make_unique<VulkanDevice>(Context::adopt(std::move(facts), app.device, app.queue, lock));
}

std::shared_ptr<Buffer> adopt_buffer(Device& device, VkBuffer buffer, uint64_t bytes) {
  auto* vd = dynamic_cast<VulkanDevice*>(&device);
  if (!vd) throw InvalidUse(fmt::format("adopt_buffer: {} is not a Vulkan device", device.info().id));
  const std::shared_ptr<Context>& ctx = vd->context();
  const std::string& id = ctx->id();
  if (!buffer) throw InvalidUse(fmt::format("adopt_buffer on {}: the VkBuffer is VK_NULL_HANDLE", id));
  if (bytes == 0 || bytes % 4 != 0)
    throw InvalidUse(fmt::format("adopt_buffer on {}: a size of {} bytes; it must be a positive multiple of 4 (fills and "
                            "copies write whole 32-bit words)",
                            id, bytes));
  VkMemoryRequirements req{};
  ctx->fn.vkGetBufferMemoryRequirements(ctx->device, buffer, &req);
  if (req.size < bytes)
    throw InvalidUse(fmt::format("adopt_buffer on {}: {} bytes were asked for, but the VkBuffer holds at most {} (its memory "
                            "requirements)",
                            id, bytes, req.size));
  return std::make_shared<VulkanBuffer>(ctx, buffer, bytes, VulkanBuffer::Adopted{});
}

}  // namespace spire::rt::vulkan
