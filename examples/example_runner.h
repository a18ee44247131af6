// Runs the built-in example kernels on a device and checks them against a CPU computation.
// Shared by `spire examples`, the main job, and tests/examples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace spire::examples {

struct ExampleResult {
  std::string example;
  uint64_t n = 0;
  uint64_t unwritten = 0;     // outputs still holding the poison pattern after the run
  double max_rel_error = 0;   // max |got - want| / max(|want|, 1) (sum: relative to sum |x|)
  double tolerance = 0;
  double device_ms = 0;       // device time of the dispatches, from the device's timestamps
  bool passed = false;
};

struct Example {
  std::string name;
  std::string description;
  ExampleResult (*run)(rt::Device& dev, uint64_t n, uint64_t seed);
};

const std::vector<Example>& examples();

// The pattern outputs are filled with before each run: a quiet NaN no kernel computes from finite inputs.
inline constexpr uint32_t kPoison = 0x7fc0dead;

}  // namespace spire::examples
