#include "benchmarks/support/bench_dtype.h"

#include <stdexcept>

#include <fmt/format.h>

#include "benchmarks/support/dot_check.h"
#include "benchmarks/support/fp32_peak.h"
#include "ir/graph/tensor.h"

namespace spire::bench {

graph::DType parse_dtype(const std::string& d) {
  if (d == "f32") return graph::DType::F32;
  if (d == "f16") return graph::DType::F16;
  if (d == "bf16") return graph::DType::BF16;
  throw std::invalid_argument("--dtype: '" + d + "' is not f32, f16 or bf16");
}

std::vector<float> rounded(std::vector<float> v, graph::DType t) {
  for (float& x : v) x = float(graph::round_to(t, double(x)));
  return v;
}

double max_relative_error(graph::DType t) {
  return kMaxRelativeError + (t == graph::DType::F16 ? 0x1p-11 : t == graph::DType::BF16 ? 0x1p-8 : 0.0);
}

std::optional<double> print_device_peak(const rt::DeviceInfo& info, graph::DType t, std::optional<double> given) {
  const bool tensor_cores = t != graph::DType::F32 && info.features.has(Feature::CooperativeMatrix);
  const std::optional<double> peak = given        ? given
                                     : tensor_cores ? half_tensor_peak_tflops(info.name)
                                                    : fp32_peak_tflops(info.name);
  fmt::print("\n{} ({}), {} peak {}\n", info.id, info.name, tensor_cores ? "16-bit tensor-core" : "fp32",
             peak ? fmt::format("{} TFLOP/s", *peak) : "n/a");
  return peak;
}

}  // namespace spire::bench
