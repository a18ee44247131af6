// What the runtime knows of a compiled kernel: its interface, never its body. The compilers fill it in
// (backends/kernel_interface.h) beside the binary; a bundle stores it; a device checks it against its limits when it
// loads the kernel, binds buffers and packs scalars by it, and orders launches by its buffers' access.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/buffer_access.h"
#include "base/dtype.h"
#include "base/features.h"

namespace spire::rt {

struct KernelInterface {
  struct Buffer {
    std::string name;
    DType elem = DType::F32;
    Access access = Access::ReadWrite;
    // Read before the kernel waits for the kernel launched before it (kir::WaitForPriorKernels): a runtime that
    // overlaps a launch with the one before (CUDA's programmatic dependent launch) may do so only where that one
    // writes none of these buffers.
    bool read_before_wait = false;
  };
  struct Scalar {
    std::string name;
    DType type = DType::U32;
  };
  // A tensor map the runtime encodes at each launch against the buffer bound there (CUDA's copy engine, sm_90):
  // buffer `buffer` viewed as a dense tensor of `extents` (innermost first) with `strides` elements between neighbours
  // along dimensions 1.., copied in boxes of `box` elements, 128-byte swizzled or not.
  struct TensorMap {
    std::string name;
    uint32_t buffer = 0;
    std::vector<uint64_t> extents, strides;
    std::vector<uint32_t> box;
    bool swizzle_128 = false;
  };

  std::string name;
  std::array<uint32_t, 3> workgroup_size{64, 1, 1};
  Features features;                  // what the device must offer
  std::vector<Buffer> buffers;        // bindings, in order
  std::vector<Scalar> scalars;        // packed in order, each aligned to its own size (scalar_offsets())
  std::vector<TensorMap> tensor_maps; // launch parameters after the scalars
  uint32_t shared_bytes = 0;          // workgroup memory, as the compiler laid it out
  uint32_t dynamic_shared_bytes = 0;  // of which each launch passes as dynamic (CUDA: past 48 KiB, or with barriers)

  uint32_t workgroup_invocations() const { return workgroup_size[0] * workgroup_size[1] * workgroup_size[2]; }
  std::vector<uint32_t> scalar_offsets() const;
  uint32_t scalar_block_bytes() const;  // a multiple of 4
};

}  // namespace spire::rt
