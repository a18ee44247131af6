// The element types of every layer: graph tensors, kernel IR values and buffers, bundle tensors, safetensors files
// and device buffers. One definition, so that no layer converts one vocabulary into another.
//
// In memory each element is little-endian, dtype_bytes() wide: Bool one byte 0 or 1 (on the host; kernels hold bools
// only in registers and devices store them as U32), F16 IEEE binary16, BF16 the top half of an f32 (half_bits.h).
// Devices store an I64 graph value as I32 (lowering/device_type.cpp); that is a policy of the layers that place values
// on devices, not a property of the type.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace spire {

enum class DType : uint8_t { Bool, I32, U32, I64, F16, F32, F64, BF16 };
inline constexpr DType kAllDTypes[] = {DType::Bool, DType::I32, DType::U32, DType::I64,
                                       DType::F16,  DType::F32, DType::F64, DType::BF16};

std::string_view dtype_name(DType t);  // "bool", "i32", "u32", "i64", "f16", "f32", "f64", "bf16"
std::optional<DType> dtype_from_name(std::string_view name);
uint32_t dtype_bytes(DType t);  // bytes of one element in memory (Bool: 1)
bool is_float(DType t);         // F16, F32, F64, BF16
bool is_half(DType t);          // F16, BF16
bool is_int(DType t);           // I32, U32, I64 (not Bool)
bool is_signed_int(DType t);    // I32, I64

// One element at `p` (dtype_bytes(t) bytes) as a double, and back. Writing rounds to nearest (even) for the floats,
// truncates toward zero for the integers (the caller checks ranges where a value may not fit), and stores a bool as
// 0 or 1; reading a bool gives its byte as is, so a stored value other than 0/1 (a poison nobody overwrote) shows.
double read_element(DType t, const void* p);
void write_element(DType t, double v, void* p);
// `n` elements of type `from` at `src` as type `to` at `dst`: a plain copy where the types are equal.
void convert_elements(const void* src, DType from, void* dst, DType to, uint64_t n);

// Values of `types` packed in order, each aligned to its own size (a kernel's scalar parameters, in push constants or
// CUDA's parameter space): each one's byte offset, and the block's size rounded up to whole 32-bit words.
std::vector<uint32_t> packed_offsets(const std::vector<DType>& types);
uint32_t packed_block_bytes(const std::vector<DType>& types);
// The types of a list of parameters that each have a `type` (a kernel's scalars, kir's or the runtime's).
template <class Params>
std::vector<DType> types_of(const Params& params) {
  std::vector<DType> t;
  for (const auto& p : params) t.push_back(p.type);
  return t;
}

}  // namespace spire
