// Splits [0, count) into contiguous ranges and runs body(begin, end) on each, one thread per range, up to the
// machine's cores. Each index is visited by exactly one call, in order within its range, so a body whose ranges
// write disjoint memory gives the same bits as one serial call. For the float64 evaluator's large loops (a resnet50
// convolution at batch 32 is tens of GFLOP); small counts run on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace spire {

template <class Body>
void parallel_for(int64_t count, int64_t work_per_index, Body&& body) {
  // Below about 4M multiply-adds per thread a thread costs more than it saves.
  constexpr int64_t kMinWorkPerThread = int64_t(1) << 22;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t by_work = std::max<int64_t>(1, count * std::max<int64_t>(1, work_per_index) / kMinWorkPerThread);
  const int64_t threads = std::min({cores, count, by_work});
  if (threads <= 1) {
    if (count > 0) body(int64_t(0), count);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads - 1));
  const int64_t per = (count + threads - 1) / threads;
  for (int64_t begin = per; begin < count; begin += per)
    pool.emplace_back([&body, begin, end = std::min(count, begin + per)] { body(begin, end); });
  body(int64_t(0), std::min(count, per));
  for (std::thread& t : pool) t.join();
}

}  // namespace spire
