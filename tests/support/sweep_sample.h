// The members of a sweep a test runs: every one with SPIRE_FULL_SWEEPS=1 (`ctest -L full`, the GPU scripts), else the
// first (a template's heuristic pick comes first) and at most 7 more spread evenly over the list. The templates build
// their candidate lists kind by kind (rows, elements, staged images, unrolled or not, ...), so each kind keeps a
// representative in the test command while a sweep there takes seconds instead of minutes.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace spire::testing_support {

template <typename T>
std::vector<T> sampled(const std::vector<T>& all) {
  const char* full = std::getenv("SPIRE_FULL_SWEEPS");
  constexpr size_t kMost = 8;
  if ((full && std::string(full) == "1") || all.size() <= kMost) return all;
  std::vector<T> out;
  for (size_t i = 0; i < kMost; ++i) out.push_back(all[i * (all.size() - 1) / (kMost - 1)]);
  return out;
}

}  // namespace spire::testing_support
