#include "lowering/device_bytes.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/half_bits.h"

namespace spire::lowering {

std::vector<uint8_t> to_device_bytes(const graph::Tensor& t, kir::Type type, const std::string& name) {
  std::vector<uint8_t> out(size_t(t.numel()) * dtype_bytes(type));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.data[size_t(i)];
    uint8_t* p = out.data() + size_t(i) * dtype_bytes(type);
    switch (type) {
      case kir::Type::F32: { float f = float(v); std::memcpy(p, &f, 4); break; }
      case kir::Type::F64: std::memcpy(p, &v, 8); break;
      // The tensor holds values its dtype can hold (Tensor::round_to_dtype), so these encodings are exact.
      case kir::Type::F16: { uint16_t h = spire::f32_to_f16_bits(float(v)); std::memcpy(p, &h, 2); break; }
      case kir::Type::BF16: { uint16_t h = spire::f32_to_bf16_bits(float(v)); std::memcpy(p, &h, 2); break; }
      case kir::Type::I32: {
        if (!(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()))
          throw graph::GraphError(fmt::format("'{}': element {} = {} is outside the 32-bit range {} values are stored "
                                              "in on devices", name, i, v, graph::dtype_name(t.dtype)));
        int32_t x = int32_t(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case kir::Type::U32: { uint32_t x = v != 0 ? 1 : 0; std::memcpy(p, &x, 4); break; }
      default: throw graph::GraphError(fmt::format("'{}': no host conversion to device type {}", name, dtype_name(type)));
    }
  }
  return out;
}

graph::Tensor from_device_bytes(const std::vector<uint8_t>& bytes, kir::Type type, const graph::TensorType& tt) {
  graph::Tensor t;
  t.dtype = tt.dtype;
  t.shape = tt.shape;
  t.data.resize(size_t(tt.numel()));
  for (int64_t i = 0; i < tt.numel(); ++i) {
    const uint8_t* p = bytes.data() + size_t(i) * dtype_bytes(type);
    double v = 0;
    switch (type) {
      case kir::Type::F32: { float f; std::memcpy(&f, p, 4); v = f; break; }
      case kir::Type::F64: std::memcpy(&v, p, 8); break;
      case kir::Type::F16: { uint16_t h; std::memcpy(&h, p, 2); v = spire::f16_bits_to_f32(h); break; }
      case kir::Type::BF16: { uint16_t h; std::memcpy(&h, p, 2); v = spire::bf16_bits_to_f32(h); break; }
      case kir::Type::I32: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case kir::Type::U32: { uint32_t x; std::memcpy(&x, p, 4); v = x; break; }
      default: break;
    }
    t.data[size_t(i)] = v;
  }
  return t;
}

}  // namespace spire::lowering
