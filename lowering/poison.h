// The bit pattern the executor writes into every buffer it allocates, and into each streamed output's readback
// before every step: as f32 (0x7FF80000) and as f64 (0x7FF800007FF80000) a NaN, as an integer a large number, as
// a bool neither 0 nor 1. A value nobody wrote stays visibly wrong.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spire::lowering {

constexpr uint32_t kPoison = 0x7FF80000u;

// Writes the pattern over `bytes` bytes of host memory as rt::Device::fill does: whole little-endian words, a last
// partial word cut off.
inline void poison_host_bytes(void* data, size_t bytes) {
  auto* p = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(kPoison >> (8 * (i % 4)));
}

}  // namespace spire::lowering
