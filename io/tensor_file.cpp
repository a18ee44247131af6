#include "io/tensor_file.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/half_bits.h"

namespace spire::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data are little-endian; a big-endian host would need byte swaps here");

template <typename T>
void decode(const std::vector<uint8_t>& bytes, std::vector<double>& out) {
  const size_t n = bytes.size() / sizeof(T);
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

template <typename T>
void encode_value(double v, uint8_t* dst) {
  T x = static_cast<T>(v);
  std::memcpy(dst, &x, sizeof(T));
}

void decode_half(const std::vector<uint8_t>& bytes, std::vector<double>& out, float (*value_of)(uint16_t)) {
  out.resize(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    out[i] = value_of(h);
  }
}

void encode_half(uint16_t bits, uint8_t* dst) { std::memcpy(dst, &bits, 2); }

}  // namespace

StDtype st_dtype_of(graph::DType t) {
  switch (t) {
    case graph::DType::Bool: return StDtype::BOOL;
    case graph::DType::I32: return StDtype::I32;
    case graph::DType::U32: return StDtype::U32;
    case graph::DType::I64: return StDtype::I64;
    case graph::DType::F32: return StDtype::F32;
    case graph::DType::F64: return StDtype::F64;
    case graph::DType::F16: return StDtype::F16;
    case graph::DType::BF16: return StDtype::BF16;
  }
  return StDtype::F32;
}

graph::DType graph_dtype_of(StDtype t, std::string_view source, std::string_view tensor) {
  switch (t) {
    case StDtype::BOOL: return graph::DType::Bool;
    case StDtype::I32: return graph::DType::I32;
    case StDtype::U32: return graph::DType::U32;
    case StDtype::I64: return graph::DType::I64;
    case StDtype::F32: return graph::DType::F32;
    case StDtype::F64: return graph::DType::F64;
    case StDtype::F16: return graph::DType::F16;
    case StDtype::BF16: return graph::DType::BF16;
    default: break;
  }
  throw_format_error(source, fmt::format("tensor '{}': dtype {} has no graph IR equivalent (spire reads BOOL, I32, "
                                         "U32, I64, F16, BF16, F32, F64)", tensor, st_dtype_name(t)));
}

graph::Tensor to_graph_tensor(const StTensor& t, std::string_view source) {
  graph::Tensor out;
  out.dtype = graph_dtype_of(t.dtype, source, t.name);
  // An empty tensor may declare huge other dimensions; the graph IR multiplies shapes in int64.
  int64_t product = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && __builtin_mul_overflow(product, d, &product)) {
      throw_format_error(source, fmt::format("tensor '{}': shape is too large for the graph IR", t.name));
    }
  }
  out.shape = t.shape;
  switch (t.dtype) {
    case StDtype::BOOL: {
      out.data.resize(t.data.size());
      for (size_t i = 0; i < t.data.size(); ++i) out.data[i] = t.data[i] != 0 ? 1.0 : 0.0;
      break;
    }
    case StDtype::I32: decode<int32_t>(t.data, out.data); break;
    case StDtype::U32: decode<uint32_t>(t.data, out.data); break;
    case StDtype::I64: decode<int64_t>(t.data, out.data); break;
    case StDtype::F32: decode<float>(t.data, out.data); break;
    case StDtype::F64: decode<double>(t.data, out.data); break;
    case StDtype::F16: decode_half(t.data, out.data, spire::f16_bits_to_f32); break;
    case StDtype::BF16: decode_half(t.data, out.data, spire::bf16_bits_to_f32); break;
    default: break;  // refused above
  }
  return out;
}

StTensor to_st_tensor(std::string name, const graph::Tensor& t, std::string_view destination) {
  StTensor out;
  out.dtype = st_dtype_of(t.dtype);
  out.shape = t.shape;
  const uint32_t size = st_dtype_bytes(out.dtype);
  if (int64_t(t.data.size()) != graph::num_elements(t.shape)) {
    throw_format_error(destination, fmt::format("cannot write tensor '{}': {} values for shape {}", name,
                                                t.data.size(), graph::shape_to_string(t.shape)));
  }
  out.data.resize(t.data.size() * size);
  for (size_t i = 0; i < t.data.size(); ++i) {
    const double v = t.data[i];
    uint8_t* dst = out.data.data() + i * size;
    auto check_int = [&](double lo, double hi) {
      // hi is exclusive: 2^31 and 2^63 are exact doubles that no i32/i64 holds.
      if (!(v >= lo && v < hi)) {
        throw_format_error(destination, fmt::format("cannot write tensor '{}': element {} ({}) does not fit {}",
                                                    name, i, v, graph::dtype_name(t.dtype)));
      }
    };
    switch (t.dtype) {
      case graph::DType::Bool: *dst = v != 0.0 ? 1 : 0; break;
      case graph::DType::I32: check_int(-2147483648.0, 2147483648.0); encode_value<int32_t>(v, dst); break;
      case graph::DType::U32: check_int(0.0, 4294967296.0); encode_value<uint32_t>(v, dst); break;
      case graph::DType::I64:
        check_int(-9223372036854775808.0, 9223372036854775808.0);
        encode_value<int64_t>(v, dst);
        break;
      case graph::DType::F32: {
        // Out-of-range double -> float conversion is undefined in C++; make overflow an explicit infinity.
        // (An f32 tensor holds values already rounded to float, so this only matters for hand-made ones.)
        constexpr double lim = std::numeric_limits<float>::max();
        const float inf = std::numeric_limits<float>::infinity();
        const float f = v > lim ? inf : v < -lim ? -inf : static_cast<float>(v);  // NaN passes through the cast
        std::memcpy(dst, &f, 4);
        break;
      }
      case graph::DType::F64: std::memcpy(dst, &v, 8); break;
      // Rounded first: a hand-made tensor may hold values its dtype cannot.
      case graph::DType::F16: encode_half(spire::f32_to_f16_bits(float(spire::round_to_f16(v))), dst); break;
      case graph::DType::BF16: encode_half(spire::f32_to_bf16_bits(float(spire::round_to_bf16(v))), dst); break;
    }
  }
  out.name = std::move(name);
  return out;
}

NamedTensors load_tensors_ordered(const std::filesystem::path& path) {
  const SafetensorsFile file = read_safetensors(path);
  NamedTensors out;
  out.reserve(file.tensors.size());
  for (const StTensor& t : file.tensors) out.emplace_back(t.name, to_graph_tensor(t, display_name(path)));
  return out;
}

std::map<std::string, graph::Tensor> load_tensors(const std::filesystem::path& path) {
  std::map<std::string, graph::Tensor> out;
  for (auto& [name, t] : load_tensors_ordered(path)) out.emplace(name, std::move(t));
  return out;
}

void save_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata) {
  SafetensorsFile file;
  file.metadata = metadata;
  file.tensors.reserve(tensors.size());
  for (const auto& [name, t] : tensors) file.tensors.push_back(to_st_tensor(name, t, display_name(path)));
  write_safetensors(path, file);
}

void save_tensors(const std::filesystem::path& path, const std::map<std::string, graph::Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata) {
  save_tensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

}  // namespace spire::io
