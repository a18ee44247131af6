// Foundation benchmark: on each device, device-to-device copy bandwidth, the ReLU example over a large
// buffer as a fraction of that bandwidth, and the cost of one dependent dispatch inside a recorded stream.
// All times come from the device's own timestamps; each figure is the median of many runs after a warm-up of at
// least 3 runs and --warmup-ms of wall time (the GPU's clocks rise from idle; tuning/warm_up.h).
//
//   spire_bench_foundation [--device D|all] [--mib 256] [--runs 50] [--warmup-ms 500]
#include "backends/compile_kernel.h"
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tuning/copy_bandwidth.h"
#include "tuning/median.h"
#include "tuning/warm_up.h"

using namespace spire;

namespace {

// Submits a recorded stream `runs` times after warming up (at least 3 runs and `warmup_ms`); returns the median
// device time between the stream's first and last timestamps.
double time_stream(rt::Device& dev, rt::CommandStream& s, uint32_t t0, uint32_t t1, int runs, double warmup_ms) {
  tuning::warm_up(3, warmup_ms, [&] { dev.run(s); });
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    dev.run(s);
    ms.push_back(s.elapsed_ms(t0, t1));
  }
  return tuning::median(ms);
}

// A kernel that does almost nothing but reads what the previous dispatch wrote: x[0] += 1 (one invocation).
kir::Kernel increment_kernel() {
  kir::KernelBuilder kb("increment", 1);
  auto x = kb.buffer("x", kir::Type::F32, kir::Access::ReadWrite);
  x[0u] = x[0u] + 1.0f;
  return kb.finish();
}

void bench(rt::Device& dev, uint64_t mib, int runs, double warmup_ms) {
  const auto& info = dev.info();
  uint64_t bytes = std::min<uint64_t>(mib << 20, info.max_buffer_bytes / 4 * 4);
  uint64_t n = bytes / 4;

  auto a = dev.alloc(bytes), b = dev.alloc(bytes);
  {  // fill the input with random-looking signed values: never time on zeros
    std::vector<float> host(n);
    uint32_t s = 12345;
    for (auto& v : host) {
      s = s * 1664525u + 1013904223u;
      v = float(int32_t(s)) / 2147483648.0f;
    }
    dev.upload(*a, host.data(), bytes);
  }

  // copy: the runtime's buffer copy; kcopy: a copy kernel (tuning/copy_bandwidth.h).
  const tuning::CopyBandwidth copy = tuning::copy_bandwidth(dev, bytes, runs, warmup_ms);
  const double copy_gbs = copy.buffer_copy_gbs, kcopy_gbs = copy.kernel_copy_gbs, best_copy = copy.best();

  auto relu = spire::backends::compile_and_load(dev, examples::relu_kernel());
  auto rs = dev.record();
  rt::BufferView views[] = {rt::BufferView(a), rt::BufferView(b)};
  uint32_t r0 = rs->timestamp();
  rs->dispatch(*relu, views, rt::ScalarArgs().u32(uint32_t(n)), rt::Grid::threads(n, examples::kReluBlock));
  uint32_t r1 = rs->timestamp();
  double relu_ms = time_stream(dev, *rs, r0, r1, runs, warmup_ms);
  double relu_gbs = 2.0 * double(bytes) / (relu_ms * 1e-3) / 1e9;

  // Dependent dispatches: K increments separated by barriers, against K = 1, so fixed costs cancel.
  auto inc = spire::backends::compile_and_load(dev, increment_kernel());
  auto x = dev.alloc(4);
  auto chain = [&](int k) {
    auto s = dev.record();
    rt::BufferView v[] = {rt::BufferView(x)};
    uint32_t t0 = s->timestamp();
    for (int i = 0; i < k; ++i) {
      if (i) s->barrier();
      s->dispatch(*inc, v, rt::ScalarArgs(), rt::Grid::workgroups(1));
    }
    uint32_t t1 = s->timestamp();
    return time_stream(dev, *s, t0, t1, std::max(5, runs / 5), warmup_ms);
  };
  const int K = 1000;
  double per_dispatch_us = (chain(K) - chain(1)) / (K - 1) * 1e3;

  // Host round trip: record once, then submit + wait of one tiny dispatch, timed on the host.
  auto one = dev.record();
  rt::BufferView v[] = {rt::BufferView(x)};
  one->dispatch(*inc, v, rt::ScalarArgs(), rt::Grid::workgroups(1));
  tuning::warm_up(5, warmup_ms, [&] { dev.run(*one); });
  std::vector<double> host_us;
  for (int i = 0; i < runs; ++i) {
    auto t = std::chrono::steady_clock::now();
    dev.run(*one);
    host_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }

  fmt::print("{:<9} {:>5} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.1f}% {:>13.2f} {:>15.1f}   {}\n", info.id, bytes >> 20,
             copy_gbs, kcopy_gbs, relu_gbs, 100.0 * relu_gbs / best_copy, per_dispatch_us, tuning::median(host_us), info.name);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "all";
  uint64_t mib = 256;
  int runs = 50;
  double warmup_ms = tuning::kGpuWarmupMs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") device = next();
    else if (a == "--mib") mib = std::stoull(next());
    else if (a == "--runs") runs = std::stoi(next());
    else if (a == "--warmup-ms") warmup_ms = std::stod(next());
    else {
      fmt::print("usage: spire_bench_foundation [--device D|all] [--mib 256] [--runs 50] [--warmup-ms 500]\n"
                 "  --warmup-ms: before each measurement, untimed runs for at least this long (and 3), so a GPU's\n"
                 "               clocks have risen from idle\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    // copy: the runtime's buffer copy; kcopy: a copy kernel; relu/copy: ReLU over the better of the two.
    fmt::print("{:<9} {:>5} {:>10} {:>10} {:>10} {:>10} {:>13} {:>15}   {}\n", "device", "MiB", "copy GB/s", "kcopy GB/s",
               "relu GB/s", "relu/copy", "dependent us", "submit+wait us", "name");
    for (const std::string& id : rt::device_ids(device)) {
      auto dev = rt::open_device(id);
      bench(*dev, mib, runs, warmup_ms);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "spire_bench_foundation: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
