// Bit encodings of the 16-bit float formats: IEEE binary16 (f16) and bfloat16 (bf16, the top half of an f32).
// Kernels store both as 16-bit words; the host converts with these when it uploads, downloads, reads a
// safetensors or ONNX tensor, or writes an f16 immediate into PTX. The kernels' own f32 -> bf16 conversion
// (backends/spirv, backends/ptx) is the same round-to-nearest-even on the f32 bits, so host and device agree.
#pragma once

#include <cstdint>

namespace spire {

// Rounds to nearest even; overflow gives +-inf, NaN stays a (quiet) NaN, tiny values become subnormals or 0.
uint16_t f32_to_f16_bits(float v);
// The exact value of an f16 bit pattern.
float f16_bits_to_f32(uint16_t h);

// Rounds to nearest even (the 16 dropped bits); overflow gives +-inf, NaN stays a quiet NaN with its sign.
uint16_t f32_to_bf16_bits(float v);
// The exact value of a bf16 bit pattern (its bits, shifted into the top half of an f32).
float bf16_bits_to_f32(uint16_t b);

// `v` rounded to the nearest f16 / bf16 value, straight from double (no double rounding through f32).
double round_to_f16(double v);
double round_to_bf16(double v);

}  // namespace spire
