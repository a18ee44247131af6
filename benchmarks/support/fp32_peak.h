// A device's peak fp32 rate without tensor cores (what spire's fp32 kernels can at best reach), and its dense f16/bf16
// tensor-core rate (what the tensor-core kernels can at best reach), so a table can say how far from it a kernel
// runs. Only devices we measure on are listed: guessing is worse than "n/a".
#pragma once

#include <optional>
#include <string>

namespace spire::bench {

// TFLOP/s for a device name as rt::DeviceInfo reports it ("NVIDIA H100 80GB HBM3"); nullopt when unknown.
std::optional<double> fp32_peak_tflops(const std::string& device_name);
// Dense (no sparsity) f16/bf16 products with f32 sums on the tensor cores, TFLOP/s; nullopt when unknown.
std::optional<double> half_tensor_peak_tflops(const std::string& device_name);

}  // namespace spire::bench
