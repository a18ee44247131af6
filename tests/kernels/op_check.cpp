#include "tests/kernels/op_check.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "tests/kernels/device_run.h"

namespace spire::heavy_test {

void check_against_reference(const std::string& device_id, const graph::Graph& g,
                             const std::map<std::string, graph::Tensor>& inputs, Tolerance tol, Scale scale) {
  rt::Device& dev = device(device_id);
  for (const auto& n : g.nodes())
    if (n.type.dtype == graph::DType::F64 && !dev.info().features.has(kir::Feature::Float64))
      GTEST_SKIP() << device_id << " (" << dev.info().name << ") has no float64: the f64 case runs on devices that do";

  auto reference = graph::evaluate(g, inputs, graph::DType::F64);
  std::map<std::string, graph::Tensor> scales;
  if (scale == Scale::AbsoluteInputs) scales = graph::evaluate(g, abs_of(inputs), graph::DType::F64);

  uint64_t messages_before = validation_messages();
  auto got = run_on_device(dev, g, inputs);
  for (const auto& o : g.outputs()) {
    const graph::Tensor* s = scale == Scale::AbsoluteInputs ? &scales.at(o.name) : nullptr;
    std::string problem = compare(got.at(o.name), reference.at(o.name), tol, s);
    EXPECT_EQ(problem, "") << "output '" << o.name << "' on " << device_id;
  }
  EXPECT_EQ(validation_messages(), messages_before) << "the Vulkan validation layer reported messages";
}

}  // namespace spire::heavy_test
