// The cross-backend op harness: every op of the graph IR, forward and backward, on a device through
// compile(), against the float64 reference evaluator.
//
// A case builds a tiny graph: inputs -> op -> y, and for a float y also loss = sum(y * w) with w a fixed
// random tensor; autograd::grad(loss) appends the backward ops. The compiled step's outputs (y and each
// float input's gradient) are compared with graph::evaluate(..., F64) under the op's tolerance
// (its op table entry, op_table.h). Inputs are random with fixed seeds; every device buffer starts as NaN (the executor
// poisons at allocation), so an element no kernel wrote fails.
//
// Used by tests/lowering (one GoogleTest per case and device) and by `spire test-ops`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "op_harness/op_case.h"
#include "runtime/device.h"

namespace spire::harness {

enum class Outcome : uint8_t { Pass, Fail, Skip };
std::string_view outcome_name(Outcome o);  // "pass", "FAIL", "skip"

// One compared result: the op's output ("forward") or one input's gradient ("grad in1").
struct OpRow {
  std::string op;
  std::string label;
  std::string device;
  std::string check;
  double max_error = 0;   // max-norm relative error (op_table.h's Tolerance); inf for NaN/poison
  double tolerance = 0;
  Outcome outcome = Outcome::Fail;
  std::string note;       // why it failed or was skipped
};

// Every case: each op of the graph IR over several shapes (1, 7, 33, 257, broadcasting, non-square),
// f32 throughout, f64 for a selection, and f16/bf16. Pointwise ops with a test domain in their op table entry
// get their cases generated (cases_generated.cpp); the others are listed by family (cases_*.cpp), those of the
// ops lowering's table holds through their entries there (lowering/op_lowering.h).
const std::vector<OpCase>& op_cases();

// The cases of the custom ops registered so far (their authors' shapes and ranges; cases_custom.cpp). Not in
// op_cases(): custom ops arrive at run time.
std::vector<OpCase> custom_op_cases();

// Runs one case on `dev` (inputs drawn with `seed`); one row per compared output, or a single row when
// the case could not run (its note says why: a lowering error fails, a device without float64 skips).
// Under `precision` other than fp32 (the case compiled with that policy, base/precision.h), matmul and conv2d
// results and gradients are held to precision_dot_bound(precision, K) by dot_product_error (K: the largest input's
// element count, at least any sum's length; under bf16 and f16 only the cases whose inputs are f32, which the policy
// stores in half); the other ops to their op tolerance under tf32, which leaves them alone, and skipped under bf16 and
// f16, which round their f32 inputs (a row saying so).
std::vector<OpRow> run_op_case(const OpCase& c, rt::Device& dev, uint64_t seed = 1,
                               Precision precision = Precision::Fp32);

// The error of a dot-product result: max |got - want| / sum_k |a_k| |b_k| over its elements (`magnitude` holds the
// sums, the reference evaluated on the inputs' absolute values); infinite for NaN or poison as max_norm_error.
double dot_product_error(const graph::Tensor& got, const graph::Tensor& want, const graph::Tensor& magnitude);

// The error measure of op_table.h's Tolerance: max |got - want| / max(1, max |want|); infinite for a NaN, infinity or
// poison value where the reference has a number. Shapes must match (the caller checks).
double max_norm_error(const graph::Tensor& got, const graph::Tensor& want);

// The table `spire test-ops` prints.
std::string format_row_header();
std::string format_row(const OpRow& r);

}  // namespace spire::harness
