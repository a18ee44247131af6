#include "runtime/arena_pieces.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::rt {

std::vector<ArenaPiece> arena_pieces(std::vector<ArenaRange> ranges, uint64_t arena_bytes, uint64_t most) {
  if (most == 0 || arena_bytes <= most) return {{0, arena_bytes}};
  // The places a cut may go: where every range below ends at or before it. Walking the ranges by offset, a cut may go
  // at a range's offset when no earlier range reaches past it.
  std::sort(ranges.begin(), ranges.end(), [](const ArenaRange& a, const ArenaRange& b) { return a.offset < b.offset; });
  std::vector<uint64_t> cuts;
  uint64_t reach = 0;
  for (const ArenaRange& r : ranges) {
    if (r.bytes == 0) continue;  // (an empty buffer lies anywhere)
    if (r.offset >= reach && r.offset > 0 && (cuts.empty() || cuts.back() != r.offset)) cuts.push_back(r.offset);
    reach = std::max(reach, r.offset + r.bytes);
  }
  if (cuts.empty() || cuts.back() != arena_bytes) cuts.push_back(arena_bytes);
  std::vector<ArenaPiece> pieces;
  uint64_t begin = 0;
  size_t i = 0;
  while (begin < arena_bytes) {
    // The farthest cut within `most` of the piece's start.
    size_t last = cuts.size();
    while (i < cuts.size() && cuts[i] - begin <= most) last = i++;
    if (last == cuts.size())
      throw std::length_error(fmt::format("the arena's buffers from byte {} on overlap over {} bytes without a place to "
                                          "cut, more than the device's largest allocation of {} bytes",
                                          begin, (i < cuts.size() ? cuts[i] : arena_bytes) - begin, most));
    pieces.push_back({begin, cuts[last]});
    begin = cuts[last];
  }
  return pieces;
}

}  // namespace spire::rt
