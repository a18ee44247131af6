// Where a PTX kernel keeps kir's shared arrays: one definition for the PTX backend, which declares them, and the
// CUDA runtime, which must launch with the same number of dynamic bytes. Header-only so that the runtime (which
// also runs precompiled bundles, without the compiler) needs no link to the backend.
//
// Up to 48 KiB a kernel declares its arrays statically (.shared NAME[BYTES]), the most CUDA gives without asking.
// Past that they live in one dynamic array (.extern .shared), each at its offset, and the runtime opts the
// function in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) and passes the size at every launch: the only way
// to the 227 KiB an H100 gives a block (a deep tensor-core pipeline needs it).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::ptx {

inline constexpr uint32_t kStaticSharedLimit = 48 * 1024;
inline constexpr uint32_t kSharedAlign = 32;  // what wmma.load and wmma.store demand of their addresses
// Kernels with tensor copies: where a 128-byte-swizzled copy lands, the swizzle pattern repeats every 1024 bytes, and
// wgmma reads the pattern from the address bits, so every array starts on 1024 bytes.
inline constexpr uint32_t kTensorCopyAlign = 1024;
inline constexpr uint32_t kArrivalBarrierBytes = 8;  // an mbarrier object

struct SharedLayout {
  std::vector<uint32_t> offsets;  // per array, from the start of the kernel's shared memory
  std::vector<uint32_t> barrier_offsets;  // per kir::ArrivalBarriers, after the arrays (always in the dynamic array)
  uint32_t align = kSharedAlign;  // of every array
  uint32_t bytes = 0;             // all arrays and barriers
  bool dynamic = false;           // past kStaticSharedLimit, or with arrival barriers
  uint32_t dynamic_bytes() const { return dynamic ? bytes : 0; }
};

// The most shared memory a block may opt into on an architecture (CUDA's compute capability tables); a device
// reports its own (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), which the runtime checks.
inline uint32_t max_shared_bytes(uint32_t sm) {
  if (sm >= 90) return 227 * 1024;
  if (sm == 80 || sm == 87) return 163 * 1024;
  if (sm >= 86) return 99 * 1024;
  return 64 * 1024;  // sm_75
}

inline SharedLayout shared_layout(const kir::Kernel& k) {
  SharedLayout l;
  if (k.features.has(kir::Feature::TensorCopy)) l.align = kTensorCopyAlign;
  for (const kir::SharedArray& s : k.shared) {
    l.bytes = (l.bytes + l.align - 1) / l.align * l.align;
    l.offsets.push_back(l.bytes);
    l.bytes += s.count * dtype_bytes(s.elem);
  }
  l.bytes = (l.bytes + kArrivalBarrierBytes - 1) / kArrivalBarrierBytes * kArrivalBarrierBytes;
  for (const kir::ArrivalBarriers& b : k.arrival_barriers) {
    l.barrier_offsets.push_back(l.bytes);
    l.bytes += b.count * kArrivalBarrierBytes;
  }
  // One dynamic array holds everything at known offsets (static arrays would each need a symbol).
  l.dynamic = l.bytes > kStaticSharedLimit || !k.arrival_barriers.empty();
  return l;
}

}  // namespace spire::ptx
