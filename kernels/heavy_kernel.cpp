#include "kernels/heavy_kernel.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

uint32_t index_u32(int64_t value, const std::string& what) {
  if (value < 0 || value >= (int64_t(1) << 31))
    throw std::invalid_argument(fmt::format("{} = {} does not fit the 32-bit index arithmetic of the kernels "
                                            "(at most 2^31 - 1)", what, value));
  return uint32_t(value);
}

std::string float_suffix(kir::Type t, const std::string& op) {
  if (t == kir::Type::F32) return "f32";
  if (t == kir::Type::F64) return "f64";
  throw std::invalid_argument(fmt::format("{}: element type {} is not supported (f32 or f64 only)", op, dtype_name(t)));
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

HeavyKernel empty_result(const std::string& name) {
  kir::KernelBuilder kb(name + "_empty", 1);
  return {kb.finish(), 0};
}

uint32_t pow2_clamped(uint64_t n, uint32_t lo, uint32_t hi) {
  uint64_t p = 1;
  while (p < n) p *= 2;
  if (p < lo) p = lo;
  if (p > hi) p = hi;
  return uint32_t(p);
}

}  // namespace spire::lowering::heavy
