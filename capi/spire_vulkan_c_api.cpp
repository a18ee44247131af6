// The C API's half for the application's own Vulkan device (include/spire/spire_vulkan.h): adopting its
// VkDevice and queue, and binding its VkBuffers as model inputs and outputs, over rt::vulkan::adopt_device /
// adopt_buffer and bundle::Session::bind_input / bind_output.
#include "spire/spire_vulkan.h"

#include <fmt/format.h>

#include <cstddef>
#include <memory>
#include <string>

#include "capi/c_api_guard.h"
#include "capi/c_api_objects.h"
#include "capi/c_dtype.h"
#include "runtime/vulkan/vulkan_external.h"

using spire::capi::guarded;
using spire::capi::require;

namespace {

// The tensor `name` of the model, input or output, and the plan buffer that holds it.
struct NamedTensor {
  const spire::bundle::TensorSpec* spec = nullptr;
  uint32_t buffer = 0;
  bool input = false;
};

NamedTensor find_tensor(const spire_model* model, const std::string& name) {
  const spire::bundle::Session& s = *model->session;
  const spire::bundle::DevicePlan& plan = s.current_plan();
  for (size_t i = 0; i < s.bundle().inputs.size(); ++i)
    if (s.bundle().inputs[i].name == name) return {&s.bundle().inputs[i], plan.input_buffers[i], true};
  for (size_t i = 0; i < s.bundle().outputs.size(); ++i)
    if (s.bundle().outputs[i].name == name) return {&s.bundle().outputs[i], plan.output_buffers[i], false};
  std::string names;
  for (const auto& t : s.bundle().inputs) names += (names.empty() ? "" : ", ") + t.name;
  for (const auto& t : s.bundle().outputs) names += (names.empty() ? "" : ", ") + t.name;
  throw std::out_of_range(fmt::format("the model has no input or output '{}' (it has: {})", name, names));
}

spire_buffer_layout layout_of(const spire_model* model, const NamedTensor& t) {
  const spire::bundle::Session& s = *model->session;
  const uint32_t element = spire::dtype_bytes(s.current_plan().buffers[t.buffer].type);
  spire_buffer_layout out{};
  out.element_type = spire::capi::c_dtype(s.current_plan().buffers[t.buffer].type);
  out.bytes = size_t(t.spec->elements_at(s.bundle().max_batch) * element);
  out.batch_bytes = size_t(t.spec->elements_at(s.batch()) * element);
  return out;
}

spire_status bind(spire_model* model, const char* name, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize bytes,
                  bool input) {
  return guarded([&] {
    require(model, "model");
    require(name, "name");
    const NamedTensor t = find_tensor(model, name);
    if (t.input != input)
      throw std::invalid_argument(fmt::format("'{}' is an {} of the model, not an {}", name, t.input ? "input" : "output",
                                              input ? "input" : "output"));
    auto& slots = input ? model->bound_inputs : model->bound_outputs;
    if (buffer == VK_NULL_HANDLE) {
      input ? model->session->bind_input(name, {}) : model->session->bind_output(name, {});
      slots.erase(name);
      return;
    }
    if (!model->device->adopted)
      throw std::invalid_argument(fmt::format("binding a VkBuffer to '{}' needs a device from spire_device_adopt_vulkan; "
                                              "this model runs on {}, which spire created", name, model->device->id));
    if (bytes == VK_WHOLE_SIZE) bytes = layout_of(model, t).bytes;
    if (offset % 4 || bytes % 4)
      throw std::invalid_argument(fmt::format("'{}': offset {} and size {} must be multiples of 4", name, offset, bytes));
    // The whole range up to offset + bytes is adopted; the session checks that it holds the largest batch.
    std::shared_ptr<spire::rt::Buffer> adopted =
        spire::rt::vulkan::adopt_buffer(*model->device->device, buffer, offset + bytes);
    spire::rt::BufferView view(adopted, offset, bytes);
    input ? model->session->bind_input(name, view) : model->session->bind_output(name, view);
    slots[name] = std::move(adopted);  // the one it replaces is released after the session stopped using it
  });
}

}  // namespace

extern "C" {

spire_status spire_device_adopt_vulkan(const spire_vulkan_device_info* info, spire_device** out_device) {
  return guarded([&] {
    require(info, "info");
    require(out_device, "out_device");
    *out_device = nullptr;
    if (info->struct_size < offsetof(spire_vulkan_device_info, lock_queue))
      throw std::invalid_argument(fmt::format("spire_vulkan_device_info::struct_size is {}; set it to sizeof the "
                                              "structure ({})", info->struct_size, sizeof(spire_vulkan_device_info)));
    const bool has_lock = info->struct_size >= sizeof(spire_vulkan_device_info);
    spire::rt::vulkan::ExternalVulkan app;
    app.instance = info->instance;
    app.physical_device = info->physical_device;
    app.device = info->device;
    app.queue_family = info->queue_family;
    app.queue = info->queue;
    app.get_instance_proc_addr = info->get_instance_proc_addr;
    app.api_version = info->api_version ? info->api_version : VK_API_VERSION_1_1;
    app.enabled_features = info->enabled_features;
    if (has_lock) {
      app.lock_queue = info->lock_queue;
      app.unlock_queue = info->unlock_queue;
      app.queue_lock_user_data = info->queue_lock_user_data;
    }
    auto d = std::make_shared<spire_device>();
    d->device = spire::rt::vulkan::adopt_device(app);
    d->id = d->device->info().id;
    d->name = d->device->info().name;
    d->adopted = true;
    *out_device = spire::capi::hand_out(std::move(d));
  });
}

spire_status spire_model_buffer_layout(const spire_model* model, const char* name, spire_buffer_layout* out_layout) {
  return guarded([&] {
    require(model, "model");
    require(name, "name");
    require(out_layout, "out_layout");
    *out_layout = layout_of(model, find_tensor(model, name));
  });
}

spire_status spire_model_bind_input_buffer(spire_model* model, const char* name, VkBuffer buffer, VkDeviceSize offset,
                                           VkDeviceSize bytes) {
  return bind(model, name, buffer, offset, bytes, true);
}

spire_status spire_model_bind_output_buffer(spire_model* model, const char* name, VkBuffer buffer,
                                            VkDeviceSize offset, VkDeviceSize bytes) {
  return bind(model, name, buffer, offset, bytes, false);
}

}  // extern "C"
