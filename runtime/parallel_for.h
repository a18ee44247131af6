// Runs body(0..n-1) on up to `threads` threads (the caller's one of them) and rethrows, once all are done, the
// exception of the lowest index that threw, so that what a caller reports does not depend on the threads' timing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace spire::rt {

template <typename Body>
void parallel_for(size_t n, int threads, Body&& body) {
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

}  // namespace spire::rt
