// The op table: ONE definition per op, read by every layer of the compiler.
//
// An entry (OpInfo) holds everything about its op: name, arity, attributes, category, shape rule, VJP rule,
// float64 reference, device formula (pointwise ops), cost, test tolerance with its reason, and the input
// domain the op harness draws its cases from. The graph builder and parser read the shape rule, autograd the
// VJP, the reference evaluator the reference, fusion the category, lowering the formula (pointwise ops; every
// other op has an entry of lowering's own table, lowering/op_lowering.h, keyed by the op's name), `--stats`
// the cost, the op harness the tolerance and test domain.
//
// The entries live in ir/graph/ops/, one file per family, and a family file holds its ops whole: a heavy op's
// shape rule, VJP and reference sit beside its entry (ops/matmul_ops.cpp, ops/indexing.cpp). Only rules
// that many light ops share are elsewhere (shape_rules.cpp, vjp_rules.cpp, the eval_*.cpp references).
//
// Ops are found by name. An op gets an OpKind enumerator (graph.h) only when code outside its own files must
// name it: a pass or fusion that pattern-matches it (matmul, conv2d, the max poolings), autograd's generic
// code, the graph builder's methods that the nn modules call. Every other op (the pointwise ones, the
// row-normalizing ops, cross_entropy, the indexing ops) is an entry and nothing more: the table numbers it
// after the named ops, op_from_name finds it, g.op("cross_entropy", {logits, labels}) builds it, and
// lowering's table looks it up by name. So an op added to a family touches its family file, its lowering, its
// kernel, its harness cases and its front-end mapping, and no shared file; a new family also lists its
// function below (ops::) and in lowering's table. docs/ADDING_AN_OP.md walks through one.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "ir/kernel/builder.h"

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

// What the op is, for the passes that treat ops by kind: fusion fuses pointwise chains, lowering picks the
// generic pointwise kernel for them; the other categories name what their lowering does.
enum class OpCategory : uint8_t {
  Leaf,       // input, parameter, state, constant
  Pointwise,  // one result element from the same-index (broadcast) elements of the inputs
  Reduction,  // sums / maxima over axes
  Layout,     // moves elements without arithmetic (reshape, permute, broadcast, slices)
  Heavy,      // a kernel template of its own (matmul, convolution, pooling, the row-normalizing ops, losses)
  Custom,     // a user's op (register_user_op): an opaque kernel that fusion never looks inside
};
std::string_view op_category_name(OpCategory c);

// The f64 reference of a whole op: the node (attributes, result type) and its input tensors, values in double;
// returns a tensor of exactly the node's type (the evaluator rounds it to the compute precision).
using ReferenceRule = Tensor (*)(const Node& node, std::span<const Tensor* const> inputs);

// The f64 reference of ONE element of a pointwise op: the inputs' elements at that index (broadcast already
// applied). The evaluator walks the result with it. Throws GraphError for a value it cannot take.
using ScalarReference = double (*)(const Node& node, std::span<const double> x);

// One element of a pointwise op as a kernel computes it. x holds the operands in device types (f32, f64, i32;
// bool as u32 0/1, i64 as i32), out is the result's device type.
struct PointwiseEmit {
  kir::KernelBuilder& kb;
  const Node& node;
  std::span<const DType> input_dtypes;
  std::span<const kir::Val> x;
  kir::Type out;
};
using PointwiseFormula = kir::Val (*)(const PointwiseEmit& e);

// How far a device result may be from the float64 reference, with the reason. The error is the max-norm
// relative error of a whole tensor, with magnitudes below 1 judged absolutely:
//     max_i |device_i - reference_i| / max(1, max_i |reference_i|)
// Scaling by the tensor's largest value keeps cancellation (a gradient summed from many random-sign terms
// landing near zero) from turning an ordinary float32 rounding into a failure, while a wrong element of
// ordinary size still shows as an O(1) error. A NaN or poison value where the reference has a number is an
// infinite error. Integer and bool results must match exactly. Bounds are about ten times what the precision
// rules of Vulkan and CUDA and the op's arithmetic give, so a correct kernel passes on every conforming device
// while a wrong index or formula (errors of 1e-2 to 1) cannot.
struct Tolerance {
  double f32 = 0;  // results computed in float32
  double f64 = 0;  // results computed in float64
  std::string_view why;
};

