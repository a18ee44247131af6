// The statistic every timed figure in spire reports (the benchmarks, the tuner, `--bench`): the median of the timed
// runs, which one slow run (a clock change, a preemption) does not move. For an even count, the upper of the two
// middle values; 0 for no runs.
#pragma once

#include <algorithm>
#include <vector>

namespace spire::tuning {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace spire::tuning
