// --devices D1,D2,...|all of `spire diff` and `spire reduce`: rt::device_ids (runtime/device_ids.h), less 'reference'.
#pragma once

#include <string>
#include <vector>

namespace spire::cli {

// Every device present for "all"; else each name of the comma-separated list, which must be present. Throws
// std::runtime_error naming the option's problem and listing the devices present (an unknown name, none named,
// 'reference', which is what devices are compared with).
std::vector<std::string> chosen_devices(const std::string& spec);

}  // namespace spire::cli
