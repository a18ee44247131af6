// What a CUDA device offers, as the runtime contract's DeviceInfo.
#pragma once

#include <string>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/device.h"

namespace spire::rt::cuda {

// Queries device `index` (cuDeviceGet order); throws rt::Error naming the device when a query fails.
// Features are already reduced by SPIRE_MASK_FEATURES.
DeviceInfo describe_device(const Driver& d, int index);

// The features left after removing those named in SPIRE_MASK_FEATURES (comma list of kir feature names:
// float16, float64, int64, atomic-add-int, atomic-add-f32). Read on every call, so tests can change it at run
// time; an unknown name is reported on stderr and ignored. Lets a user check a kernel's portability on a
// device that has everything.
kir::Features apply_feature_mask(kir::Features available);

// "1.5 GiB", "1.0 PiB", "512 bytes": for error messages.
std::string bytes_text(uint64_t bytes);

}  // namespace spire::rt::cuda
