// Op expressions: how an op file (op_file.h) writes a custom op's reference and gradients without C++.
//
//   maximum(x, 0)
//   where(compare(x, 0, mode=gt), grad, 0)
//   x * sigmoid(x) + 1
//   sum(x, axes=[1], keepdim=true)
//
// An expression is built of names (the op's inputs, and in gradients `y`, the op's result, and `grad`, the
// gradient of the result), numbers, calls of any op in the op table (built-in or custom) by its text-form
// name with its attributes as `name=value` after the inputs, and + - * / with the usual precedence (and
// unary minus). A number becomes a scalar constant of the dtype of the call's first operand that is neither a
// number nor bool (where's condition).
// Building an expression appends ordinary nodes to a graph, so the same text serves as float64 reference
// (evaluated on a small graph), shape rule (its result's type) and VJP (appended to the training graph).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ir/graph/graph.h"

namespace spire::ext {

// A syntax error or a name the expression cannot resolve, with the column (1-based) where it is.
class ExpressionError : public graph::GraphError {
 public:
  using graph::GraphError::GraphError;
};

struct ExprNode;

class OpExpression {
 public:
  // Parses `text`; throws ExpressionError "column 7: expected ')'" for malformed text.
  static OpExpression parse(std::string_view text);
  // Appends the expression to g with `names` bound to values; throws ExpressionError for an unknown name and
  // GraphError (the builder's message) for operands an op does not take.
  graph::Value build(graph::Graph& g, const std::map<std::string, graph::Value>& names) const;
  // The names the expression reads (for checking them against the op's inputs).
  std::vector<std::string> names() const;
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const ExprNode> root_;
  std::string text_;
};

}  // namespace spire::ext
