// The devices lowering tests run on: every device present. Test names carry the device id.
#pragma once

#include <string>
#include <vector>

#include "runtime/device.h"

namespace spire::lowering::testing_support {

inline std::vector<std::string> device_ids() {
  std::vector<std::string> ids;
  for (const auto& d : rt::list_devices()) ids.push_back(d.id);
  return ids;
}

inline std::string test_name(std::string id) {
  for (auto& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return id;
}

}  // namespace spire::lowering::testing_support
