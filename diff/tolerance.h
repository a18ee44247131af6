// Whether a value agrees with what it is compared to. By default the op table's own rule, the one the op harness
// applies to each op on random inputs (ir/graph/op_table.h's Tolerance): the max-norm relative error
// (ValueError::norm_error) at most the op's forward tolerance for the value's dtype, so `spire diff` and
// `spire test-ops` call the same results good. The harness feeds each op exact inputs; in a model a value also
// carries the rounding of everything before it, so a value is held to the largest tolerance of its op and of the
// values it is computed from (`inherited`): a reshape (tolerance 0) of a convolution's result (1e-5) may be off by
// what the convolution may. --atol / --rtol replace the rule with max |got - want| <= atol + rtol * max |want| (an
// omitted one is 0), the same bound for every value.
#pragma once

#include <optional>
#include <string>

#include "diff/value_error.h"
#include "ir/graph/graph.h"

namespace spire::diff {

struct ToleranceOverride {
  // ({}: designated initializers may leave one out without a -Wmissing-field-initializers warning)
  std::optional<double> atol{}, rtol{};
  bool given() const { return atol || rtol; }
};

struct Verdict {
  bool within = true;
  double bound = 0;      // what the measured error was held to (norm_error's bound, or atol + rtol * want_max)
  double measured = 0;   // norm_error, or max_abs under an override (infinite where a NaN or Inf appeared)
};

// `inherited`: the largest bound among the value's non-leaf inputs (0 for none, and for judging a node alone).
Verdict judge(const ValueError& e, graph::OpKind producer, graph::DType dtype, const ToleranceOverride& over,
              double inherited = 0);

// "op table" or "atol 1e-05, rtol 0": the rule in words, for the report.
std::string rule_text(const ToleranceOverride& over);

}  // namespace spire::diff
