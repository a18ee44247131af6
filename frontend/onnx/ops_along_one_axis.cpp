// The graph's ops of one tensor along one integer axis (ir/graph/ops_along_one_axis.h), mapped by rule under ONNX's
// spelling of their names (log_softmax: LogSoftmax). The rule is ONNX's own for these ops: from opset 13 the op runs
// along `axis` (default -1); before, the input is seen as 2-D, [prod(dims < axis), prod(dims >= axis)] with `axis`
// defaulting to 1, and the op runs along the second dim. A family file that maps an op itself keeps its handler.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "frontend/onnx/node_context.h"
#include "ir/graph/ops_along_one_axis.h"

namespace spire::onnx_import {
namespace {

std::string onnx_spelling(std::string_view op) {
  std::string name;
  bool word_start = true;
  for (char ch : op) {
    if (ch == '_') {
      word_start = true;
      continue;
    }
    name += word_start ? char(std::toupper(static_cast<unsigned char>(ch))) : ch;
    word_start = false;
  }
  return name;
}

void along_one_axis(NodeContext& c, std::string_view op) {
  auto& g = c.g();
  const Value x = c.float_value(0);
  const graph::Shape shape = c.type(0).shape;
  const int64_t rank = int64_t(shape.size());
  if (c.opset() >= 13) {
    const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), std::max<int64_t>(rank, 1));
    c.set_output(0, g.op(op, {x}, {{"axis", axis}}));
    return;
  }
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 1), std::max<int64_t>(rank, 1));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= shape[size_t(d)];
  const Value y = g.op(op, {g.reshape(x, {outer, inner})}, {{"axis", int64_t(1)}});
  c.set_output(0, g.reshape(y, shape));
}

}  // namespace

void register_ops_along_one_axis(OpTable& t) {
  for (std::string_view op : graph::ops_along_one_axis())
    t.try_emplace(onnx_spelling(op), OpHandlers{[op](NodeContext& c) { along_one_axis(c, op); }, {}});
}

}  // namespace spire::onnx_import
