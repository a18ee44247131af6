// Opening a device for the Python package: checked against the devices present first, so a bad name is a
// ValueError naming them.
#pragma once

#include <memory>
#include <string>

#include "runtime/device.h"

namespace spire::python {

std::shared_ptr<rt::Device> open_device_checked(const std::string& name);

}  // namespace spire::python
