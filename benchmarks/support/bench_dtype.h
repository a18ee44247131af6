// The element type a benchmark runs in (--dtype f32|f16|bf16), shared by spire_bench_matmul and spire_bench_conv2d:
// parsing, the inputs as the device sees them, and what the float64 check allows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "runtime/device.h"

namespace spire::bench {

// "f32", "f16" or "bf16"; throws std::invalid_argument naming the flag otherwise.
graph::DType parse_dtype(const std::string& text);

// Random values rounded to `t`: what the device reads, and what the float64 reference multiplies.
std::vector<float> rounded(std::vector<float> v, graph::DType t);

// The largest relative error the check allows: dot_check.h's f32 limit, plus the unit roundoff of a half result
// (rounded once more than the f32 dot product).
double max_relative_error(graph::DType t);

// Prints the device's line above its table and returns the rate its "% peak" column divides by: the 16-bit tensor-core
// rate where `t` is f16 or bf16 and the device has tensor cores (the lowering's choice for products; a convolution that
// does not pay there runs on the fp32 units), else the fp32 rate (fp32_peak.h); `given` (--peak-tflops) wins.
std::optional<double> print_device_peak(const rt::DeviceInfo& info, graph::DType t, std::optional<double> given);

}  // namespace spire::bench
