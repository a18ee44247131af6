// What a CUDA device offers, as the runtime contract's DeviceInfo.
#pragma once

#include <string>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/device.h"

namespace spire::rt::cuda {

// Queries device `index` (cuDeviceGet order); throws rt::Error naming the device when a query fails.
// Features are already reduced by SPIRE_MASK_FEATURES.
DeviceInfo describe_device(const Driver& d, int index);


// "1.5 GiB", "1.0 PiB", "512 bytes": for error messages.
std::string bytes_text(uint64_t bytes);

}  // namespace spire::rt::cuda