// Where the op harness draws an input from.
struct InputDomain {
  double lo = -1, hi = 1;
  bool away_from_zero = false;  // |x| in [lo, hi] with a random sign (divisors)
};

// The cases the op harness generates for a pointwise op from its entry (other ops list their cases in the
// harness, op_harness/cases_*.cpp). Shapes cover a scalar-like [1], [7,33], [257], [2,3,5] and broadcasting.
struct TestDomain {
  bool generate = false;              // generate the standard pointwise cases from this entry
  std::vector<InputDomain> inputs;    // one per input (missing ones: [-1, 1])
  bool integers = false;              // also i32 (and for binary ops i64) cases, drawn as whole numbers
  bool backward = true;               // also check the VJP (every float input's gradient)
  bool broadcast = true;              // inputs of different (broadcastable) shapes are allowed
  Attrs attrs;                        // the attributes of the generated cases
};

// What one node of an op costs, for `spire run --stats`: arithmetic and the least memory traffic any kernel
// could get away with. A multiply-add counts 2 flops; a compare, exp or max counts 1 (a roofline count, not
// an instruction count). bytes = every input read once + the result written once, in graph dtype sizes.
struct OpCost {
  int64_t flops = 0;
  int64_t bytes = 0;
  friend bool operator==(const OpCost&, const OpCost&) = default;
};
// A node (attributes, result type) and its input types -> its cost.
using CostRule = OpCost (*)(const Node& node, std::span<const TensorType> inputs);

struct UserOpRules;

// Marks an entry whose OpKind is assigned when the table is built.
inline constexpr OpKind kUnnamedOp = OpKind(0xFFFF);

struct OpInfo {
  // The enumerator of an op the compiler names (OpKind::Add); kUnnamedOp for ops defined only by their entry,
  // which get the next free OpKind value when the table is built.
  OpKind kind = kUnnamedOp;
  std::string_view name;          // the text form's name
  int arity = 0;                  // number of inputs; -1: one or more (concat)
  std::vector<AttrSpec> attrs;    // in printing order
  OpCategory category = OpCategory::Heavy;
  // Under a half precision policy (bf16, f16: passes/half_storage.h) the op reads f32 values and computes and stores
  // its result in f32, as torch.autocast's f32 ops do (passes/half_storage.h lists which).
  bool autocast_f32 = false;
  ShapeRule shape = nullptr;      // nullptr for leaves (their type is declared)
  VjpRule vjp = nullptr;          // nullptr: not differentiable (its inputs receive no gradient)
  ReferenceRule reference = nullptr;   // whole-op f64 reference (non-pointwise ops)
  ScalarReference scalar = nullptr;    // per-element f64 reference (pointwise ops)
  PointwiseFormula formula = nullptr;  // per-element device formula (pointwise ops)
  Tolerance forward;              // tolerance of the op's result
  Tolerance backward;             // tolerance of the gradients its VJP produces (the chain of ops it emits)
  TestDomain test;                // pointwise ops: the harness's generated cases
  // nullptr: the category's default (op_cost in op_cost.cpp): pointwise 1 flop per result element,
  // reduction 1 flop per input element, layout and leaves none; bytes = inputs + result. Heavy ops must
  // give their own.
  CostRule cost = nullptr;
  // Custom ops only (register_user_op): the closures the rules above forward to, and the strings the
  // entry's views point into.
  std::shared_ptr<const UserOpRules> user;
};

