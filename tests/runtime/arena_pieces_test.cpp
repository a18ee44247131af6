// runtime/arena_pieces.h: a plan's arena cut into allocations the device can make, only where no buffer straddles the
// cut. Hand-worked plans, then random ones checked for the properties (pieces cover the arena in order, each within
// the limit, every buffer whole in one piece).
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <stdexcept>

#include "runtime/arena_pieces.h"

namespace spire::rt {
namespace {

TEST(ArenaPieces, OnePieceWithoutALimitOrWhenItFits) {
  const std::vector<ArenaRange> ranges{{0, 100}, {100, 50}};
  EXPECT_EQ(arena_pieces(ranges, 150, 0).size(), 1u);
  EXPECT_EQ(arena_pieces(ranges, 150, 150).size(), 1u);
}

TEST(ArenaPieces, CutsAtBufferOffsetsNoBufferStraddles) {
  // [0, 40) and [20, 60) overlap (two values of different lifetimes sharing bytes): no cut at 20. Cuts may go at 60
  // and 90.
  const std::vector<ArenaRange> ranges{{60, 30}, {0, 40}, {20, 40}, {90, 40}};
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const ArenaPiece& p : arena_pieces(ranges, 130, 64)) got.emplace_back(p.begin, p.end);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 60}, {60, 90}, {90, 130}}));
  // The farthest cut within the limit: with 100 bytes a piece, [0, 90) then [90, 130).
  EXPECT_EQ(arena_pieces(ranges, 130, 100).size(), 2u);
}

TEST(ArenaPieces, RefusesWhatCannotBeCut) {
  try {
    arena_pieces({{0, 40}, {20, 60}}, 80, 50);  // overlapping over 80 bytes, no cut inside
    FAIL() << "an arena with no cut within the limit was split";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find("largest allocation of 50 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(arena_pieces({{0, 10}, {10, 90}}, 100, 50), std::length_error);  // one buffer larger than the limit
}

TEST(ArenaPieces, RandomPlansKeepEveryBufferWhole) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaRange> ranges;
    uint64_t end = 0;
    const int n = 1 + int(rng() % 30);
    for (int i = 0; i < n; ++i) {
      // Mostly packed one after another, sometimes overlapping the one before (reuse).
      const uint64_t bytes = 16 * (1 + rng() % 8);
      const uint64_t offset = (i > 0 && rng() % 3 == 0) ? ranges.back().offset + 16 * (rng() % 2) : end;
      ranges.push_back({offset, bytes});
      end = std::max(end, offset + bytes);
    }
    const uint64_t most = 128 + 16 * (rng() % 16);
    std::vector<ArenaPiece> p;
    try {
      p = arena_pieces(ranges, end, most);
    } catch (const std::length_error&) {
      continue;  // (an overlapping run longer than the limit: refused, as it must be)
    }
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.front().begin, 0u);
    EXPECT_EQ(p.back().end, end);
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_LE(p[i].end - p[i].begin, most);
      if (i > 0) {
        EXPECT_EQ(p[i].begin, p[i - 1].end);
      }
    }
    for (const ArenaRange& r : ranges) {
      int holding = 0;
      for (const ArenaPiece& q : p) holding += r.offset >= q.begin && r.offset + r.bytes <= q.end;
      EXPECT_EQ(holding, 1) << "range at " << r.offset << " of " << r.bytes << " bytes";
    }
  }
}

}  // namespace
}  // namespace spire::rt
