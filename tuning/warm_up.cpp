#include "tuning/warm_up.h"

#include <chrono>

namespace spire::tuning {

void warm_up(int runs, double ms, const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (int i = 0; i < runs || elapsed_ms() < ms; ++i) run();
}

}  // namespace spire::tuning
