#include "tuning/tune_graph.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/tunable_ops.h"

namespace spire::tuning {

TunedOp tune_op(rt::Device& device, TuningCache& cache, const lowering::TunableOp& op, const TuneOptions& opt) {
  const DeviceKey dk = DeviceKey::of(device.info());
  TunedOp row;
  row.key = op.key;
  row.heuristic = op.heuristic;
  if (const CacheEntry* e = cache.find(dk, op.key)) {
    row.best = e->config;
    row.best_ms = e->ms;
    row.heuristic_ms = e->heuristic_ms;
    row.cached = true;
    return row;
  }
  TuneOptions o = opt;
  if (o.label.empty()) o.label = op.key.text();
  TuneResult r = tune(device, op.candidates, op.build, o);
  row.best = r.best;
  row.best_ms = r.best_ms;
  row.candidates = r.times.size();
  for (const CandidateTime& t : r.times)
    if (t.config == op.heuristic) row.heuristic_ms = t.ms;
  if (std::isfinite(row.heuristic_ms) && row.best_ms > row.heuristic_ms * (1 - o.min_gain)) {
    row.best = op.heuristic;
    row.best_ms = row.heuristic_ms;
  }
  cache.put({dk, op.key, row.best, row.best_ms, row.heuristic_ms});
  return row;
}

std::vector<TunedOp> tune_graph(const graph::Graph& g, rt::Device& device, TuningCache& cache, const TuneOptions& opt) {
  const std::vector<lowering::TunableOp> ops = lowering::tunable_ops(g, device.info());
  std::vector<TunedOp> rows;
  bool tuned = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    TuneOptions o = opt;
    o.label = fmt::format("[{}/{}] {}", i + 1, ops.size(), ops[i].key.text());
    rows.push_back(tune_op(device, cache, ops[i], o));
    tuned = tuned || !rows.back().cached;
  }
  if (tuned) {
    try {
      cache.save();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "spire: warning: %s (this run uses the results anyway)\n", e.what());
    }
  }
  return rows;
}

std::string tuning_table(const std::vector<TunedOp>& rows) {
  std::string out = fmt::format("{:<20} {:<44} {:<5} {:>12} {:>10} {:>7}  {}\n", "template", "shape", "dtype",
                                "heuristic ms", "best ms", "gain", "best config");
  double heuristic = 0, best = 0;
  for (const TunedOp& r : rows) {
    const bool both = r.best_ms > 0 && std::isfinite(r.heuristic_ms);
    const std::string gain = both ? fmt::format("{:.2f}x", r.heuristic_ms / r.best_ms) : "-";
    out += fmt::format("{:<20} {:<44} {:<5} {:>12.4f} {:>10.4f} {:>7}  {}{}\n", r.key.op, r.key.shape, r.key.dtype,
                       r.heuristic_ms, r.best_ms, gain, r.best == r.heuristic ? "(heuristic) " : "", r.best.text());
    heuristic += r.heuristic_ms;
    best += r.best_ms;
  }
  size_t cached = 0;
  for (const TunedOp& r : rows) cached += r.cached;
  out += fmt::format("{} tunable kernels ({} from the cache): {:.4f} ms with the heuristics, {:.4f} ms tuned "
                     "(each timed alone)\n", rows.size(), cached, heuristic, best);
  return out;
}

}  // namespace spire::tuning
