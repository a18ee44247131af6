// The tuner's core: time every candidate config of one kernel program on a device and keep the fastest.
//
// It knows nothing of graphs or of the cache: a candidate is a heavy::Config, and `build` turns it into what
// would be launched (lowering::KernelProgram: buffers by type and size, kernels, workgroup counts). That is
// what the heavy templates hand it through their TunableOps (tune_graph.h), and what a custom op's kernel
// factory can hand it directly (docs/TUNING.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/tuning_config.h"
#include "lowering/tunable.h"
#include "runtime/device.h"
#include "tuning/warm_up.h"

namespace spire::tuning {

struct TuneOptions {
  int warmup = 2;  // untimed runs of each candidate first (first-dispatch work, caches, clocks)
  // ... and on a GPU (not a CPU device) for at least this long, wall time, so that its clocks have risen from idle
  // (warm_up.h); the first candidate of each tune() for longer, since the compiles and host work before it can leave
  // the GPU idle for seconds.
  double warmup_ms = 50;
  double first_warmup_ms = kGpuWarmupMs;
  int runs = 7;    // timed runs; a candidate's time is their median
  // A candidate whose first timed run is this many times slower than the best median so far is not run
  // again: its one time is kept (it cannot be the fastest unless that run was a very unlucky one).
  double give_up_factor = 4.0;
  // tune_op keeps the heuristic unless a candidate's median beats it by at least this fraction: a gain
  // within the timing noise is no reason to leave the config every untuned run uses.
  double min_gain = 0.02;
  std::FILE* progress = stderr;  // where the progress line goes while tuning; nullptr: nowhere
  std::string label;             // what the progress line calls the op ("[3/12] conv2d n64_c1_... f32")
  uint64_t seed = 1;             // of the random inputs
};

struct CandidateTime {
  lowering::heavy::Config config;
  double ms = 0;      // median device time of one run of the program; infinity when it could not run
  std::string error;  // why it could not run (build refused the config, the device refused a kernel)
  int runs = 0;       // timed runs behind `ms` (1 for a candidate given up after its first)
};

struct TuneResult {
  lowering::heavy::Config best;
  double best_ms = 0;
  std::vector<CandidateTime> times;  // every candidate, in the given order
};

// Builds and compiles every candidate's program first (no compile leaves the GPU idle between two timings), then runs
// each on `device` over the same buffers (floats uniform in
// [-1, 1], integers 0; scratch as the program declares), each `opt.warmup` times untimed and then `opt.runs`
// times between two device timestamps, and returns the one with the least median (the first of equals).
// A candidate that cannot run is recorded with its error and skipped; throws rt::Error naming the label when
// none runs, and std::invalid_argument for an empty candidate list.
TuneResult tune(rt::Device& device, const std::vector<lowering::heavy::Config>& candidates,
                const std::function<lowering::KernelProgram(const lowering::heavy::Config&)>& build,
                const TuneOptions& opt = {});

// The same for a kernel factory that makes one kernel (and its workgroup count) per config, launched over
// `buffers` in order: the shape of most custom ops.
TuneResult tune(rt::Device& device, const std::vector<lowering::heavy::Config>& candidates,
                const std::function<lowering::heavy::HeavyKernel(const lowering::heavy::Config&)>& kernel,
                const std::vector<lowering::ProgramBuffer>& buffers, const TuneOptions& opt = {});

// How many candidates this process has timed (each tune() adds one per candidate it runs): how tests see
// that a cached choice is used without any timing.
uint64_t timed_candidates();

}  // namespace spire::tuning
