#include "base/precision.h"

#include <cmath>
#include <stdexcept>

namespace spire {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Bf16: return "bf16";
    case Precision::F16: return "f16";
  }
  return "?";
}

std::string_view precision_choices() { return "fp32|tf32|bf16|f16"; }

Precision parse_precision(std::string_view text) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::F16})
    if (text == precision_name(p)) return p;
  if (text == "f32") return Precision::Fp32;  // spelled as bf16 and f16 are
  throw std::invalid_argument("unknown precision '" + std::string(text) + "': the choices are " +
                              std::string(precision_choices()));
}

std::string_view precision_policies_help() {
  return "fp32 (the default: strict f32, what spire's cross-vendor checks promise), tf32 (f32 convolutions and matrix "
         "products with their operands rounded to TF32, f32 sums, on cuda:N's tensor cores; a Vulkan device has no TF32 "
         "matrices, runs fp32 and says so on stderr), bf16 or f16 (every f32 value stored in half with f32 sums; "
         "probabilities, norms' statistics, losses and optimizer updates stay f32, as torch.autocast; inputs and outputs stay "
         "f32; a device without the half type runs fp32 and says so). Bounds: docs/PRECISION.md";
}

double precision_input_roundoff(Precision p) {
  switch (p) {
    case Precision::Fp32: return 0;  // the inputs are f32 already
    case Precision::Tf32: return std::ldexp(1.0, -11);  // 10 explicit mantissa bits, rounded to nearest
    case Precision::Bf16: return std::ldexp(1.0, -8);   // 7 explicit bits
    case Precision::F16: return std::ldexp(1.0, -11);   // 10 explicit bits (and f16's range)
  }
  return 1;
}

double precision_dot_bound(Precision p, int64_t k) {
  const double u = precision_input_roundoff(p);
  const double b = 2 * u + u * u + double(k) * std::ldexp(1.0, -24);
  const bool stores_half = p == Precision::Bf16 || p == Precision::F16;  // the result is rounded to half too
  return stores_half ? b + u * (1 + b) : b;
}

}  // namespace spire
