// Tuning with the cache: one tunable op (a heavy template's node, or a custom op's own TunableOp), or every
// tunable node of a graph, each timed only when the cache has no result for this device yet.
#pragma once

#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "lowering/tunable.h"
#include "runtime/device.h"
#include "tuning/tuner.h"
#include "tuning/tuning_cache.h"

namespace spire::tuning {

struct TunedOp {
  lowering::TuningKey key;
  lowering::heavy::Config heuristic, best;
  double heuristic_ms = 0, best_ms = 0;  // medians from the run that tuned it (maybe an earlier process)
  size_t candidates = 0;                 // how many were timed (0: taken from the cache)
  bool cached = false;                   // the cache had it: nothing was timed
};

// op's config for `device`: the cache's when it has one for this device and key (no timing), else the
// fastest of op.candidates (tuner.h; the heuristic unless another is opt.min_gain faster), which is put into
// the cache (not saved: the caller saves once).
TunedOp tune_op(rt::Device& device, TuningCache& cache, const lowering::TunableOp& op, const TuneOptions& opt = {});

// Each of `ops` through tune_op, in order, the cache saved after each one timed: a run cut short (an op no candidate of
// which runs, a kill; a whole model's convolutions take minutes) keeps what it has timed, and the next run resumes
// there. A failure to write the cache is one warning on stderr: this run still uses the results.
std::vector<TunedOp> tune_ops(const std::vector<lowering::TunableOp>& ops, rt::Device& device, TuningCache& cache,
                              const TuneOptions& opt = {});

// Every tunable node of `g` (lowering::tunable_ops) through tune_ops. Returns one row per distinct key, in schedule
// order. `precision`: the policy the graph will be compiled under (its TF32 products have keys and candidates of their
// own).
std::vector<TunedOp> tune_graph(const graph::Graph& g, rt::Device& device, TuningCache& cache, const TuneOptions& opt = {},
                                Precision precision = Precision::Fp32);

// The table printed after tuning: key, heuristic time, best time, speed-up and best config per row.
std::string tuning_table(const std::vector<TunedOp>& rows);

}  // namespace spire::tuning
