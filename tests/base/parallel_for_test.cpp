// parallel_for visits every index exactly once, in order within each range, and runs large work on several threads;
// parallel_each visits every index once and rethrows the lowest index's exception.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/parallel_for.h"

namespace spire {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnceInContiguousRanges) {
  for (const int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(1000), int64_t(100003)}) {
    std::vector<std::atomic<int>> visits(static_cast<size_t>(count));
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    parallel_for(count, int64_t(1) << 20, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) ++visits[size_t(i)];
      std::lock_guard lock(m);
      ranges.emplace_back(lo, hi);
    });
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(visits[size_t(i)], 1) << "index " << i << " of " << count;
    std::sort(ranges.begin(), ranges.end());
    int64_t next = 0;
    for (const auto& [lo, hi] : ranges) {
      EXPECT_EQ(lo, next);
      EXPECT_LT(lo, hi);
      next = hi;
    }
    EXPECT_EQ(next, count);
  }
}

TEST(ParallelFor, SmallWorkStaysOnTheCallingThreadAndLargeWorkSpreads) {
  std::set<std::thread::id> small, large;
  std::mutex m;
  parallel_for(64, 10, [&](int64_t, int64_t) {
    std::lock_guard lock(m);
    small.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(small, std::set<std::thread::id>{std::this_thread::get_id()});
  parallel_for(64, int64_t(1) << 24, [&](int64_t, int64_t) {
    std::lock_guard lock(m);
    large.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(large.size(), std::min<size_t>(64, std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ParallelEach, VisitsEveryIndexOnceAndRethrowsTheLowestIndexsError) {
  std::vector<std::atomic<int>> visits(100);
  parallel_each(visits.size(), 4, [&](size_t i) { ++visits[i]; });
  for (size_t i = 0; i < visits.size(); ++i) EXPECT_EQ(visits[i], 1) << i;
  try {
    parallel_each(50, 4, [](size_t i) {
      if (i == 7 || i == 31) throw std::runtime_error("index " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "index 7");
  }
  parallel_each(0, 4, [](size_t) { FAIL() << "called for an empty range"; });
}

}  // namespace
}  // namespace spire
