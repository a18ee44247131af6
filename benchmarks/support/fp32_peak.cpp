#include "benchmarks/support/fp32_peak.h"

namespace spire::bench {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

// SMs x 128 fp32 lanes x 2 flops per fused multiply-add x boost clock: the datasheets' non-tensor figure.
std::optional<double> fp32_peak_tflops(const std::string& name) {
  if (has(name, "H200")) return 66.9;                       // 132 SMs at 1.98 GHz, as the H100 SXM
  if (has(name, "H100") && has(name, "PCIe")) return 51.2;  // 114 SMs at 1.755 GHz
  if (has(name, "H100") && has(name, "NVL")) return 60.0;   // 132 SMs at 1.785 GHz
  if (has(name, "H100")) return 66.9;                       // SXM ("NVIDIA H100 80GB HBM3"): 132 SMs at 1.98 GHz
  if (has(name, "A100")) return 19.5;                       // 108 SMs x 64 lanes at 1.41 GHz
  return std::nullopt;
}

// The datasheets' dense figures: 4096 flops per SM per clock on Hopper (H100 SXM 989.4 at 1.83 GHz), 2048 on A100.
std::optional<double> half_tensor_peak_tflops(const std::string& name) {
  if (has(name, "H200")) return 989.4;
  if (has(name, "H100") && has(name, "PCIe")) return 756.5;
  if (has(name, "H100") && has(name, "NVL")) return 835.5;
  if (has(name, "H100")) return 989.4;
  if (has(name, "A100")) return 312.0;
  return std::nullopt;
}

}  // namespace spire::bench
