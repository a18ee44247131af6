// PyTorch's default parameter initialisation, from a seeded generator of our own.
//
// The distributions are PyTorch's (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for Conv2d and Linear weights and
// biases); the random stream is not torch.manual_seed's, so values differ from PyTorch's for the same seed.
// They are the same on every platform for a given seed: std::mt19937_64 is fully specified by the C++
// standard and the conversion to [0, 1) below is ours, not the library's.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "frontend/nn/module.h"

namespace spire::nn {

class Generator {
 public:
  explicit Generator(uint64_t seed) : engine_(seed) {}
  // Uniform on [lo, hi): the top 53 bits of one 64-bit draw.
  double uniform(double lo, double hi) {
    const double u = double(engine_() >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
  }

 private:
  std::mt19937_64 engine_;
};

// One tensor per spec, in order, each element ~ U(-bound, bound) rounded to `dtype`. Drawing in spec order
// from one generator makes the values depend on the seed and on the list of parameters only.
NamedTensors init_parameters(const std::vector<ParameterSpec>& specs, graph::DType dtype, uint64_t seed);

}  // namespace spire::nn
