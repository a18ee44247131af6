// LeNet training step, launch by launch: lowers the step graph, times every launch alone with the device's
// timestamps (median of several runs), and the whole recorded step through the executor. Shows where a
// step's time goes on each device. Before any timing the step runs for --warmup-ms of wall time (the GPU's clocks
// rise from idle; tuning/warm_up.h), and the launches alone follow it back to back.
//
// With --loop N: then N steps back to back as the trainer runs them (x and y streamed in, the loss streamed out,
// 1, 2 and 3 steps in flight), each step's host time split into feeding (two memcpys), start_step() (the submit),
// finish_step() (the wait) and reading the loss, against the wall time per step and the step's device time: where a
// training loop's time goes beyond the kernels'.
//
//   spire_bench_lenet_step [--device D|all] [--batch 64] [--runs 20] [--top 15] [--warmup-ms 500] [--loop 0]
#include "backends/compile_kernel.h"
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tuning/median.h"
#include "tuning/warm_up.h"

using namespace spire;

namespace {

void bench_loop(rt::Device& dev, const graph::Graph& g, int64_t batch, int n, double warmup_ms);

void bench(rt::Device& dev, int64_t batch, int runs, int top, double warmup_ms, int loop) {
  nn::LeNetGraphOptions gopt;
  gopt.batch = batch;
  gopt.sgd = true;
  gopt.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  graph::Graph g = nn::build_lenet_graph(gopt);

  // The whole step, as training runs it.
  auto exe = lowering::compile(g, dev);
  for (const auto& [name, t] : nn::lenet_initial_parameters(1)) exe->set(name, t);
  std::vector<float> x(size_t(batch * 784), 0.5f);
  std::vector<int32_t> y(size_t(batch), 3);
  exe->set_raw("x", x.data(), x.size() * 4);
  exe->set_raw("y", y.data(), y.size() * 4);

  // Each launch alone, on buffers of the planned sizes (contents: a small constant, labels 0). Compiled before any
  // timing, so that the GPU does not idle between the warm-up and the timed runs.
  lowering::Plan plan = lowering::lower(g, dev.info());
  std::vector<std::shared_ptr<rt::Buffer>> buffers;
  for (const auto& b : plan.buffers) {
    buffers.push_back(dev.alloc(std::max<uint64_t>(b.bytes(), 4)));
    dev.fill(*buffers.back(), b.slot.type == kir::Type::F32 ? 0x3c23d70a : 0);  // 0.01f or 0
  }
  std::vector<std::shared_ptr<rt::Kernel>> kernels;
  for (const auto& k : plan.kernels) kernels.push_back(spire::backends::compile_and_load(dev, k));

  tuning::warm_up(3, warmup_ms, [&] { exe->step(); });
  std::vector<double> step_ms;
  for (int i = 0; i < runs; ++i) {
    exe->step();
    step_ms.push_back(exe->last_step_ms());
  }
  struct Row { std::string node, kernel; double ms; };
  std::vector<Row> rows;
  double sum = 0;
  for (const auto& l : plan.launches) {
    std::vector<rt::BufferView> views;
    for (int32_t b : l.buffers) views.emplace_back(buffers[size_t(b)]);
    auto s = dev.record();
    uint32_t t0 = s->timestamp();
    s->dispatch(*kernels[size_t(l.kernel)], views, l.scalars, rt::Grid::workgroups(l.groups));
    uint32_t t1 = s->timestamp();
    std::vector<double> ms;
    for (int i = 0; i < runs + 2; ++i) {
      dev.run(*s);
      if (i >= 2) ms.push_back(s->elapsed_ms(t0, t1));
    }
    rows.push_back({l.node, plan.kernels[size_t(l.kernel)].name, tuning::median(ms)});
    sum += rows.back().ms;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
  fmt::print("{} ({}): batch {}, {} launches, {} barriers, step {:.3f} ms (median of {}), launches alone sum to {:.3f} ms\n",
             dev.info().id, dev.info().name, batch, plan.launches.size(), exe->barriers(), tuning::median(step_ms), runs, sum);
  fmt::print("  {:>9} {:>6}  {:<28} {}\n", "ms", "share", "node", "kernel");
  for (int i = 0; i < std::min<int>(top, int(rows.size())); ++i)
    fmt::print("  {:>9.4f} {:>5.1f}%  {:<28} {}\n", rows[size_t(i)].ms, 100 * rows[size_t(i)].ms / sum,
               rows[size_t(i)].node, rows[size_t(i)].kernel);
  if (loop > 0) bench_loop(dev, g, batch, loop, warmup_ms);
}

// The trainer's loop without its data preparation: `n` steps, each fed the same minibatch, up to `in_flight` submitted
// before the wait for the oldest (training/lenet_trainer.cpp).
void bench_loop(rt::Device& dev, const graph::Graph& g, int64_t batch, int n, double warmup_ms) {
  using Clock = std::chrono::steady_clock;
  const auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  std::vector<float> x(size_t(batch * 784), 0.5f);
  std::vector<int32_t> y(size_t(batch), 3);
  fmt::print("  back to back ({} steps, x and y streamed in, the loss out), us per step (medians; wall: the mean):\n",
             n);
  fmt::print("  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "in flight", "wall", "device", "feed", "submit", "wait",
             "loss");
  for (int in_flight : {1, 2, 3}) {
    lowering::CompileOptions opt{
        .streamed_inputs = {"x", "y"}, .streamed_outputs = {"loss"}, .steps_in_flight = in_flight};
    auto exe = lowering::compile(g, dev, opt);
    for (const auto& [name, t] : nn::lenet_initial_parameters(1)) exe->set(name, t);
    std::vector<double> feed, submit, wait, read, device;
    float loss = 0;
    const auto run = [&](int steps, bool timed) {
      int started = 0;
      for (int b = 0; b < steps; ++b) {
        while (started < steps && started < b + in_flight) {
          auto t0 = Clock::now();
          exe->set_raw("x", x.data(), x.size() * 4);
          exe->set_raw("y", y.data(), y.size() * 4);
          auto t1 = Clock::now();
          exe->start_step();
          auto t2 = Clock::now();
          ++started;
          if (timed) {
            feed.push_back(us(t1 - t0));
            submit.push_back(us(t2 - t1));
          }
        }
        auto t3 = Clock::now();
        exe->finish_step();
        auto t4 = Clock::now();
        exe->get_raw("loss", &loss, sizeof loss);
        auto t5 = Clock::now();
        if (timed) {
          wait.push_back(us(t4 - t3));
          read.push_back(us(t5 - t4));
          device.push_back(exe->last_step_ms() * 1e3);
        }
      }
    };
    tuning::warm_up(3, warmup_ms, [&] { run(1, false); });
    auto start = Clock::now();
    run(n, true);
    const double wall = us(Clock::now() - start) / n;
    fmt::print("  {:>9} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f}\n", in_flight, wall, tuning::median(device),
               tuning::median(feed), tuning::median(submit), tuning::median(wait), tuning::median(read));
  }
}

}  // namespace

constexpr const char* kUsage =
    "usage: spire_bench_lenet_step [--device D|all] [--batch 64] [--runs 20] [--top 15] [--warmup-ms 500] [--loop 0]\n"
    "  --device: a device id, or all (default): every device present\n"
    "  --batch: the training batch; --runs: timed steps (and timed runs of each launch alone), their median shown\n"
    "  --top: how many of the slowest launches to list (0: none)\n"
    "  --warmup-ms: untimed steps first, at least 3 and at least this long, so a GPU's clocks have risen from idle\n"
    "  --loop: then this many steps back to back as the trainer runs them, with 1, 2 and 3 steps in flight: wall\n"
    "    time per step against device time, and the host's feeding, submit, wait and loss read (0: not run)\n";

int main(int argc, char** argv) {
  std::string device = "all";
  int64_t batch = 64;
  int runs = 20, top = 15, loop = 0;
  double warmup_ms = tuning::kGpuWarmupMs;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        fmt::print("{}", kUsage);
        return 0;
      }
      if (i + 1 >= argc) {
        fmt::print(stderr, "spire_bench_lenet_step: {} needs a value\n{}", a, kUsage);
        return 2;
      }
      std::string v = argv[++i];
      if (a == "--device") device = v;
      else if (a == "--batch") batch = std::stoll(v);
      else if (a == "--runs") runs = std::stoi(v);
      else if (a == "--top") top = std::stoi(v);
      else if (a == "--warmup-ms") warmup_ms = std::stod(v);
      else if (a == "--loop") loop = std::stoi(v);
      else {
        fmt::print(stderr, "spire_bench_lenet_step: unknown flag {}\n{}", a, kUsage);
        return 2;
      }
    }
  } catch (const std::exception&) {
    fmt::print(stderr, "spire_bench_lenet_step: a flag's value is not a number\n{}", kUsage);
    return 2;
  }
  if (batch < 1 || runs < 1 || top < 0 || warmup_ms < 0 || loop < 0) {
    fmt::print(stderr, "spire_bench_lenet_step: --batch and --runs must be positive, --top, --warmup-ms and --loop not "
                       "negative\n");
    return 2;
  }
  try {
    for (const std::string& id : rt::device_ids(device)) {
      auto dev = rt::open_device(id);
      bench(*dev, batch, runs, top, warmup_ms, loop);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "spire_bench_lenet_step: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
