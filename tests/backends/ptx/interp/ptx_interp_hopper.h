// Hopper's asynchronous machinery for the PTX interpreter (internal to ptx_interp.cpp): mbarrier objects, the tensor
// memory accelerator's tiled copies (cp.async.bulk.tensor) and the shared-memory operands of warpgroup MMA (wgmma's
// matrix descriptors and canonical layouts). The interpreter's scheduler decides when these run; this file says what
// they do. Every fault throws Error naming the instruction (`at`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/runtime/cuda/mock_driver/mock_tensor_map.h"
#include "tests/backends/ptx/interp/ptx_interp.h"

namespace spire::ptx::interp::hopper {

// The 128-byte swizzle of the TMA and of wgmma: the 16-byte chunks of each 128-byte row are permuted by the row's index
// within its 1024-byte group (bits 4-6 of the shared address XOR bits 7-9).
inline uint32_t swizzle_128b(uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); }

// The mbarrier objects of one CTA, by shared address (PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier"). A phase completes when its pending arrivals and its transaction count both reach zero;
// the phase parity then flips and the arrivals are expected again. The state lives here, not in the object's 8 bytes
// of shared memory (whose bits PTX leaves opaque).
class MBarriers {
 public:
  void clear() { bars_.clear(); }
  void init(uint32_t address, uint64_t arrivals, const std::string& at);
  // mbarrier.arrive; expect_tx first raises the transaction count by `tx_bytes`.
  void arrive(uint32_t address, uint64_t tx_bytes, const std::string& at);
  // What a tensor copy signals once its bytes landed (mbarrier::complete_tx::bytes).
  void complete_tx(uint32_t address, uint64_t bytes, const std::string& at);
  // try_wait.parity: whether the phase of that parity has completed, i.e. the current phase's parity differs.
  bool phase_complete(uint32_t address, uint32_t parity, const std::string& at) const;
  // Whether a barrier object lies in [begin, end): a copy into it would corrupt the barrier.
  bool overlaps(uint64_t begin, uint64_t end) const;
  uint64_t fingerprint() const;  // changes with any barrier's state (the scheduler's progress check)

 private:
  struct Barrier {
    uint32_t expected = 0;  // arrivals per phase
    uint32_t pending = 0;   // arrivals the current phase still waits for
    int64_t tx = 0;         // transaction bytes it still waits for (a copy may land before its expect_tx)
    uint32_t phase = 0;     // phases completed
  };
  Barrier& find(uint32_t address, const char* what, const std::string& at);
  void complete_if_done(Barrier& b);
  std::map<uint32_t, Barrier> bars_;
};

// cp.async.bulk.tensor: copies the box of `map` whose origin is `coords` (signed, innermost first) from global memory
// (each in-bounds row of the box through `check`) into `shared` at `dst`, laid out innermost dimension first and
// swizzled as the map says; elements outside the tensor land as zeros. Returns the bytes the copy signals to its
// mbarrier: the whole box, out-of-bounds elements included.
uint32_t tensor_copy(const mock::TensorMap& map, const std::vector<int32_t>& coords, uint32_t dst,
                     std::vector<uint8_t>& shared, const GlobalCheck& check, const std::string& at);

// A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format"): byte addresses and offsets; the 128-byte swizzle or
// none (the 32- and 64-byte ones, and the base offset, are refused).
struct Descriptor {
  uint32_t start = 0, lbo = 0, sbo = 0;
  bool swizzle_128b = false;
};
Descriptor decode_descriptor(uint64_t bits, const std::string& at);

// The shared address of element (mn, k) of a 16-bit operand: mn is A's row or B's column, k < 16. `mn_major` is the
// instruction's transpose flag (1: the operand's rows run along M or N).
uint32_t operand_address(const Descriptor& d, uint32_t mn, uint32_t k, bool mn_major);

// Reads a wgmma operand of `rows` x 16 16-bit elements (bf16 or f16) from shared memory as floats, [mn * 16 + k].
std::vector<float> read_operand(const std::vector<uint8_t>& shared, uint64_t descriptor, uint32_t rows, bool mn_major,
                                bool bf16, const std::string& at);

// The accumulator element (row, column) that register `reg` of warpgroup thread `thread` (0..127) holds (fixed by PTX
// for wgmma's m64nNk16 f32 accumulators).
inline std::pair<uint32_t, uint32_t> accumulator_element(uint32_t thread, uint32_t reg) {
  return {16 * (thread / 32) + (thread % 32) / 4 + 8 * ((reg / 2) % 2), 8 * (reg / 4) + 2 * (thread % 4) + reg % 2};
}

}  // namespace spire::ptx::interp::hopper
