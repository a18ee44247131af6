// A device's copy bandwidth: the bytes a device-to-device buffer copy reads and writes per second, the ceiling a
// memory-bound step (a decoder's token, which reads every weight once) is measured against, as a share of it.
#pragma once

#include <cstdint>

#include "runtime/device.h"

namespace spire::tuning {

// Times the runtime's copy of `bytes` from one device buffer to another (device timestamps, the median of `runs`
// after warm_up's 3 runs and `warmup_ms`, by default kGpuWarmupMs on a GPU and none on a CPU device) and returns
// 2 * bytes / time in GB/s (10^9 bytes a second): the copy reads and writes each byte. The default size is larger
// than an H200's 50 MB L2 cache, so the copy runs from memory, not cache.
double copy_bandwidth_gbs(rt::Device& device, uint64_t bytes = uint64_t(64) << 20, int runs = 10,
                          double warmup_ms = -1);

}  // namespace spire::tuning
