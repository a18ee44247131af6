// The bit pattern the executor writes into every buffer it allocates, and into each streamed output's readback
// before every step: as f32 (0x7FF87FF8), as f64 and as each of an f16 or bf16 pair (0x7FF8) a NaN, as an integer
// a large number, as a bool neither 0 nor 1. A value nobody wrote stays visibly wrong, whatever its width.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/device.h"

namespace spire::lowering {

constexpr uint32_t kPoison = 0x7FF87FF8u;

// Writes the pattern over `bytes` bytes of host memory as rt::Device::fill writes a buffer.
inline void poison_host_bytes(void* data, size_t bytes) { rt::fill_host_bytes(data, bytes, kPoison); }

}  // namespace spire::lowering
