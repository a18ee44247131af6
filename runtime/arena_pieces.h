// A plan's arena (its transient buffers at their byte offsets, memory_plan.h) allocated in pieces where the device's
// largest single allocation is smaller than the arena (NVIDIA's Vulkan driver: 4 GiB; resnet50 at batch 1024 needs an
// arena of 7 GiB). The pieces are cut only where no buffer straddles the cut, so every buffer lies whole in one piece
// and keeps its offset within it (the cut points are buffer offsets, so a view's alignment is kept).
#pragma once

#include <cstdint>
#include <vector>

namespace spire::rt {

struct ArenaRange {
  uint64_t offset = 0, bytes = 0;  // a transient buffer's place in the arena
};

struct ArenaPiece {
  uint64_t begin = 0, end = 0;  // bytes [begin, end) of the arena
};

// The fewest pieces of at most `most` bytes each (0: no limit, one piece) covering [0, arena_bytes) whose cuts no
// range straddles, in order. Throws std::length_error naming the sizes when a single range, or a run of ranges that
// overlap one another past every possible cut, is larger than `most`.
std::vector<ArenaPiece> arena_pieces(std::vector<ArenaRange> ranges, uint64_t arena_bytes, uint64_t most);

}  // namespace spire::rt
