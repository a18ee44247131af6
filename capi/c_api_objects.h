// What the C API's opaque handles are. A device handle holds one reference to a shared device; each model holds
// another, so a device lives until the application released it and every model on it is gone.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "bundle/session.h"
#include "runtime/device.h"
#include "spire/spire.h"

struct spire_status_object {
  spire_status_code code;
  std::string message;
};

struct spire_device : std::enable_shared_from_this<spire_device> {
  std::unique_ptr<spire::rt::Device> device;
  std::string id, name;
  bool adopted = false;  // on the application's VkDevice (spire_vulkan.h): its VkBuffers can be bound
  std::shared_ptr<spire_device> self;  // the application's reference, dropped by spire_device_release
};

struct spire_model {
  std::shared_ptr<spire_device> device;  // declared first: destroyed after the session that uses it
  // The application's VkBuffers bound as inputs and outputs (spire_vulkan.h), by name: the session's recorded
  // stream refers to them, so they are destroyed after it.
  std::map<std::string, std::shared_ptr<spire::rt::Buffer>> bound_inputs, bound_outputs;
  std::unique_ptr<spire::bundle::Session> session;
};

namespace spire::capi {

// The status returned when even a status cannot be allocated; spire_status_free leaves it alone.
inline spire_status_object* out_of_memory_status() {
  static spire_status_object oom{SPIRE_STATUS_OUT_OF_MEMORY, "out of host memory"};
  return &oom;
}

inline spire_status make_status(spire_status_code code, const std::string& message) {
  try {
    return new spire_status_object{code, message};
  } catch (...) {
    return out_of_memory_status();
  }
}

inline spire_device* hand_out(std::shared_ptr<spire_device> d) {
  d->self = d;
  return d.get();
}

inline void release(spire_device* d) {
  if (!d) return;
  std::shared_ptr<spire_device> last = std::move(d->self);  // destroyed on return unless a model still holds it
}

}  // namespace spire::capi
