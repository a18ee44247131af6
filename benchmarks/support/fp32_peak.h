// A device's peak fp32 rate without tensor cores (what spire's fp32 kernels can at best reach), so a table
// can say how far from it a kernel runs. Only devices we measure on are listed: guessing is worse than "n/a".
#pragma once

#include <optional>
#include <string>

namespace spire::bench {

// TFLOP/s for a device name as rt::DeviceInfo reports it ("NVIDIA H100 80GB HBM3"); nullopt when unknown.
std::optional<double> fp32_peak_tflops(const std::string& device_name);

}  // namespace spire::bench
