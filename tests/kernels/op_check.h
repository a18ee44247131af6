// The check every heavy-op test makes: run a small graph of heavy ops on a device through the real lower_*
// functions and compare every output with the float64 reference evaluator (graph::evaluate).
#pragma once

#include <map>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "tests/kernels/compare.h"

namespace spire::heavy_test {

enum class Scale {
  Reference,     // error relative to |reference|
  AbsoluteInputs // error relative to the graph evaluated on |inputs| (sum of |terms| of a dot product)
};

// Skips the test (GTEST_SKIP, with the reason) when the device lacks a feature the graph's dtypes need;
// otherwise runs, compares with `tol`, and fails on any validation-layer message.
void check_against_reference(const std::string& device_id, const graph::Graph& g,
                             const std::map<std::string, graph::Tensor>& inputs, Tolerance tol,
                             Scale scale = Scale::Reference);

}  // namespace spire::heavy_test
