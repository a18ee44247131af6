// `spire run MODEL.spire`: a bundle run through bundle::Session, the same code libspire_runtime runs, so a
// bundle can be checked against `spire run MODEL.onnx` from the command line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bundle/session.h"
#include "ir/graph/tensor.h"

namespace spire::cli {

// Sets the session's batch (from the batched inputs' first dimension) and its inputs from `given`, by the bundle's
// input names, each in the bundle's dtype and shape (std::invalid_argument naming `source` otherwise). Returns the
// bytes fed, in input order.
std::vector<std::vector<uint8_t>> feed_session(bundle::Session& s, const std::map<std::string, graph::Tensor>& given,
                                               const std::string& source);
// The outputs of the session's last run, by name.
std::map<std::string, graph::Tensor> session_outputs(bundle::Session& s);

// The batch is the first dimension of the batched inputs given. `bench` > 0 replays the run that many times and
// prints the median and minimum device time, and the median wall time of a run fed and read through host memory.
// `profile_startup` prints where the time from process start to the first result went (runtime/startup_profile.h).
void run_bundle(const std::string& bundle_path, const std::string& inputs, const std::string& outputs,
                const std::string& device, int bench, bool profile_startup = false);

}  // namespace spire::cli
