// The graph IR: an SSA graph of tensor ops with static shapes and dtypes.
//
//   Graph g;
//   Value x = g.input("x", DType::F32, {8, 1, 28, 28});
//   Value w = g.parameter("convnet.0.weight", DType::F32, {6, 1, 5, 5});
//   Value b = g.parameter("convnet.0.bias", DType::F32, {6});
//   Value y = g.relu(g.add(g.conv2d(x, w, {.padding = {2, 2}}), g.reshape(b, {1, 6, 1, 1})));
//   g.output("y", y);
//
// Every node has exactly one result and a unique name (given by the user or generated as <op>_<n>).
// Nodes are kept in topological order: a node's inputs always come before it, because a Value can only be
// made by appending its node. Every builder call runs the op's shape rule at once and throws a GraphError
// naming the op, the offending input and the shapes when the inputs do not fit.
//
// Leaves: `input` (fed each step), `parameter` (persistent, loaded from a checkpoint), `state` (persistent,
// owned by the optimizer, e.g. momentum buffers, initialised to the fill value `init`), `constant` (a scalar
// fill value broadcast to the constant's type; the IR holds no literal tensors).
//
// For training, a graph also carries state updates: (parameter-or-state, new value) pairs that an executor
// writes back after every step, so one graph is one full training step.
//
// The op table (op_table.h) describes each op: name, arity, attributes, shape rule, VJP rule.
#pragma once

#include "base/dtype.h"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace spire::graph {

// ---------------------------------------------------------------------------------------------------------
// Errors

// Malformed graph: shape mismatch, unknown name, duplicate name, bad attribute. The message names the op,
// the input and the shapes involved.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------------------
// Types

// Element types. Bool is what `compare` yields and what `where` takes as its condition.
// F16 and BF16 are storage precisions: kernels compute them in f32 and round each op's result once
// (passes/compute_in_f32.h), as PyTorch's half kernels do.
// The tree's one element type (base/dtype.h; a graph never holds U32 values).
using spire::DType;
using spire::dtype_bytes;      // Bool: 1
using spire::dtype_from_name;
using spire::dtype_name;       // "bool", "i32", "i64", "f32", "f64", "f16", "bf16"
using spire::is_float;         // F16, BF16, F32, F64
using spire::is_half;          // F16, BF16
using spire::is_int;           // I32, U32, I64 (not Bool)

// Static shape; rank 0 ([]) is a scalar. Every dimension is >= 0.
using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& s);                  // 1 for a scalar
std::string shape_to_string(const Shape& s);          // "[8,6,28,28]", "[]" for a scalar

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t rank() const { return int64_t(shape.size()); }
  int64_t numel() const { return num_elements(shape); }
  std::string to_string() const;                        // "f32[8,6,28,28]"
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// numpy broadcasting of two shapes (dimensions aligned from the right; 1 stretches). nullopt if they clash.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// ---------------------------------------------------------------------------------------------------------
// Ops. Every op is one entry of the op table (op_table.h, entries in ir/graph/ops/). The ops that code outside
// their own family file must name (passes, fusion, autograd, the builder methods below) have an enumerator
// here; ops defined only by their entry (most pointwise ops, cross_entropy, the indexing ops, the ONNX-only
// ops, user ops) get OpKind values after these when the table is built: find them with
// op_from_name("abs"). An OpKind value is therefore any index of the table, not only an enumerator.

enum class OpKind : uint16_t {
  // Leaves (arity 0)
  Input,          // fed by the caller every step
  Parameter,      // persistent, trained
  State,          // persistent, optimizer-owned; attr init (float): initial fill value
  Constant,       // attr value (float): scalar broadcast to the result type (ints hold exact integers)

  // Elementwise binary, numpy broadcasting; both inputs have the same dtype (no implicit promotion).
  // add sub mul maximum minimum: f32 f64 i32 i64; div and pow: float only.
  Add, Sub, Mul, Div,
  Pow,            // a ** b
  Maximum, Minimum,
  Compare,        // attr mode (string: lt le gt ge eq ne); result dtype bool

