#include "base/dtype.h"

#include <cmath>
#include <cstring>

#include "base/half_bits.h"
#include "base/named_values.h"

namespace spire {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::U32: return "u32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::BF16: return "bf16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) { return value_named(kAllDTypes, dtype_name, name); }

uint32_t dtype_bytes(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::F16: case DType::BF16: return 2;
    case DType::I32: case DType::U32: case DType::F32: return 4;
    case DType::I64: case DType::F64: return 8;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::F16 || t == DType::F32 || t == DType::F64 || t == DType::BF16; }
bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }
bool is_int(DType t) { return t == DType::I32 || t == DType::U32 || t == DType::I64; }
bool is_signed_int(DType t) { return t == DType::I32 || t == DType::I64; }

double read_element(DType t, const void* p) {
  switch (t) {
    case DType::Bool: return double(*static_cast<const uint8_t*>(p));
    case DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::U32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::I64: { int64_t x; std::memcpy(&x, p, 8); return double(x); }
    case DType::F16: { uint16_t h; std::memcpy(&h, p, 2); return f16_bits_to_f32(h); }
    case DType::F32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::F64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::BF16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_f32(h); }
  }
  return 0;
}

void write_element(DType t, double v, void* p) {
  switch (t) {
    case DType::Bool: *static_cast<uint8_t*>(p) = v != 0; break;
    case DType::I32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
    case DType::U32: { uint32_t x = uint32_t(int64_t(v)); std::memcpy(p, &x, 4); break; }
    case DType::I64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
    case DType::F16: { uint16_t h = f32_to_f16_bits(float(round_to_f16(v))); std::memcpy(p, &h, 2); break; }
    case DType::F32: { float f = float(v); std::memcpy(p, &f, 4); break; }
    case DType::F64: std::memcpy(p, &v, 8); break;
    case DType::BF16: { uint16_t h = f32_to_bf16_bits(float(round_to_bf16(v))); std::memcpy(p, &h, 2); break; }
  }
}

void convert_elements(const void* src, DType from, void* dst, DType to, uint64_t n) {
  if (from == to) {
    std::memcpy(dst, src, size_t(n * dtype_bytes(from)));
    return;
  }
  auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const uint32_t sb = dtype_bytes(from), db = dtype_bytes(to);
  for (uint64_t i = 0; i < n; ++i) write_element(to, read_element(from, s + i * sb), d + i * db);
}

std::vector<uint32_t> packed_offsets(const std::vector<DType>& types) {
  std::vector<uint32_t> offsets;
  uint32_t at = 0;
  for (DType t : types) {
    const uint32_t b = dtype_bytes(t);
    at = (at + b - 1) / b * b;
    offsets.push_back(at);
    at += b;
  }
  return offsets;
}

uint32_t packed_block_bytes(const std::vector<DType>& types) {
  if (types.empty()) return 0;
  const uint32_t end = packed_offsets(types).back() + dtype_bytes(types.back());
  return (end + 3) / 4 * 4;
}

}  // namespace spire
