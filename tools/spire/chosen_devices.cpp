#include "tools/spire/chosen_devices.h"

#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/device.h"
#include "runtime/device_ids.h"

namespace spire::cli {

std::vector<std::string> chosen_devices(const std::string& spec) {
  std::istringstream list(spec);
  for (std::string id; std::getline(list, id, ',');)
    if (id == "reference")
      throw std::runtime_error("--devices: 'reference' is what every device is compared with; name devices only");
  try {
    return rt::device_ids(spec);
  } catch (const rt::Error& e) {
    throw std::runtime_error(fmt::format("--devices: {}", e.what()));
  }
}

}  // namespace spire::cli
