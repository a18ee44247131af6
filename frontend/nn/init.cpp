#include "frontend/nn/init.h"

namespace spire::nn {

NamedTensors init_parameters(const std::vector<ParameterSpec>& specs, graph::DType dtype, uint64_t seed) {
  Generator gen(seed);
  NamedTensors out;
  out.reserve(specs.size());
  for (const ParameterSpec& p : specs) {
    graph::Tensor t(dtype, p.shape);
    for (double& v : t.data) v = graph::round_to(dtype, gen.uniform(-p.init_bound, p.init_bound));
    out.emplace_back(p.name, std::move(t));
  }
  return out;
}

}  // namespace spire::nn
