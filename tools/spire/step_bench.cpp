#include "tools/spire/step_bench.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuning/median.h"
#include "tuning/warm_up.h"

namespace spire::cli {

void bench_step(lowering::Executable& exe, const rt::DeviceInfo& device, StepTiming& timing) {
  const int runs = timing.profile ? std::max(timing.runs, 1) : timing.runs;
  if (runs <= 0) return;
  // First-dispatch work, caches, and a GPU's clocks (a CPU device has none to raise).
  tuning::warm_up(5, device.type == rt::DeviceType::Cpu ? 0 : tuning::kGpuWarmupMs, [&] { exe.step(); });
  std::vector<double> ms;
  std::vector<std::vector<double>> per_launch;
  for (int i = 0; i < runs; ++i) {
    exe.step();
    ms.push_back(exe.last_step_ms());
    std::vector<lowering::LaunchTime> l = exe.last_launch_times();
    if (per_launch.empty()) {
      per_launch.resize(l.size());
      timing.launches = l;
    }
    for (size_t j = 0; j < l.size() && j < per_launch.size(); ++j) per_launch[j].push_back(l[j].ms);
  }
  timing.median_ms = tuning::median(ms);
  timing.min_ms = *std::min_element(ms.begin(), ms.end());
  for (size_t j = 0; j < timing.launches.size(); ++j) timing.launches[j].ms = tuning::median(per_launch[j]);
}

std::string bench_table(const std::vector<std::pair<std::string, StepTiming>>& times) {
  std::string out = fmt::format("{:<12} {:>8} {:>12} {:>12}\n", "device", "runs", "median ms", "min ms");
  for (const auto& [id, t] : times)
    if (t.runs > 0) out += fmt::format("{:<12} {:>8} {:>12.4f} {:>12.4f}\n", id, t.runs, t.median_ms, t.min_ms);
  return out;
}

std::string profile_table(const std::string& device, const StepTiming& timing) {
  double sum = 0;
  for (const auto& l : timing.launches) sum += l.ms;
  std::string out = fmt::format("launches on {} (median of {} runs each):\n{:>6} {:>10} {:>6}  {:<32} {}\n", device,
                                std::max(timing.runs, 1), "launch", "ms", "share", "node", "kernel");
  for (size_t i = 0; i < timing.launches.size(); ++i) {
    const auto& l = timing.launches[i];
    out += fmt::format("{:>6} {:>10.4f} {:>5.1f}%  {:<32} {}\n", i, l.ms, sum > 0 ? 100 * l.ms / sum : 0.0, l.node, l.kernel);
  }
  out += fmt::format("{:>6} {:>10.4f}  (sum of the launches)\n", "total", sum);
  return out;
}

}  // namespace spire::cli
