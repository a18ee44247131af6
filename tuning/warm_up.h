// Untimed runs before timed ones, by count and by time: a GPU left idle (by compiles, by host work) runs its first
// work at idle clocks, so a few runs are not enough for the timed ones to see the clocks of a busy GPU (on the H100,
// vulkan:0's bf16 product timed up to 3x slow after 3 runs alone: docs/PERFORMANCE.md, 2026-11-27). The tuner's
// candidates and the benchmarks' graphs both warm up through this.
#pragma once

#include <functional>

namespace spire::tuning {

// How long a GPU warms up before its first timed run (wall time): on the H100 the clocks had risen from idle well
// within it (docs/PERFORMANCE.md, 2026-11-27). A CPU device needs none.
constexpr double kGpuWarmupMs = 500;

// Calls `run` at least `runs` times, and until `ms` milliseconds of wall time have passed since the first call.
void warm_up(int runs, double ms, const std::function<void()>& run);

}  // namespace spire::tuning
