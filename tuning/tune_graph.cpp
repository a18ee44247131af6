#include "tuning/tune_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/tunable_ops.h"

namespace spire::tuning {

namespace {

// With SPIRE_TUNING_LOG=FILE, every candidate's time (not only the winner the cache keeps) is appended to FILE, one
// tab-separated line each: device, template, shape, dtype, config, median ms, timed runs ("inf", 0 and the reason where
// it could not run).
// For choosing a heuristic from what the tuner saw across a whole space.
void log_candidate_times(const std::string& device, const lowering::TuningKey& key, const TuneResult& r) {
  const char* path = std::getenv("SPIRE_TUNING_LOG");
  if (!path || !*path) return;
  std::FILE* f = std::fopen(path, "a");
  if (!f) {
    std::fprintf(stderr, "spire: warning: SPIRE_TUNING_LOG: cannot append to %s\n", path);
    return;
  }
  for (const CandidateTime& t : r.times) {
    std::string why = t.error;
    std::replace_if(why.begin(), why.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
    fmt::print(f, "{}\t{}\t{}\t{}\t{}\t{}\t{}{}\n", device, key.op, key.shape, key.dtype, t.config.text(),
               std::isfinite(t.ms) ? fmt::format("{:.6f}", t.ms) : "inf", t.runs, why.empty() ? "" : "\t" + why);
  }
  std::fclose(f);
}

}  // namespace

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
  log_candidate_times(device.info().id, op.key, r);
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

std::vector<TunedOp> tune_ops(const std::vector<lowering::TunableOp>& ops, rt::Device& device, TuningCache& cache,
                              const TuneOptions& opt) {
  std::vector<TunedOp> rows;
  bool warned = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    TuneOptions o = opt;
    o.label = fmt::format("[{}/{}] {}", i + 1, ops.size(), ops[i].key.text());
    rows.push_back(tune_op(device, cache, ops[i], o));
    if (rows.back().cached) continue;
    try {
      cache.save();
    } catch (const std::exception& e) {
      if (!warned) std::fprintf(stderr, "spire: warning: %s (this run uses the results anyway)\n", e.what());
      warned = true;
    }
  }
  return rows;
}

std::vector<TunedOp> tune_graph(const graph::Graph& g, rt::Device& device, TuningCache& cache, const TuneOptions& opt,
                                Precision precision) {
  return tune_ops(lowering::tunable_ops(g, device.info(), precision), device, cache, opt);
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
