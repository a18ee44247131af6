// The members of a sweep a test runs: every one with SPIRE_FULL_SWEEPS=1 (`ctest -L full`, the GPU scripts), else the
// first (a template's heuristic pick comes first) and at most most - 1 more spread evenly over the list. The templates build
// their candidate lists kind by kind (rows, elements, staged images, unrolled or not, ...), so each kind keeps a
// representative in the test command while a sweep there takes seconds instead of minutes.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace spire::testing_support {

template <typename T>
std::vector<T> sampled(const std::vector<T>& all, size_t most = 8) {
  const char* full = std::getenv("SPIRE_FULL_SWEEPS");
  if ((full && std::string(full) == "1") || all.size() <= most || most < 2) return all;
  std::vector<T> out;
  for (size_t i = 0; i < most; ++i) out.push_back(all[i * (all.size() - 1) / (most - 1)]);
  return out;
}

}  // namespace spire::testing_support
