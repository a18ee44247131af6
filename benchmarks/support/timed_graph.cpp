#include "benchmarks/support/timed_graph.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <random>

#include "base/half_bits.h"
#include "lowering/executable.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "tuning/median.h"
#include "tuning/tuning_setup.h"
#include "tuning/warm_up.h"

namespace spire::bench {

namespace {

// f32 values as the bytes of a graph value of dtype `t` (f32, f16 or bf16), rounding to nearest even.
std::vector<uint8_t> encode(const std::vector<float>& v, graph::DType t) {
  if (t != graph::DType::F16 && t != graph::DType::BF16) {
    if (t != graph::DType::F32) throw std::invalid_argument("time_graph: inputs must be f32, f16 or bf16");
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = t == graph::DType::F16 ? spire::f32_to_f16_bits(v[i]) : spire::f32_to_bf16_bits(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<float> decode(const std::vector<uint8_t>& bytes, graph::DType t) {
  const bool half = t == graph::DType::F16 || t == graph::DType::BF16;
  std::vector<float> out(bytes.size() / (half ? 2 : 4));
  if (!half) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    out[i] = t == graph::DType::F16 ? spire::f16_bits_to_f32(h) : spire::bf16_bits_to_f32(h);
  }
  return out;
}

}  // namespace

TimedGraph time_graph(rt::Device& dev, const graph::Graph& g, const std::vector<GraphInput>& inputs,
                      const TuningUse& tuning, int runs, int warmup, double warmup_ms, bool profile) {
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

  auto exe = lowering::compile(g, dev, {.tuning = &choices, .profile = profile});
  for (const GraphInput& in : inputs) {
    auto v = g.find(in.name);
    if (!v) throw std::invalid_argument("time_graph: the graph has no input " + in.name);
    std::vector<uint8_t> bytes = encode(in.data, g.type(*v).dtype);
    exe->set_raw(in.name, bytes.data(), bytes.size());
  }
  exe->step();
  const graph::TensorType& y = g.type(g.outputs().at(0).value);
  std::vector<uint8_t> bytes(size_t(graph::num_elements(y.shape)) * size_t(graph::dtype_bytes(y.dtype)));
  exe->get_raw("y", bytes.data(), bytes.size());
  r.output = decode(bytes, y.dtype);

  tuning::warm_up(warmup, warmup_ms, [&] { exe->step(); });
  std::vector<double> ms;
  std::vector<std::vector<double>> launch_ms;
  for (int i = 0; i < runs; ++i) {
    exe->step();
    ms.push_back(exe->last_step_ms());
    if (!profile) continue;
    const std::vector<lowering::LaunchTime> times = exe->last_launch_times();
    if (r.launches.empty()) r.launches = times;
    launch_ms.resize(times.size());
    for (size_t l = 0; l < times.size(); ++l) launch_ms[l].push_back(times[l].ms);
  }
  r.ms = tuning::median(ms);
  for (size_t l = 0; l < r.launches.size() && l < launch_ms.size(); ++l) r.launches[l].ms = tuning::median(launch_ms[l]);
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
