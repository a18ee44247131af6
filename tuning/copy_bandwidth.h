// A device's copy bandwidth: the bytes a device-to-device copy reads and writes per second, the ceiling a memory-bound
// step (a decoder's token, which reads every weight once) is measured against, as a share of it. Measured two ways,
// since some drivers' transfer copies are not their fastest (NVIDIA's Vulkan driver: vkCmdCopyBuffer at 0.85 TB/s on
// an H100 against a copy kernel's 2.96, docs/PERFORMANCE.md's foundation table).
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/device.h"

namespace spire::tuning {

struct CopyBandwidth {
  double buffer_copy_gbs = 0;  // the runtime's buffer copy (vkCmdCopyBuffer, cuMemcpyDtoDAsync)
  double kernel_copy_gbs = 0;  // a copy kernel: 4 loads, then 4 stores an invocation, 1024 elements a workgroup
  double best() const { return std::max(buffer_copy_gbs, kernel_copy_gbs); }
};

// Times both copies of `bytes` (at most the device's largest buffer) from one device buffer to another (device
// timestamps, the median of `runs` after warm_up's 3 runs and `warmup_ms`, by default kGpuWarmupMs on a GPU and none
// on a CPU device), each as 2 * bytes / time in GB/s (10^9 bytes a second): a copy reads and writes each byte. The
// default size is larger than an H200's 50 MB L2 cache, so the copies run from memory, not cache.
CopyBandwidth copy_bandwidth(rt::Device& device, uint64_t bytes = uint64_t(64) << 20, int runs = 10,
                             double warmup_ms = -1);

}  // namespace spire::tuning
