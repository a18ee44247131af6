// --save DIR and --against DIR: every value of every device and of the reference written as safetensors files with a
// small manifest, so that a run on one machine (an AMD GPU's driver) can be compared with another machine's devices
// (an Intel GPU's) later.
//
// DIR/manifest.json: {"spire_version", "model", "model_hash", "inputs", "inputs_hash",
//                     "devices": [{"id", "name", "driver", "file", "unfused_file"}]}; the reference is the device
//                     "reference".
// DIR/<id with ':' as '_'>.safetensors: the device's values by node name, and where its plan computed each.
// DIR/<id with ':' as '_'>.unfused.safetensors: every value of the device's unfused run (Capture::unfused_run).
// The hashes are FNV-1a 64 of the files' bytes (the model file, then its weights file for a .graph model; the
// inputs file): a saved run is compared only with the same model on the same inputs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "diff/capture.h"

namespace spire::diff {

struct RunIdentity {
  std::string model, model_hash;    // the model's path as given, and the hash of its files
  std::string inputs, inputs_hash;  // the same for the inputs file
};

// 16 hex digits: FNV-1a 64 over the bytes of each file in order. A file that does not exist is skipped.
std::string files_hash(const std::vector<std::filesystem::path>& files);

// Writes the reference and every device's values, then the manifest (last, and any old one removed first, so that
// a directory with a manifest always holds a whole run).
void save_run(const std::filesystem::path& dir, const RunIdentity& id, const Capture& reference,
              const std::vector<Capture>& devices);

struct SavedRun {
  RunIdentity identity;
  std::string spire_version;
  Capture reference;              // named "saved:reference"
  std::vector<Capture> devices;  // named "saved:<id>"
};

// Reads a saved run; throws std::runtime_error naming the file for a missing or malformed directory, and naming the
// hash that differs (with both values) when `expected`'s model or inputs are not the saved run's.
SavedRun load_run(const std::filesystem::path& dir, const RunIdentity& expected);

// spire's version as the manifest records it ("1.0.0": the C API's, include/spire/spire.h).
std::string spire_version();

}  // namespace spire::diff
