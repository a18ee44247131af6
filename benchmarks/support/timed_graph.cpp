#include "benchmarks/support/timed_graph.h"

#include <algorithm>
#include <random>

#include "lowering/executable.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "tuning/tuning_setup.h"

namespace spire::bench {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

TimedGraph time_graph(rt::Device& dev, const graph::Graph& g, const std::vector<GraphInput>& inputs,
                      const TuningUse& tuning, int runs, int warmup) {
  TimedGraph r;
  lowering::MapTuningChoices choices =
      tuning::prepare_tuning({.tune = tuning.tune, .cache_file = tuning.cache_file}, dev, {&g}, stderr);

  // The config lowering will pick, asked the way lowering asks (lowering::choose_config), to print beside
  // the time; "tuned" only when the cache's choice is what it picks.
  for (const lowering::TunableOp& op : lowering::tunable_ops(g, dev.info())) {
    lowering::heavy::Config chosen = lowering::choose_config(&choices, op);
    auto cached = choices.find(op.key);
    r.tuned = cached && *cached == chosen;
    r.config += (r.config.empty() ? "" : " + ") + chosen.text();
  }

  auto exe = lowering::compile(g, dev, {.tuning = &choices});
  for (const GraphInput& in : inputs) exe->set_raw(in.name, in.data.data(), in.data.size() * sizeof(float));
  exe->step();
  r.output.resize(size_t(graph::num_elements(g.type(g.outputs().at(0).value).shape)));
  exe->get_raw("y", r.output.data(), r.output.size() * sizeof(float));

  for (int i = 0; i < warmup; ++i) exe->step();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    exe->step();
    ms.push_back(exe->last_step_ms());
  }
  r.ms = median(ms);
  return r;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace spire::bench
