#include "tools/spire/chosen_devices.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/device.h"

namespace spire::cli {

std::vector<std::string> chosen_devices(const std::string& spec) {
  std::vector<std::string> present;
  for (const auto& info : rt::list_devices()) present.push_back(info.id);
  const std::string listed = present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", "));
  if (spec == "all") return present;
  if (spec.empty()) throw std::runtime_error(fmt::format("--devices: no device named (devices present: {})", listed));
  std::vector<std::string> chosen;
  std::istringstream list(spec);
  for (std::string id; std::getline(list, id, ',');) {
    if (id == "reference")
      throw std::runtime_error("--devices: 'reference' is what every device is compared with; name devices only");
    if (std::find(present.begin(), present.end(), id) == present.end())
      throw std::runtime_error(fmt::format("--devices: unknown device '{}' (devices present: {})", id, listed));
    chosen.push_back(id);
  }
  return chosen;
}

}  // namespace spire::cli
