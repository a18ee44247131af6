// The command-line flags every speed benchmark of heavy ops shares (bench_matmul, bench_conv2d), so both
// accept the same --device/--runs/--small/--csv/--peak-tflops/--tuning-cache/--tune and read them one way.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tuning/warm_up.h"

namespace spire::bench {

struct BenchFlags {
  std::string device = "all";         // a device id, or "all": every device rt::list_devices() finds
  int runs = 50;                      // timed runs per row; the row shows their median
  int warmup = 3;                     // untimed runs before them (1 with --small unless --warmup is given)
  // ... and at least this long (wall time), so the GPU's clocks have risen from idle when the timed runs start
  // (tuning/warm_up.h). 0 with --small unless --warmup-ms is given.
  double warmup_ms = tuning::kGpuWarmupMs;
  bool small = false;                 // tiny problems, so a CPU Vulkan driver (lavapipe) finishes in seconds
  std::string csv;                    // also write the rows here ("": don't)
  std::optional<double> peak_tflops;  // overrides the fp32 peak table (fp32_peak.h) for every device
  std::string tuning_cache;           // "": the tuning cache's default file, as every spire command reads it
  bool tune = false;                  // tune shapes the cache has no entry for before timing them
};

// Called with a flag the common parser does not know and a function returning its value (exits 2 when the
// value is missing); returns false when the flag is unknown to the benchmark too.
using ExtraFlag = std::function<bool(const std::string& flag, const std::function<std::string()>& value)>;

// Parses argv; prints `usage` and exits (0 for --help, 2 for an unknown flag or a missing value).
BenchFlags parse_bench_flags(int argc, char** argv, const std::string& usage, const ExtraFlag& extra);

// "a,b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& text, char sep = ',');

}  // namespace spire::bench
