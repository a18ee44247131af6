// Runs a graph of one heavy op (matmul, conv2d, a conv2d gradient) the way spire runs every graph: the tuning
// cache's choices (tuning/tuning_setup.h, as `spire run` reads them), lowering::compile and the executor's
// recorded step. So a benchmark row measures exactly what a user's model gets for that op, the config
// choice included, and not a hand-picked kernel.
#pragma once

#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "runtime/device.h"

namespace spire::bench {

struct GraphInput {
  std::string name;         // the graph's input node
  std::vector<float> data;  // exactly its element count, as f32 (rounded to the input's dtype: f32, f16, bf16)
};

struct TuningUse {
  std::string cache_file;  // "": the default cache file
  bool tune = false;       // tune what the cache lacks first (a table on stderr)
};

struct TimedGraph {
  std::string config;         // the tunable node's config text ("tile_m=128,...")
  bool tuned = false;         // the config came from the tuning cache (else the template's heuristic)
  std::vector<float> output;  // output "y" after the first step (f16 and bf16 widened to f32)
  double ms = 0;              // median device time of one step (its recorded stream's timestamps)
  // With `profile`: each launch of a steady step (launches that read only parameters run in the first step alone), its
  // median device time over the timed runs.
  std::vector<lowering::LaunchTime> launches;
};

// Compiles `g` (inputs named as in `inputs`, one output "y") on `dev`, runs one step and downloads y, then
// times `runs` more steps after untimed ones (tuning/warm_up.h: at least `warmup`, and for `warmup_ms` of wall
// time). The executor fills every buffer with a NaN pattern when it allocates it, so any element of y the kernels do
// not write reads back as NaN. `profile`: time each launch too (a timestamp after each, TimedGraph::launches).
TimedGraph time_graph(rt::Device& dev, const graph::Graph& g, const std::vector<GraphInput>& inputs,
                      const TuningUse& tuning, int runs, int warmup, double warmup_ms = 0, bool profile = false);

// n values uniform in [-1, 1) from a fixed seed: random (never zero) data, the same in every run.
std::vector<float> random_values(size_t n, uint32_t seed);

}  // namespace spire::bench
