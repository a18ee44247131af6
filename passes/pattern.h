// Patterns: a small tree of matchers that recognises a subgraph rooted at one value.
//
//   using namespace spire::passes;
//   // relu(add(a, b)) where the add feeds nothing else (so replacing the pair computes nothing twice):
//   Pattern p = op("relu", {op("add", {any("a"), any("b")}).uses(1)});
//   // x * sigmoid(x), the SAME x twice, in either operand order:
//   Pattern q = op("mul", {any("x"), op("sigmoid", {same("x")})}).commutative();
//
// Matchers:
//   op(NAME, {inputs})  a node of that op (any op of the table, user ops included) whose inputs match, in order
//   any("name")         any value (leaves too); captured under "name" when given
//   same("name")        exactly the value an earlier matcher captured as "name"
//   constant(v)         a constant leaf filled with v (any dtype and shape)
// Constraints, chained on any matcher except same():
//   .as("name")         captures the matched value (op and constant matchers; any() takes its name directly)
//   .attr(NAME, value)  the node's attribute NAME equals value (an int matches a float attribute of equal value)
//   .where(pred)        pred(node) is true: any other condition on attributes, dtype or shape
//   .uses(n)            the value has exactly n uses; .max_uses(n): at most n
//   .commutative()      a two-input op also matches with its inputs swapped (add, mul, maximum, minimum)
// Uses are counted in the graph being matched: one per input slot that reads the value, one per output that
// names it, one per state update whose new value it is. "Exactly one use" on an inner matcher means the
// matched subgraph is the only reader, so a rewrite makes that value dead instead of computing it twice.
//
// Matching explores every alternative (commutative orders at every level), so a same() later in the pattern
// can still reject an earlier choice and another be tried. Names resolve when the pattern is made: an op
// registered at run time must be registered before the patterns that name it.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::passes {

// Capture name -> value of the matched graph.
using Captures = std::map<std::string, graph::Value, std::less<>>;

class Pattern;

// Throw GraphError for an unknown op name, a wrong number of inputs, or an empty same() name.
Pattern op(std::string_view op_name, std::vector<Pattern> inputs = {});
Pattern any(std::string capture = {});
Pattern same(std::string capture);
Pattern constant(double value);

class Pattern {
 public:
  enum class Kind : uint8_t { Op, Any, Same, Constant };

  // Constraints return a copy with the constraint added, so they chain on temporaries and on named patterns.
  Pattern as(std::string capture) const;
  Pattern attr(std::string name, graph::AttrValue value) const;
  Pattern where(std::function<bool(const graph::Node&)> predicate) const;
  Pattern uses(int n) const;
  Pattern max_uses(int n) const;
  Pattern commutative() const;

  Kind kind() const { return kind_; }
  graph::OpKind op() const { return op_; }                  // Kind::Op
  const std::vector<Pattern>& inputs() const { return inputs_; }
  const std::string& capture() const { return capture_; }  // Kind::Same: the capture it refers to
  bool is_commutative() const { return commutative_; }
  bool has_constraints() const {
    return !attrs_.empty() || !predicates_.empty() || min_uses_ != 0 ||
           max_uses_ != std::numeric_limits<int>::max() || commutative_;
  }
  // "relu(add(any a, any b){uses=1})": for messages and tests.
  std::string to_string() const;

 private:
  friend Pattern op(std::string_view, std::vector<Pattern>);
  friend Pattern any(std::string);
  friend Pattern same(std::string);
  friend Pattern constant(double);
  friend class Matcher;

  Kind kind_ = Kind::Any;
  graph::OpKind op_ = graph::OpKind::Input;
  std::vector<Pattern> inputs_;
  std::string capture_;
  double constant_ = 0;
  std::vector<std::pair<std::string, graph::AttrValue>> attrs_;
  std::vector<std::function<bool(const graph::Node&)>> predicates_;
  int min_uses_ = 0;
  int max_uses_ = std::numeric_limits<int>::max();
  bool commutative_ = false;
};

// Checks a whole pattern before use: every same() refers to a capture made earlier in the pattern (depth
// first, inputs in order), no capture name is made twice, commutative() only on two-input ops, and no
// constraint on same(). Throws GraphError naming the pattern and the problem.
void check_pattern(const Pattern& p);

// Use counts of every value of `g` (index = value id), as patterns count them.
std::vector<int> use_counts(const graph::Graph& g);

// The captures of the first way `p` matches the subgraph rooted at `root` (in pattern order, commutative
// operands as written before swapped), or nullopt. `uses` is use_counts(g). Checks `p` first (check_pattern).
std::optional<Captures> match(const Pattern& p, const graph::Graph& g, graph::Value root, const std::vector<int>& uses);
std::optional<Captures> match(const Pattern& p, const graph::Graph& g, graph::Value root);

}  // namespace spire::passes
