// Entry points each runtime implementation provides to the device registry (runtime/device.cpp).
// Both must return an empty list, never throw, when their driver is missing.
#pragma once

#include <memory>
#include <vector>

#include "runtime/device.h"

namespace spire::rt::vulkan {
std::vector<DeviceInfo> list_devices();
std::unique_ptr<Device> open(int index);
}  // namespace spire::rt::vulkan

namespace spire::rt::cuda {
std::vector<DeviceInfo> list_devices();
std::unique_ptr<Device> open(int index);
}  // namespace spire::rt::cuda
