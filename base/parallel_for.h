// The two parallel loops of the tree, on std::thread:
//   parallel_for    contiguous ranges of a large, evenly divided loop (the float64 evaluator's convolutions and
//                   products: a resnet50 convolution at batch 32 is tens of GFLOP);
//   parallel_each   independent items of uneven cost taken from a shared counter (a plan's kernels loading at
//                   start-up), exceptions rethrown in index order.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace spire {

// Splits [0, count) into contiguous ranges and runs body(begin, end) on each, one thread per range, up to the
// machine's cores. Each index is visited by exactly one call, in order within its range, so a body whose ranges
// write disjoint memory gives the same bits as one serial call. Small work (count x work_per_index) runs on the
// calling thread.
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

// Runs body(i) for i in [0, n) on up to `threads` threads (the caller's one of them), each taking the next index,
// and rethrows, once all are done, the exception of the lowest index that threw, so that what a caller reports does
// not depend on the threads' timing.
template <class Body>
void parallel_each(size_t n, int threads, Body&& body) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  const size_t extra = std::min(n, size_t(std::max(threads, 1))) - (n ? 1 : 0);
  for (size_t t = 0; t < extra; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace spire
