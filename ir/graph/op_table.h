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

// What a VJP rule sees: the graph to append to, the node's result `out` (its node: g.node(out)), the
// gradient of the loss with respect to `out` (same type), and which inputs need a gradient at all.
struct VjpContext {
  Graph& g;
  Value out;
  Value grad_out;
  std::vector<bool> wanted;  // one per input
  bool wants(size_t i) const { return i < wanted.size() && wanted[i]; }
};

// A VJP rule appends ops to ctx.g and returns one gradient per input, each of that input's exact type, or
// an invalid Value for an input that gets no gradient (not wanted, integer labels, where's condition).
using VjpRule = std::vector<Value> (*)(VjpContext& ctx);

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
TensorType cast(const ShapeContext&);
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
TensorType activation_grad(const ShapeContext&);    // relu_grad silu_grad gelu_grad
TensorType max_pool2d_grad(const ShapeContext&);
TensorType conv2d_grad_input(const ShapeContext&);
TensorType conv2d_grad_weight(const ShapeContext&);
TensorType avg_pool2d_grad(const ShapeContext&);
TensorType cross_entropy_grad(const ShapeContext&);
}  // namespace shape_rules

namespace vjp_rules {
std::vector<Value> add(VjpContext&);
std::vector<Value> sub(VjpContext&);
std::vector<Value> mul(VjpContext&);
std::vector<Value> div(VjpContext&);
std::vector<Value> pow(VjpContext&);
std::vector<Value> maximum(VjpContext&);
std::vector<Value> minimum(VjpContext&);
std::vector<Value> neg(VjpContext&);
std::vector<Value> exp(VjpContext&);
std::vector<Value> log(VjpContext&);
std::vector<Value> sqrt(VjpContext&);
std::vector<Value> tanh(VjpContext&);
std::vector<Value> sigmoid(VjpContext&);
std::vector<Value> relu(VjpContext&);
std::vector<Value> silu(VjpContext&);
std::vector<Value> gelu(VjpContext&);
std::vector<Value> where(VjpContext&);
std::vector<Value> sum(VjpContext&);
std::vector<Value> mean(VjpContext&);
std::vector<Value> max(VjpContext&);
std::vector<Value> reshape(VjpContext&);   // reshape and flatten
std::vector<Value> permute(VjpContext&);
std::vector<Value> broadcast_to(VjpContext&);
std::vector<Value> sum_to(VjpContext&);
std::vector<Value> cast(VjpContext&);
std::vector<Value> matmul(VjpContext&);
std::vector<Value> conv2d(VjpContext&);
std::vector<Value> max_pool2d(VjpContext&);
std::vector<Value> avg_pool2d(VjpContext&);
std::vector<Value> softmax(VjpContext&);
std::vector<Value> log_softmax(VjpContext&);
std::vector<Value> cross_entropy(VjpContext&);
}  // namespace vjp_rules

}  // namespace spire::graph