  // Elementwise unary, float only (neg and relu also accept i32/i64)
  Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu,
  Silu,           // x * sigmoid(x)
  Gelu,           // tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

  Where,          // where(cond: bool, a, b), all three broadcast together; a and b same dtype
  Cast,           // attr to (string: a dtype name): converts elementwise (to int: truncation toward zero;
                  // to bool: x != 0; from bool: 0 or 1)

  // Reductions over `axes` (attr ints: sorted, non-negative, unique; empty = no axis, the identity) and
  // attr keepdim (bool: reduced dims stay as size 1). sum: not bool; mean: float only; max (PyTorch amax).
  Sum, Mean, Max,

  // Layout
  Reshape,        // attr shape (ints): same number of elements
  Flatten,        // attrs start_dim, end_dim (ints, non-negative after building): merges those dims
  Permute,        // attr perm (ints): result dim i is input dim perm[i]
  BroadcastTo,    // attr shape (ints): numpy broadcast of the input to `shape`
  SumTo,          // attr shape (ints): sums a broadcast result back to `shape` (inverse of broadcast_to)

  // Heavy ops
  Matmul,         // [.., M, K] x [.., K, N] -> [.., M, N]; both rank >= 2, batch dims broadcast
  Conv2d,         // (x [N,Cin,H,W], w [Cout,Cin/groups,kh,kw]); attrs stride, padding, dilation (2 ints), groups
  MaxPool2d,      // (x [N,C,H,W]); attrs kernel, stride, padding (2 ints each); floor mode
  AvgPool2d,      // same attrs; padding counts in the divisor (PyTorch count_include_pad=True)
  MaxPool2dArgmax,  // (x [N,C,H,W]); pool attrs -> i32 [N,C,Ho,Wo]: where each window's max_pool2d element lies, as
                    // its row-major position in the kh x kw window (padding counted), PyTorch's pick. Not
                    // differentiable: what passes/pool_grad_by_argmax.h makes of a max pooling's gradient reads.

  // Backward-only ops (what VJPs emit; ordinary ops in every other way)
  ReluGrad,         // (grad, y): grad where y > 0 else 0, y = relu(x) or x (PyTorch threshold_backward)
  SiluGrad,         // (grad, x): grad * d silu / dx
  GeluGrad,         // (grad, x): grad * d gelu_tanh / dx
  Conv2dGradInput,  // (grad_out, w); conv2d attrs + input_shape (4 ints)
  Conv2dGradWeight, // (grad_out, x); conv2d attrs + weight_shape (4 ints)
  MaxPool2dGrad,    // (grad_out, x); pool attrs. Each window's gradient goes to its FIRST maximal element in
                    // row-major window order (padding never wins), as PyTorch does.
  AvgPool2dGrad,    // (grad_out); pool attrs + input_shape (4 ints)
  MaxPool2dGradArgmax,  // (grad_out, argmax i32 from max_pool2d_argmax); pool attrs + input_shape (4 ints):
                        // max_pool2d_grad with each window's maximum already found
};

// Number of named ops (enumerators of OpKind); op_count() in op_table.h counts every op.
inline constexpr int kNumNamedOps = int(OpKind::MaxPool2dGradArgmax) + 1;

std::string_view op_name(OpKind op);                          // "conv2d", "max_pool2d_grad", ...
std::optional<OpKind> op_from_name(std::string_view name);
bool is_leaf(OpKind op);                                      // Input, Parameter, State, Constant

// Comparison modes of `compare` (stored as the string attr "mode").
enum class CompareMode : uint8_t { Lt, Le, Gt, Ge, Eq, Ne };
std::string_view compare_mode_name(CompareMode m);            // "lt", ...
std::optional<CompareMode> compare_mode_from_name(std::string_view name);

// ---------------------------------------------------------------------------------------------------------
// Attributes: a small ordered list of named values. A node holds exactly the attributes its op's table
// entry lists, in that order (the builder and the parser both fill them all).

