#include "diff/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::diff {

Verdict judge(const ValueError& e, graph::OpKind producer, graph::DType dtype, const ToleranceOverride& over,
              double inherited) {
  Verdict v;
  if (!over.given()) {
    v.bound = std::max(graph::op_tolerance(producer, false, dtype), inherited);
    v.measured = e.norm_error;
  } else {
    v.bound = over.atol.value_or(0) + over.rtol.value_or(0) * e.want_max;
    // A NaN or Inf where the reference has a number is never within an absolute bound: norm_error says so.
    v.measured = std::isinf(e.norm_error) ? std::numeric_limits<double>::infinity() : e.max_abs;
  }
  v.within = v.measured <= v.bound;
  return v;
}

std::string rule_text(const ToleranceOverride& over) {
  if (!over.given())
    return "op table: max |got-want| / max(1, max |want|) <= the largest forward tolerance of the op and of the ops "
           "before it";
  return fmt::format("max |got-want| <= atol {:g} + rtol {:g} * max |want|", over.atol.value_or(0), over.rtol.value_or(0));
}

}  // namespace spire::diff
