#include "lowering/device_bytes.h"

#include <limits>

#include <fmt/format.h>

#include "base/dtype.h"
#include "base/parallel_for.h"

namespace spire::lowering {

std::vector<uint8_t> to_device_bytes(const graph::Tensor& t, kir::Type type, const std::string& name) {
  if (type == kir::Type::Bool)
    throw graph::GraphError(fmt::format("'{}': no host conversion to device type {}", name, dtype_name(type)));
  // An i64 value is stored as i32 on devices: refused rather than wrapped where it does not fit.
  if (type == kir::Type::I32)
    for (int64_t i = 0; i < t.numel(); ++i)
      if (const double v = t.data[size_t(i)];
          !(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()))
        throw graph::GraphError(fmt::format("'{}': element {} = {} is outside the 32-bit range {} values are stored "
                                            "in on devices", name, i, v, graph::dtype_name(t.dtype)));
  const uint32_t n = dtype_bytes(type);
  std::vector<uint8_t> out(size_t(t.numel()) * n);
  // On every core: a decoder's weights are billions of values (Llama 1B's 1.2 G), converted one by one.
  parallel_for(t.numel(), 64, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      // An f32 value stored in half (a parameter under the bf16/f16 policies) is rounded as the f32 it is, then to
      // half, as a device's cast of the f32 value would round it. A bool is stored as a u32 word, 0 or 1.
      const double v = t.data[size_t(i)];
      const double stored = t.dtype == graph::DType::F32    ? double(float(v))
                            : t.dtype == graph::DType::Bool ? double(v != 0)
                                                            : v;
      write_element(type, stored, out.data() + size_t(i) * n);
    }
  });
  return out;
}

graph::Tensor from_device_bytes(const std::vector<uint8_t>& bytes, kir::Type type, const graph::TensorType& tt) {
  graph::Tensor t;
  t.dtype = tt.dtype;
  t.shape = tt.shape;
  t.data.resize(size_t(tt.numel()));
  for (int64_t i = 0; i < tt.numel(); ++i) t.data[size_t(i)] = read_element(type, bytes.data() + size_t(i) * dtype_bytes(type));
  return t;
}

}  // namespace spire::lowering
