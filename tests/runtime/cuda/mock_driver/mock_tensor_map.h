// The mock driver's CUtensorMap: what its cuTensorMapEncodeTiled writes into the 128 opaque bytes, and what the PTX
// interpreter's cp.async.bulk.tensor reads back (tests/backends/ptx/interp). NVIDIA's own format is undocumented; this one holds
// what a tiled copy needs, behind a magic number so that 128 bytes no encoder wrote are refused rather than obeyed.
//
// encode_tiled checks its arguments as the real driver does (CUDA_ERROR_INVALID_VALUE for what the hardware cannot
// copy) and, beyond that, refuses what the interpreter does not model: interleaved layouts, 32- and 64-byte swizzles,
// element strides other than 1, NaN out-of-bounds fill and the float-converting (FTZ, TF32) data types.
#pragma once

#include <cstdint>
#include <cstring>

namespace spire::mock {

inline constexpr uint32_t kTensorMapBytes = 128;
inline constexpr uint32_t kTensorMapMaxRank = 5;
inline constexpr uint32_t kTensorMapMagic = 0x5350544Du;  // "MTPS"
inline constexpr int kTensorMapInvalidValue = 1;         // CUDA_ERROR_INVALID_VALUE

// CUtensorMapSwizzle
inline constexpr uint32_t kSwizzleNone = 0, kSwizzle32B = 1, kSwizzle64B = 2, kSwizzle128B = 3;

struct TensorMap {
  uint32_t magic = 0;
  uint32_t rank = 0;
  uint32_t element_bytes = 0;
  uint32_t swizzle = kSwizzleNone;
  uint64_t global_address = 0;
  uint64_t dims[kTensorMapMaxRank] = {};             // elements, innermost first
  uint64_t strides[kTensorMapMaxRank - 1] = {};      // bytes between consecutive indices of dims 1 ..
  uint32_t box[kTensorMapMaxRank] = {};              // elements, innermost first
};
static_assert(sizeof(TensorMap) <= kTensorMapBytes, "a tensor map fits CUtensorMap's 128 bytes");

// Bytes per element of a CUtensorMapDataType, or 0 for a type the mock does not copy: the integer types and FLOAT16
// (6), FLOAT32 (7), FLOAT64 (8), BFLOAT16 (9) copy bytes unchanged; FLOAT32_FTZ and the TFLOAT32 types convert.
inline uint32_t tensor_map_element_bytes(int data_type) {
  switch (data_type) {
    case 0: return 1;                  // UINT8
    case 1: case 6: case 9: return 2;  // UINT16, FLOAT16, BFLOAT16
    case 2: case 3: case 7: return 4;  // UINT32, INT32, FLOAT32
    case 4: case 5: case 8: return 8;  // UINT64, INT64, FLOAT64
    default: return 0;
  }
}

// cuTensorMapEncodeTiled's contract: checks the arguments and writes the map into `out` (128 bytes). Returns 0, or
// kTensorMapInvalidValue leaving `out` untouched.
inline int encode_tiled(void* out, int data_type, uint32_t rank, const void* global_address, const uint64_t* dims,
                        const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides, int interleave,
                        int swizzle, int l2_promotion, int oob_fill) {
  TensorMap m;
  m.magic = kTensorMapMagic;
  m.rank = rank;
  m.element_bytes = tensor_map_element_bytes(data_type);
  m.global_address = reinterpret_cast<uint64_t>(global_address);
  if (!out || m.element_bytes == 0 || rank == 0 || rank > kTensorMapMaxRank) return kTensorMapInvalidValue;
  if (!dims || !box || !element_strides || (rank > 1 && !strides)) return kTensorMapInvalidValue;
  if (m.global_address % 16 != 0) return kTensorMapInvalidValue;
  if (interleave != 0 || oob_fill != 0 || l2_promotion < 0 || l2_promotion > 3) return kTensorMapInvalidValue;
  if (swizzle != int(kSwizzleNone) && swizzle != int(kSwizzle128B)) return kTensorMapInvalidValue;
  m.swizzle = uint32_t(swizzle);
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d] == 0 || dims[d] > (uint64_t(1) << 32)) return kTensorMapInvalidValue;
    if (box[d] == 0 || box[d] > 256 || element_strides[d] != 1) return kTensorMapInvalidValue;
    m.dims[d] = dims[d];
    m.box[d] = box[d];
  }
  for (uint32_t d = 1; d < rank; ++d) {
    if (strides[d - 1] % 16 != 0 || strides[d - 1] >= (uint64_t(1) << 40)) return kTensorMapInvalidValue;
    m.strides[d - 1] = strides[d - 1];
  }
  // The box's inner rows move in 16-byte units, and a 128-byte swizzle permutes chunks within one 128-byte row.
  const uint64_t inner_bytes = uint64_t(box[0]) * m.element_bytes;
  if (inner_bytes % 16 != 0) return kTensorMapInvalidValue;
  if (m.swizzle == kSwizzle128B && inner_bytes > 128) return kTensorMapInvalidValue;
  std::memset(out, 0, kTensorMapBytes);
  std::memcpy(out, &m, sizeof m);
  return 0;
}

// Reads a map back from its 128 bytes; false when encode_tiled did not write them.
inline bool decode_tensor_map(const void* bytes, TensorMap& m) {
  std::memcpy(&m, bytes, sizeof m);
  return m.magic == kTensorMapMagic && m.rank >= 1 && m.rank <= kTensorMapMaxRank && m.element_bytes != 0;
}

}  // namespace spire::mock
