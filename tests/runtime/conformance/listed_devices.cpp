// open_suite_device and listed_info for the executables whose devices are all in list_devices().
#include "tests/runtime/conformance/conformance.h"

namespace spire::rt::conformance {

std::unique_ptr<Device> open_suite_device(const std::string& id) { return open_device(id); }

DeviceInfo listed_info(const std::string& id) {
  for (const auto& d : list_devices())
    if (d.id == id) return d;
  ADD_FAILURE() << id << " is not listed by list_devices()";
  return {};
}

}  // namespace spire::rt::conformance