using AttrValue = std::variant<int64_t, double, bool, std::vector<int64_t>, std::string>;
enum class AttrKind : uint8_t { Int, Float, Bool, Ints, String };  // same order as AttrValue's alternatives

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}

  void set(std::string name, AttrValue value);   // replaces an existing one, or appends
  bool has(std::string_view name) const;
  const AttrValue& get(std::string_view name) const;  // throws GraphError if missing

  // Typed getters; throw GraphError naming the attribute when missing or of another kind.
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  friend bool operator==(const Attrs&, const Attrs&) = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

// Options of conv2d and its gradients (each pair is (height, width)).
struct Conv2dOptions {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};

// Options of max_pool2d / avg_pool2d and their gradients. An empty stride means stride = kernel (PyTorch).
struct Pool2dOptions {
  std::vector<int64_t> kernel = {2, 2};
  std::vector<int64_t> stride = {};
  std::vector<int64_t> padding = {0, 0};
};

// ---------------------------------------------------------------------------------------------------------
// Values and nodes

// An SSA value: the index of the node that defines it in its graph.
struct Value {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
  friend bool operator==(Value, Value) = default;
  friend auto operator<=>(Value, Value) = default;
};

struct Node {
  OpKind op = OpKind::Input;
  std::string name;             // unique in the graph
  std::vector<Value> inputs;
  Attrs attrs;
  TensorType type;              // the result's dtype and shape
};

// Read a node's typed options back (the node must be of a conv2d / pool family op).
Conv2dOptions conv2d_options(const Node& n);
Pool2dOptions pool2d_options(const Node& n);   // stride filled in (never empty)

// A state update: after each step, the executor writes `value` into the persistent `target`
// (a parameter or a state of the same type).
struct StateUpdate {
  Value target;
  Value value;
};

struct NamedOutput {
  std::string name;
  Value value;
};

// ---------------------------------------------------------------------------------------------------------
// The graph and its builder API

class Graph {
 public:
  // ---- leaves
  Value input(std::string name, DType dtype, Shape shape);
  Value parameter(std::string name, DType dtype, Shape shape);
  Value state(std::string name, DType dtype, Shape shape, double init = 0.0);
  Value constant(double value, DType dtype, Shape shape = {});
  Value scalar(double value, DType dtype) { return constant(value, dtype, {}); }

  // ---- elementwise binary (numpy broadcasting; a double operand becomes a scalar constant of the other
  // operand's dtype)
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value pow(Value a, Value b);
  Value add(Value a, double b);
  Value sub(Value a, double b);
  Value mul(Value a, double b);
  Value div(Value a, double b);
  Value maximum(Value a, Value b);
  Value minimum(Value a, Value b);
  Value compare(Value a, Value b, CompareMode mode);
  Value where(Value cond, Value a, Value b);
  Value cast(Value x, DType to);

  // ---- elementwise unary
  Value neg(Value x);
  Value exp(Value x);
  Value log(Value x);
  Value sqrt(Value x);
  Value tanh(Value x);
  Value sigmoid(Value x);
  Value relu(Value x);
  Value silu(Value x);
  Value gelu(Value x);  // tanh form