// An op defined at run time, outside spire's sources (a custom op). Its rules are closures, so a program can
// build them from data (an op file) or capture state. Every layer treats it as an ordinary entry of category
// Custom: the text form names it, autograd calls its VJP, the evaluator its reference.
struct UserOpRules {
  std::string name;
  int arity = 1;
  // Result type from the input types; throw through ctx.fail() for inputs the op does not take.
  std::function<TensorType(const ShapeContext&)> shape;
  // Gradients of the inputs, appended to ctx.g with any ops (built-in or custom); empty: not differentiable.
  std::function<std::vector<Value>(VjpContext&)> vjp;
  // The float64 CPU reference (the evaluator's and the op harness's oracle): a tensor of node.type.
  std::function<Tensor(const Node&, std::span<const Tensor* const>)> reference;
  double forward_f32 = 1e-6, backward_f32 = 1e-5;  // tolerances of results computed in float32
  std::string tolerance_why = "a custom op: tolerance given by its author";
  // The harness's cases: each one input type per input (empty: one f32[7,33] case per input).
  std::vector<std::vector<TensorType>> test_cases;
  InputDomain test_domain;
};

// Adds a custom op to the op table and returns its OpKind. Throws GraphError when the name is taken (by a
// built-in op or an earlier custom op), is not a valid op name, or the rules lack shape or reference.
// Registration is meant for start-up: it must not run while another thread compiles or evaluates graphs.
OpKind register_user_op(UserOpRules rules);
bool is_user_op(OpKind op);

// The entry for an op. The table is indexed by OpKind: the named ops first, in enum order, then the others in
// the order their family files define them; op_info(k).kind == k for every k.
const OpInfo& op_info(OpKind op);
std::span<const OpInfo> op_table();
int op_count();
OpCategory op_category(OpKind op);

// The cost of a node whose inputs have `inputs` types: its entry's rule, or the category default.
OpCost op_cost(const Node& node, std::span<const TensorType> inputs);
OpCost op_cost(const Graph& g, Value v);
// bytes of every input once plus the result once: the default rules' traffic, for rules that keep it.
int64_t io_bytes(const Node& node, std::span<const TensorType> inputs);

// The tolerance for a result of dtype `dtype` (0 for integer and bool results: they must match exactly).
// f16 and bf16 results add to the f32 bound 2 unit roundoffs (f16: 2^-11, bf16: 2^-8) forward and 8
// backward: their ops compute in float32 and round each result once (op_table.cpp says why).
double op_tolerance(OpKind op, bool backward, DType dtype);

// The op families (ir/graph/ops/*.cpp), each returning its entries; op_table() gathers them.
namespace ops {
std::vector<OpInfo> leaves();
std::vector<OpInfo> binary();
std::vector<OpInfo> unary();
std::vector<OpInfo> activations();
std::vector<OpInfo> select_cast();
std::vector<OpInfo> reductions();
std::vector<OpInfo> layout();
std::vector<OpInfo> indexing();
std::vector<OpInfo> backward_only();
// The heavy ops, one family per kernel template (each its lowering/lower_*.cpp).
std::vector<OpInfo> matmul_ops();
std::vector<OpInfo> conv2d_ops();
std::vector<OpInfo> pool2d_ops();
std::vector<OpInfo> softmax_ops();
std::vector<OpInfo> argmax_ops();
std::vector<OpInfo> cross_entropy_ops();
std::vector<OpInfo> int8_matmul_ops();
std::vector<OpInfo> norm_ops();  // layer_norm, rms_norm
}  // namespace ops

// The shape rules and VJP rules that several entries of the lighter families share (shape_rules.cpp,
// vjp_rules.cpp). A heavy op's rules are its own, in its family file.
namespace shape_rules {
TensorType binary(const ShapeContext&);       // numeric (not bool), same dtypes, broadcast: add sub mul ...
TensorType binary_float(const ShapeContext&); // float, same dtypes, broadcast: div pow
TensorType compare(const ShapeContext&);
TensorType unary_float(const ShapeContext&);  // float in, same type out: exp log ...
TensorType unary_numeric(const ShapeContext&);  // numeric in, same type out: neg relu abs ...
TensorType where(const ShapeContext&);
TensorType cast(const ShapeContext&);
TensorType reduce(const ShapeContext&);
TensorType reshape(const ShapeContext&);
TensorType flatten(const ShapeContext&);
TensorType permute(const ShapeContext&);
TensorType broadcast_to(const ShapeContext&);
TensorType sum_to(const ShapeContext&);
TensorType activation_grad(const ShapeContext&);    // relu_grad silu_grad gelu_grad
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
}  // namespace vjp_rules

}  // namespace spire::graph
