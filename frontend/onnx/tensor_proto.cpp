#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "base/half_bits.h"

#include "frontend/onnx/host_tensor.h"
#include "frontend/onnx/model_file.h"
#include "frontend/onnx/onnx_import.h"

namespace spire::onnx_import {
namespace fs = std::filesystem;
using graph::DType;

namespace {

// Little-endian bytes of `count` elements of the ONNX type -> doubles, appended to `out` (whose room the caller
// reserves: resizing first would write every element twice, and a decoder's weights are gigabytes of doubles).
void decode_append(const uint8_t* p, int64_t count, DType dtype, std::vector<double>& out) {
  auto each = [&](auto convert) {
    for (int64_t i = 0; i < count; ++i) out.push_back(convert(i));
  };
  switch (dtype) {
    case DType::F32: each([&](int64_t i) { float v; std::memcpy(&v, p + 4 * i, 4); return double(v); }); break;
    case DType::F64: each([&](int64_t i) { double v; std::memcpy(&v, p + 8 * i, 8); return v; }); break;
    case DType::I32: each([&](int64_t i) { int32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }); break;
    case DType::U32: each([&](int64_t i) { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }); break;
    case DType::I64: each([&](int64_t i) { int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }); break;
    case DType::Bool: each([&](int64_t i) { return p[i] != 0 ? 1.0 : 0.0; }); break;
    case DType::F16:
      each([&](int64_t i) { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return double(spire::f16_bits_to_f32(v)); });
      break;
    case DType::BF16:
      each([&](int64_t i) { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return double(spire::bf16_bits_to_f32(v)); });
      break;
  }
}

void decode(const uint8_t* p, int64_t count, DType dtype, std::vector<double>& out) {
  out.clear();
  out.reserve(size_t(count));
  decode_append(p, count, dtype, out);
}

// The external data of `count` elements of `dtype` (`expected` bytes), decoded into `out` a piece at a time: a
// gigabyte-sized weight is never held as bytes whole.
void read_external(const onnx::TensorProto& t, const fs::path& model_dir, const std::string& what, uint64_t expected,
                   int64_t count, DType dtype, std::vector<double>& out) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& e : t.external_data()) {
    auto number = [&](const std::string& s) {
      uint64_t v = 0;
      if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
        throw ImportError(fmt::format("tensor '{}': external data {} '{}' is not a number", what, e.key(), s));
      for (char ch : s) v = v * 10 + uint64_t(ch - '0');
      return v;
    };
    if (e.key() == "location") location = e.value();
    else if (e.key() == "offset") offset = number(e.value());
    else if (e.key() == "length") length = number(e.value());
  }
  if (location.empty()) throw ImportError(fmt::format("tensor '{}': external data without a location", what));
  const fs::path rel(location);
  // The file must lie beside the model: an absolute path or '..' could read anything on the machine.
  if (rel.is_absolute() || location.find("..") != std::string::npos)
    throw ImportError(fmt::format("tensor '{}': external data location '{}' is outside the model's folder", what, location));
  const fs::path file = model_dir / rel;
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  if (ec) throw ImportError(fmt::format("tensor '{}': external data file '{}' is missing or unreadable ({})", what,
                                        file.string(), ec.message()));
  const uint64_t len = length.value_or(expected);
  if (len != expected)
    throw ImportError(fmt::format("tensor '{}': external data length {} but its shape and type need {} bytes", what,
                                  len, expected));
  if (offset > size || len > size - offset)
    throw ImportError(fmt::format("tensor '{}': external data offset {} + length {} exceeds the size {} of '{}'",
                                  what, offset, len, size, file.string()));
  std::ifstream in(file, std::ios::binary);
  in.seekg(std::streamoff(offset));
  out.clear();
  out.reserve(size_t(count));
  const uint64_t element = expected / uint64_t(std::max<int64_t>(count, 1));
  const int64_t per_piece = int64_t(std::max<uint64_t>(1, (uint64_t(1) << 22) / std::max<uint64_t>(element, 1)));
  std::vector<uint8_t> piece;
  for (int64_t done = 0; done < count && in;) {
    const int64_t n = std::min(per_piece, count - done);
    piece.resize(size_t(uint64_t(n) * element));
    in.read(reinterpret_cast<char*>(piece.data()), std::streamsize(piece.size()));
    if (in) decode_append(piece.data(), n, dtype, out);
    done += n;
  }
  if (!in) throw ImportError(fmt::format("tensor '{}': cannot read external data from '{}'", what, file.string()));
}

}  // namespace

graph::Tensor read_tensor_proto(const onnx::TensorProto& t, const fs::path& model_dir, const std::string& what) {
  const DType dtype = dtype_of_onnx(t.data_type(), fmt::format("tensor '{}'", what));
  graph::Tensor r;
  r.dtype = dtype;
  r.shape.assign(t.dims().begin(), t.dims().end());
  // A weight may be larger than any constant the importer folds (kMaxHostElements): Llama 3.2 1B's token embedding
  // holds 2^28 elements. The kernels index it with 32 bits.
  int64_t n = 1;
  for (int64_t d : r.shape) {
    if (d < 0) throw ImportError(fmt::format("tensor '{}': negative dimension {}", what, d));
    if (d > 0 && n > kMaxWeightElements / d)
      throw ImportError(fmt::format("tensor '{}': shape {} holds more than {} elements", what,
                                    graph::shape_to_string(r.shape), kMaxWeightElements));
    n *= d;
  }
  const uint64_t elem = dtype == DType::Bool ? 1 : graph::dtype_bytes(dtype);
  const uint64_t bytes = uint64_t(n) * elem;
  auto check_count = [&](int64_t have) {
    if (have != n)
      throw ImportError(fmt::format("tensor '{}' of shape {} holds {} values instead of {}", what,
                                    graph::shape_to_string(r.shape), have, n));
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    read_external(t, model_dir, what, bytes, n, dtype, r.data);
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      throw ImportError(fmt::format("tensor '{}' of type {} and shape {} has {} bytes of raw data instead of {}", what,
                                    graph::dtype_name(dtype), graph::shape_to_string(r.shape), t.raw_data().size(), bytes));
    decode(reinterpret_cast<const uint8_t*>(t.raw_data().data()), n, dtype, r.data);
  } else {
    auto widen = [&](const auto& values) {  // one of the typed repeated fields, each value as a double
      check_count(values.size());
      for (auto v : values) r.data.push_back(double(v));
    };
    switch (dtype) {
      case DType::F32: widen(t.float_data()); break;
      case DType::F64: widen(t.double_data()); break;
      case DType::I64: widen(t.int64_data()); break;
      case DType::I32: widen(t.int32_data()); break;
      case DType::U32: widen(t.uint64_data()); break;  // ONNX's UINT32 keeps its values in uint64_data
      case DType::Bool:
        check_count(t.int32_data_size());
        for (int32_t v : t.int32_data()) r.data.push_back(v != 0);
        break;
      case DType::F16:
      case DType::BF16:
        // Without raw data, each 16-bit pattern sits in the low half of an int32_data entry (onnx.proto).
        check_count(t.int32_data_size());
        for (int32_t v : t.int32_data())
          r.data.push_back(dtype == DType::F16 ? spire::f16_bits_to_f32(uint16_t(v)) : spire::bf16_bits_to_f32(uint16_t(v)));
        break;
    }
  }
  return r;
}

graph::Tensor read_tensor_file(const fs::path& path) {
  onnx::TensorProto t;
  parse_file(path, t, "not a serialized ONNX TensorProto");
  return read_tensor_proto(t, path.parent_path(), path.filename().string());
}

}  // namespace spire::onnx_import
