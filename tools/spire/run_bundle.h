// `spire run MODEL.spire`: a bundle run through bundle::Session, the same code libspire_runtime runs, so a
// bundle can be checked against `spire run MODEL.onnx` from the command line.
#pragma once

#include <string>

namespace spire::cli {

// The batch is the first dimension of the batched inputs given. `bench` > 0 replays the run that many times and
// prints the median and minimum device time, and the median wall time of a run fed and read through host memory.
// `profile_startup` prints where the time from process start to the first result went (runtime/startup_profile.h).
void run_bundle(const std::string& bundle_path, const std::string& inputs, const std::string& outputs,
                const std::string& device, int bench, bool profile_startup = false);

}  // namespace spire::cli
