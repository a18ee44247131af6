// The op table: one entry per OpKind with everything the rest of the compiler needs to know about an op.
// Adding an op = one OpKind value in graph.h, one entry in op_table.cpp (name, arity, attributes, shape
// rule, VJP rule), its evaluator kernel, and tests.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::graph {

// An attribute an op takes: its name and kind. Every node of the op carries all of them, in this order.
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
};

// What a shape rule sees: the op, the node name (for messages; may be empty while building), input types
// and attributes. A rule returns the result type or throws GraphError through fail().
struct ShapeContext {
  OpKind op;
  std::string_view node_name;
  std::span<const TensorType> inputs;
  const Attrs& attrs;

  // Throws GraphError "<op> '<node>': <message>".
  [[noreturn]] void fail(const std::string& message) const;
  // "input 0 (f32[8,6,28,28])": names an input and its type for messages.
  std::string describe_input(size_t i) const;
};

using ShapeRule = TensorType (*)(const ShapeContext&);

// A VJP rule: given the node (whose result is `out`) and the gradient of the loss with respect to its
// result, appends ops to `g` and returns one gradient per input, each of that input's type, or an invalid
// Value for an input that gets no gradient (integer labels, where's condition, compare's inputs).
using VjpRule = std::vector<Value> (*)(Graph& g, Value out, Value grad_out);

struct OpInfo {
  OpKind kind;
  std::string_view name;        // the text form's name
  int arity;                    // number of inputs
  std::vector<AttrSpec> attrs;  // in printing order
  ShapeRule shape;              // nullptr for leaves (their type is declared)
  VjpRule vjp;                  // nullptr: not differentiable (its inputs receive no gradient)
};

// The entry for an op. The table is indexed by OpKind; op_info(k).kind == k for every k.
const OpInfo& op_info(OpKind op);
std::span<const OpInfo> op_table();

// The shape rules and VJP rules the table points at (shape_rules.cpp, vjp_rules.cpp).
namespace shape_rules {
TensorType binary(const ShapeContext&);       // add sub mul div pow maximum minimum
TensorType compare(const ShapeContext&);
TensorType unary_float(const ShapeContext&);  // neg exp log ...
TensorType where(const ShapeContext&);
TensorType reduce(const ShapeContext&);
TensorType reshape(const ShapeContext&);
TensorType flatten(const ShapeContext&);
TensorType permute(const ShapeContext&);
TensorType broadcast_to(const ShapeContext&);
TensorType sum_to(const ShapeContext&);
TensorType matmul(const ShapeContext&);
TensorType conv2d(const ShapeContext&);
TensorType pool2d(const ShapeContext&);
TensorType softmax(const ShapeContext&);
TensorType cross_entropy(const ShapeContext&);
TensorType grad_like_second(const ShapeContext&);   // relu_grad silu_grad gelu_grad max_pool2d_grad
TensorType conv2d_grad_input(const ShapeContext&);
TensorType conv2d_grad_weight(const ShapeContext&);
TensorType avg_pool2d_grad(const ShapeContext&);
TensorType cross_entropy_grad(const ShapeContext&);
}  // namespace shape_rules

namespace vjp_rules {
std::vector<Value> add(Graph&, Value, Value);
std::vector<Value> sub(Graph&, Value, Value);
std::vector<Value> mul(Graph&, Value, Value);
std::vector<Value> div(Graph&, Value, Value);
std::vector<Value> pow(Graph&, Value, Value);
std::vector<Value> maximum(Graph&, Value, Value);
std::vector<Value> minimum(Graph&, Value, Value);
std::vector<Value> neg(Graph&, Value, Value);
std::vector<Value> exp(Graph&, Value, Value);
std::vector<Value> log(Graph&, Value, Value);
std::vector<Value> sqrt(Graph&, Value, Value);
std::vector<Value> tanh(Graph&, Value, Value);
std::vector<Value> sigmoid(Graph&, Value, Value);
std::vector<Value> relu(Graph&, Value, Value);
std::vector<Value> silu(Graph&, Value, Value);
std::vector<Value> gelu(Graph&, Value, Value);
std::vector<Value> where(Graph&, Value, Value);
std::vector<Value> sum(Graph&, Value, Value);
std::vector<Value> mean(Graph&, Value, Value);
std::vector<Value> max(Graph&, Value, Value);
std::vector<Value> reshape(Graph&, Value, Value);   // reshape and flatten
std::vector<Value> permute(Graph&, Value, Value);
std::vector<Value> broadcast_to(Graph&, Value, Value);
std::vector<Value> sum_to(Graph&, Value, Value);
std::vector<Value> matmul(Graph&, Value, Value);
std::vector<Value> conv2d(Graph&, Value, Value);
std::vector<Value> max_pool2d(Graph&, Value, Value);
std::vector<Value> avg_pool2d(Graph&, Value, Value);
std::vector<Value> softmax(Graph&, Value, Value);
std::vector<Value> log_softmax(Graph&, Value, Value);
std::vector<Value> cross_entropy(Graph&, Value, Value);
}  // namespace vjp_rules

}  // namespace spire::graph
