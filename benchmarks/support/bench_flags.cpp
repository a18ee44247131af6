#include "benchmarks/support/bench_flags.h"

#include <cstdlib>

#include <fmt/format.h>

#include "runtime/device.h"

namespace spire::bench {

BenchFlags parse_bench_flags(int argc, char** argv, const std::string& usage, const ExtraFlag& extra) {
  BenchFlags f;
  bool warmup_given = false, warmup_ms_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n{}", a, usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device")
      f.device = value();
    else if (a == "--runs")
      f.runs = std::max(1, std::stoi(value()));
    else if (a == "--warmup") {
      f.warmup = std::max(0, std::stoi(value()));
      warmup_given = true;
    } else if (a == "--warmup-ms") {
      f.warmup_ms = std::max(0.0, std::stod(value()));
      warmup_ms_given = true;
    } else if (a == "--small")
      f.small = true;
    else if (a == "--csv")
      f.csv = value();
    else if (a == "--peak-tflops")
      f.peak_tflops = std::stod(value());
    else if (a == "--tuning-cache")
      f.tuning_cache = value();
    else if (a == "--tune")
      f.tune = true;
    else if (a == "--help" || a == "-h") {
      fmt::print("{}", usage);
      std::exit(0);
    } else if (!extra || !extra(a, value)) {
      fmt::print(stderr, "unknown option {}\n{}", a, usage);
      std::exit(2);
    }
  }
  // Tiny problems are for checking on a CPU driver, where each run is slow and there is no clock to settle.
  if (f.small && !warmup_given) f.warmup = 1;
  if (f.small && !warmup_ms_given) f.warmup_ms = 0;
  return f;
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace spire::bench
