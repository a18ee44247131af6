// Timing a compiled step with the device's own timestamps, for `--bench N` and `--profile` (spire run,
// spire graph eval, spire lenet bench): the whole step's median, and with profiling each launch's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lowering/executable.h"
#include "runtime/device.h"

namespace spire::cli {

struct StepTiming {
  int runs = 0;          // timed replays (0: none, unless profiling, which takes at least one)
  bool profile = false;  // also each launch's time (the executable must be compiled with CompileOptions::profile)
  double median_ms = 0, min_ms = 0;
  std::vector<lowering::LaunchTime> launches;  // profile: every launch in plan order, its median over the runs
};

// Replays the step untimed (5 times, and on a GPU for at least tuning::kGpuWarmupMs so that its clocks have risen
// from idle), then timing.runs times (at least once when profiling), and fills in the medians. Leaves the executable
// after a completed step.
void bench_step(lowering::Executable& exe, const rt::DeviceInfo& device, StepTiming& timing);

// "device runs median ms min ms", one row per device.
std::string bench_table(const std::vector<std::pair<std::string, StepTiming>>& times);
// Every launch: its median ms, its share of their sum, node and kernel; then the sum.
std::string profile_table(const std::string& device, const StepTiming& timing);

}  // namespace spire::cli