  // ---- reductions; negative axes count from the end
  Value sum(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value mean(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value max(Value x, std::vector<int64_t> axes, bool keepdim = false);
  Value sum(Value x);   // over all axes, to a scalar
  Value mean(Value x);  // over all axes, to a scalar

  // ---- layout; one dimension of reshape's shape may be -1 (inferred)
  Value reshape(Value x, Shape shape);
  Value flatten(Value x, int64_t start_dim = 1, int64_t end_dim = -1);
  Value permute(Value x, std::vector<int64_t> perm);
  Value transpose(Value x);                          // swaps the last two dims (a permute)
  Value transpose(Value x, int64_t dim0, int64_t dim1);
  Value broadcast_to(Value x, Shape shape);
  Value sum_to(Value x, Shape shape);

  // ---- heavy ops
  Value matmul(Value a, Value b);
  Value conv2d(Value x, Value w, const Conv2dOptions& opt = {});
  Value max_pool2d(Value x, const Pool2dOptions& opt = {});
  Value avg_pool2d(Value x, const Pool2dOptions& opt = {});

  // ---- helpers that decompose into ops
  // y = x W^T + b, x [.., in], W [out, in], b [out] (optional: pass an invalid Value for none).
  Value linear(Value x, Value w, Value b = {});

  // ---- backward-only ops
  Value relu_grad(Value grad, Value x);
  Value silu_grad(Value grad, Value x);
  Value gelu_grad(Value grad, Value x);
  Value conv2d_grad_input(Value grad_out, Value w, const Conv2dOptions& opt, Shape input_shape);
  Value conv2d_grad_weight(Value grad_out, Value x, const Conv2dOptions& opt, Shape weight_shape);
  Value max_pool2d_grad(Value grad_out, Value x, const Pool2dOptions& opt);
  Value max_pool2d_argmax(Value x, const Pool2dOptions& opt = {});
  Value max_pool2d_grad_argmax(Value grad_out, Value argmax, const Pool2dOptions& opt, Shape input_shape);
  Value avg_pool2d_grad(Value grad_out, const Pool2dOptions& opt, Shape input_shape);

  // ---- any op of the table by its name ("abs", "leaky_relu"), e.g. ops without a builder method
  Value op(std::string_view op_name, std::vector<Value> inputs, Attrs attrs = {});

  // ---- generic construction (what the builder methods and the parser use)
  // Appends a non-leaf node after checking arity, attributes and shapes. `name` empty = generated.
  Value add_node(OpKind op, std::vector<Value> inputs, Attrs attrs, std::string name = {});
  // Appends a leaf (input, parameter, state, constant) of the given type.
  Value add_leaf(OpKind op, std::string name, TensorType type, Attrs attrs = {});

  // ---- naming
  // Renames a value (names must be unique and non-empty); returns v for chaining: g.name(g.relu(x), "h1").
  Value name(Value v, std::string new_name);

  // ---- outputs and state updates
  void output(std::string name, Value v);               // names are unique among outputs
  // Drops an output (its value stays, for whatever else reads it); throws GraphError for a name that is not one.
  void remove_output(std::string_view name);
  void state_update(Value target, Value new_value);     // target: parameter or state; same type; once each

  // ---- accessors
  // node() returns a reference into the node storage: appending a node may move it, so copy what you need
  // before building more (g.type() returns a copy for that reason: g.add(x, y) inside an expression that
  // also reads g.type(...) is safe).
  int32_t size() const { return int32_t(nodes_.size()); }
  const Node& node(Value v) const;
  const Node& node(int32_t id) const { return node(Value{id}); }
  TensorType type(Value v) const { return node(v).type; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Value> values() const;                    // every value, in topological order
  std::vector<Value> inputs() const;                    // Input leaves, in order
  std::vector<Value> parameters() const;                // Parameter leaves, in order
  std::vector<Value> states() const;                    // State leaves, in order
  const std::vector<NamedOutput>& outputs() const { return outputs_; }
  const std::vector<StateUpdate>& state_updates() const { return updates_; }
  std::optional<Value> find(std::string_view name) const;   // a value by node name
  Value at(std::string_view name) const;                     // same, throws GraphError if absent
  std::optional<Value> find_output(std::string_view name) const;

  // Every consumer of each value (index = value id), in topological order.
  std::vector<std::vector<Value>> users() const;

 private:
  // Tests reach the storage through it to build broken graphs for the verifier (tests/support/graph_surgery.h);
  // nothing else may: every public method keeps the graph valid.
  friend struct GraphTestAccess;

  Value append(Node n);
  std::string generate_name(OpKind op);

  std::vector<Node> nodes_;
  std::map<std::string, int32_t, std::less<>> by_name_;
  std::vector<NamedOutput> outputs_;
  std::vector<StateUpdate> updates_;
  int64_t name_counter_ = 0;
};

}  // namespace spire::graph
