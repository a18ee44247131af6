// One step of a graph on a device checked against the float64 evaluator, for the lowering tests that compare every
// output of a small graph (the fusions' on-device tests): compile, set the inputs, step, and compare each output
// element within tolerance * (1 + |reference|).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "tests/support/random_tensor.h"

namespace spire::lowering::testing_support {

// Uniform f32 values for every input and parameter of `g`, seeds counting up from `seed` (which the caller's next
// graph continues from).
inline std::map<std::string, graph::Tensor> uniform_inputs(const graph::Graph& g, uint32_t& seed) {
  std::map<std::string, graph::Tensor> in;
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter)
      in[n.name] = spire::testing_support::uniform_tensor(n.type.shape, seed++, graph::DType::F32);
  }
  return in;
}

inline void expect_step_matches_float64(rt::Device& device, const graph::Graph& g,
                                        const std::map<std::string, graph::Tensor>& inputs, double tolerance) {
  auto exe = lowering::compile(g, device);
  for (const auto& [name, t] : inputs) exe->set(name, t);
  exe->step();
  const auto want = graph::evaluate(g, inputs, graph::DType::F64);
  for (const auto& o : g.outputs()) {
    const graph::Tensor got = exe->get(o.name);
    ASSERT_EQ(got.numel(), want.at(o.name).numel()) << o.name;
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got[i], want.at(o.name)[i], tolerance * (1 + std::abs(want.at(o.name)[i]))) << o.name << " " << i;
  }
}

}  // namespace spire::lowering::testing_support
