/* spire_vulkan.h: running spire on the application's own Vulkan device, with its own VkBuffers as inputs and
 * outputs, so a game shares its device with spire instead of creating a second one and no tensor goes through
 * host memory.
 *
 *   spire_vulkan_device_info info = {sizeof info};
 *   info.instance = instance;  info.physical_device = gpu;  info.device = device;
 *   info.queue_family = compute_family;  info.queue = compute_queue;
 *   info.get_instance_proc_addr = vkGetInstanceProcAddr;
 *   info.api_version = VK_API_VERSION_1_2;             // what the instance was created with (1.1 at least)
 *   info.enabled_features = &features2;                // the chain given to vkCreateDevice, or NULL
 *   spire_device* dev;  spire_model* model;
 *   spire_status st = spire_device_adopt_vulkan(&info, &dev);
 *   if (!st) st = spire_model_load(dev, "resnet18.spire", &model);
 *   if (!st) st = spire_model_bind_input_buffer(model, "input", pixels_buffer, 0, VK_WHOLE_SIZE);
 *   if (!st) st = spire_model_bind_output_buffer(model, "logits", logits_buffer, 0, VK_WHOLE_SIZE);
 *   if (!st) st = spire_model_run(model);               // reads pixels_buffer, writes logits_buffer
 *
 * Ownership: the instance, device, queue and every bound VkBuffer stay the application's; spire never destroys
 * them. Keep them alive until every model and the device from spire_device_adopt_vulkan are released (a bound
 * buffer: until it is unbound or its model released). Releasing the spire device destroys only what spire
 * created on the VkDevice (pipelines, its pipeline cache, command and descriptor pools, fences, its own buffers).
 *
 * The queue: Vulkan requires its users to be externally synchronized. spire submits to it and waits on it only
 * inside spire_model_load, spire_model_set_input, spire_model_run and spire_model_get_output, and in releases.
 * Either the application does not use the queue while such a call runs on another thread, or it gives
 * lock_queue/unlock_queue and spire takes that lock around each use (do not call spire while holding it).
 * spire_model_run returns when its work is complete: the outputs are in the bound buffers. Work the application
 * submits later on the same queue and reads them needs no semaphore, but needs its own barrier from
 * VK_PIPELINE_STAGE_TRANSFER_BIT / VK_ACCESS_TRANSFER_WRITE_BIT (spire writes a bound output with a copy).
 * Writes the application made to a bound input must be complete (its fence waited on, or submitted earlier on
 * the same queue) before spire_model_run.
 *
 * Bound buffers: created on the adopted VkDevice with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, TRANSFER_SRC_BIT and
 * TRANSFER_DST_BIT and bound to memory. They hold the tensor in the device's element type
 * (spire_model_buffer_layout: f32 for f32 tensors, i32 for i64 and bool ones), rows in order, and must be large
 * enough for the model's largest batch, so the batch may change while they stay bound; a run reads or writes
 * only the current batch's rows. A bound input replaces spire_model_set_input for that tensor, a bound output
 * is written at every run and can still be read with spire_model_get_output. Binding is per model.
 *
 * Versions: spire_vulkan_device_info begins with its own size (struct_size), so a newer library accepts this
 * header's structure. */
#ifndef SPIRE_SPIRE_VULKAN_H_
#define SPIRE_SPIRE_VULKAN_H_

#include <vulkan/vulkan.h>

#include "spire/spire.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spire_vulkan_device_info {
  uint32_t struct_size; /* sizeof(spire_vulkan_device_info) */
  VkInstance instance;
  VkPhysicalDevice physical_device;
  VkDevice device;
  uint32_t queue_family; /* must support compute */
  VkQueue queue;         /* of queue_family */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* every Vulkan call spire makes on this device goes through it */
  uint32_t api_version;  /* VkApplicationInfo::apiVersion of the instance; 0 means VK_API_VERSION_1_1 */
  /* The VkPhysicalDeviceFeatures2 chain given to vkCreateDevice (Vulkan cannot report it). spire reads float64,
   * int64, 16-bit storage, float16 and float atomics from it; NULL means Vulkan 1.1 core only, and a model that
   * needs more is refused with SPIRE_STATUS_UNSUPPORTED. */
  const VkPhysicalDeviceFeatures2* enabled_features;
  /* Optional, both or neither: the application's lock for `queue`. */
  void (*lock_queue)(void* user_data);
  void (*unlock_queue)(void* user_data);
  void* queue_lock_user_data;
} spire_vulkan_device_info;

/* A spire device on the application's VkDevice; its id is "vulkan:app". SPIRE_STATUS_INVALID_ARGUMENT for a
 * missing handle or function, a queue family without compute or a Vulkan version below 1.1. */
SPIRE_API spire_status spire_device_adopt_vulkan(const spire_vulkan_device_info* info, spire_device** out_device);

typedef struct spire_buffer_layout {
  spire_dtype element_type; /* in the device buffer: F32, or I32 for i64 and bool tensors */
  size_t bytes;             /* at the model's largest batch: the least a bound buffer holds */
  size_t batch_bytes;       /* at the current batch: what a run reads or writes */
} spire_buffer_layout;

/* How an input's or output's tensor lies in a bound buffer. */
SPIRE_API spire_status spire_model_buffer_layout(const spire_model* model, const char* name,
                                                 spire_buffer_layout* out_layout);

/* Binds `buffer` from `offset` (`bytes` of it, or VK_WHOLE_SIZE: all that spire_model_buffer_layout says) as
 * input or output `name` of a model on a device from spire_device_adopt_vulkan. VK_NULL_HANDLE unbinds: the
 * input goes back to spire_model_set_input's data. offset and bytes are multiples of 4. */
SPIRE_API spire_status spire_model_bind_input_buffer(spire_model* model, const char* name, VkBuffer buffer,
                                                     VkDeviceSize offset, VkDeviceSize bytes);
SPIRE_API spire_status spire_model_bind_output_buffer(spire_model* model, const char* name, VkBuffer buffer,
                                                      VkDeviceSize offset, VkDeviceSize bytes);

#ifdef __cplusplus
}
#endif

#endif /* SPIRE_SPIRE_VULKAN_H_ */
