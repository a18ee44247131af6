// The progress bar the CLI shows while the ONNX importer reads a model's weights (onnx_import::ImportOptions::progress),
// for models large enough to make a user wait: a tiny model's import prints nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace spire::cli {

// A progress callback drawing a bar on stderr labelled `label`, in megabytes, from 64 MiB of weights on.
std::function<void(uint64_t done, uint64_t total)> weights_progress(std::string label);

}  // namespace spire::cli
