// What every command that compiles for a device does about tuning (spire run, spire graph eval --device,
// spire lenet bench, spire train lenet): read the cache, tune first when asked, hand lowering the choices.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::tuning {

struct TuningFlags {
  bool tune = false;       // --tune: time the tunable nodes the cache has no result for, before compiling
  std::string cache_file;  // --tuning-cache FILE; "": TuningCache::default_path()
  Precision precision = Precision::Fp32;  // the policy the graphs will be compiled under (--precision)
};

// Reads the cache (a missing file: no entries; a corrupt one: a warning, no entries). With flags.tune, first
// tunes every tunable node of `graphs` that the cache has no entry for on `device` (a progress line on
// stderr), saves the cache and prints the tuning table to `log`. Returns the cache's choices for `device`:
// what CompileOptions::tuning takes (no entries: every template's heuristic, as without a cache).
lowering::MapTuningChoices prepare_tuning(const TuningFlags& flags, rt::Device& device,
                                          const std::vector<const graph::Graph*>& graphs, std::FILE* log);

}  // namespace spire::tuning
