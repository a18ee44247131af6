// Every differentiable op's VJP rule against central finite differences in float64, on random inputs with
// fixed seeds (broadcasting, keepdim, strides, padding, dilation and groups included).
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "ir/graph/op_table.h"
#include "tests/autograd/grad_check.h"
#include "tests/support/named_ops.h"

namespace spire::autograd::testing {
namespace {

using graph::CompareMode;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Value;
using Vals = std::vector<Value>;

struct Case {
  std::string name;
  OpKind op;  // the op whose VJP the case exercises
  std::vector<InputSpec> inputs;
  std::function<Value(Graph&, const Vals&)> body;
  Tolerance tol = {};
};

InputSpec in(std::string name, graph::Shape shape, double lo = -1.0, double hi = 1.0) {
  return {std::move(name), DType::F64, std::move(shape), lo, hi, true, 0.0};
}
InputSpec off_zero(std::string name, graph::Shape shape) {  // keeps inputs away from a kink at 0
  return {std::move(name), DType::F64, std::move(shape), -1.0, 1.0, true, 0.05};
}
InputSpec labels(graph::Shape shape, int64_t classes, DType t = DType::I64) {
  return {"labels", t, std::move(shape), 0.0, double(classes), false, 0.0};
}

std::vector<Case> cases() {
  graph::Conv2dOptions conv_full{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 2};
  return {
      {"add_broadcast", OpKind::Add, {in("a", {2, 3}), in("b", {3})}, [](Graph& g, const Vals& v) { return g.add(v[0], v[1]); }},
      {"sub_broadcast", OpKind::Sub, {in("a", {2, 1, 4}), in("b", {3, 1})}, [](Graph& g, const Vals& v) { return g.sub(v[0], v[1]); }},
      {"mul_broadcast", OpKind::Mul, {in("a", {2, 3}), in("b", {1, 3})}, [](Graph& g, const Vals& v) { return g.mul(v[0], v[1]); }},
      {"mul_same_value_twice", OpKind::Mul, {in("a", {5})}, [](Graph& g, const Vals& v) { return g.mul(v[0], v[0]); }},
      {"div_broadcast", OpKind::Div, {in("a", {2, 3}), in("b", {2, 1}, 0.5, 2.0)}, [](Graph& g, const Vals& v) { return g.div(v[0], v[1]); }},
      {"pow", OpKind::Pow, {in("a", {2, 3}, 0.5, 2.0), in("b", {2, 3}, -1.5, 1.5)}, [](Graph& g, const Vals& v) { return g.pow(v[0], v[1]); }},
      {"maximum_broadcast", OpKind::Maximum, {in("a", {3, 4}), in("b", {4})}, [](Graph& g, const Vals& v) { return g.maximum(v[0], v[1]); }},
      {"minimum_broadcast", OpKind::Minimum, {in("a", {3, 4}), in("b", {4})}, [](Graph& g, const Vals& v) { return g.minimum(v[0], v[1]); }},
      {"neg", OpKind::Neg, {in("x", {2, 5})}, [](Graph& g, const Vals& v) { return g.neg(v[0]); }},
      {"exp", OpKind::Exp, {in("x", {2, 5})}, [](Graph& g, const Vals& v) { return g.exp(v[0]); }},
      {"log", OpKind::Log, {in("x", {2, 5}, 0.2, 3.0)}, [](Graph& g, const Vals& v) { return g.log(v[0]); }},
      {"sqrt", OpKind::Sqrt, {in("x", {2, 5}, 0.2, 3.0)}, [](Graph& g, const Vals& v) { return g.sqrt(v[0]); }},
      {"tanh", OpKind::Tanh, {in("x", {2, 5}, -2.0, 2.0)}, [](Graph& g, const Vals& v) { return g.tanh(v[0]); }},
      {"sigmoid", OpKind::Sigmoid, {in("x", {2, 5}, -3.0, 3.0)}, [](Graph& g, const Vals& v) { return g.sigmoid(v[0]); }},
      {"relu", OpKind::Relu, {off_zero("x", {3, 5})}, [](Graph& g, const Vals& v) { return g.relu(v[0]); }},
      {"silu", OpKind::Silu, {in("x", {2, 5}, -3.0, 3.0)}, [](Graph& g, const Vals& v) { return g.silu(v[0]); }},
      {"gelu", OpKind::Gelu, {in("x", {2, 5}, -3.0, 3.0)}, [](Graph& g, const Vals& v) { return g.gelu(v[0]); }},
      {"where_broadcast", OpKind::Where,
       {{"c", DType::F64, {2, 3}, -1, 1, false, 0.0}, in("a", {2, 3}), in("b", {3})},
       [](Graph& g, const Vals& v) { return g.where(g.compare(v[0], g.scalar(0, DType::F64), CompareMode::Gt), v[1], v[2]); }},
      // Through f32 and back: the finite difference sees float rounding, so a larger step and tolerance.
      {"cast_f64_f32_f64", OpKind::Cast, {in("x", {2, 3})},
       [](Graph& g, const Vals& v) { return g.cast(g.mul(g.cast(v[0], DType::F32), 3.0), DType::F64); },
       {.h = 1e-3, .abs = 1e-4, .rel = 1e-4}},
      {"sum_axis", OpKind::Sum, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.sum(v[0], {1}); }},
      {"sum_keepdim", OpKind::Sum, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.sum(v[0], {0, 2}, true); }},
      {"sum_all", OpKind::Sum, {in("x", {2, 3})}, [](Graph& g, const Vals& v) { return g.sum(v[0]); }},
      {"mean_axes", OpKind::Mean, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.mean(v[0], {0, 2}); }},
      {"mean_keepdim", OpKind::Mean, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.mean(v[0], {1}, true); }},
      {"max_axis", OpKind::Max, {in("x", {3, 4, 2})}, [](Graph& g, const Vals& v) { return g.max(v[0], {1}); }},
      {"max_keepdim", OpKind::Max, {in("x", {3, 4, 2})}, [](Graph& g, const Vals& v) { return g.max(v[0], {0, 2}, true); }},
      {"reshape", OpKind::Reshape, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.reshape(v[0], {4, 6}); }},
      {"flatten", OpKind::Flatten, {in("x", {2, 3, 2, 2})}, [](Graph& g, const Vals& v) { return g.flatten(v[0], 1, 2); }},
      {"permute", OpKind::Permute, {in("x", {2, 3, 4})}, [](Graph& g, const Vals& v) { return g.permute(v[0], {2, 0, 1}); }},
      {"broadcast_to", OpKind::BroadcastTo, {in("x", {2, 1, 3})}, [](Graph& g, const Vals& v) { return g.broadcast_to(v[0], {4, 2, 5, 3}); }},
      {"sum_to", OpKind::SumTo, {in("x", {2, 4, 3})}, [](Graph& g, const Vals& v) { return g.sum_to(v[0], {4, 1}); }},
      {"matmul_2d", OpKind::Matmul, {in("a", {3, 4}), in("b", {4, 5})}, [](Graph& g, const Vals& v) { return g.matmul(v[0], v[1]); }},
      {"matmul_batched", OpKind::Matmul, {in("a", {2, 3, 4}), in("b", {2, 4, 5})}, [](Graph& g, const Vals& v) { return g.matmul(v[0], v[1]); }},
      {"matmul_batch_broadcast", OpKind::Matmul, {in("a", {2, 1, 3, 4}), in("b", {3, 4, 2})},
       [](Graph& g, const Vals& v) { return g.matmul(v[0], v[1]); }},
      {"linear_helper", OpKind::Matmul, {in("x", {3, 4}), in("w", {5, 4}), in("b", {5})},
       [](Graph& g, const Vals& v) { return g.linear(v[0], v[1], v[2]); }},
      {"conv2d_lenet_like", OpKind::Conv2d, {in("x", {2, 1, 8, 8}), in("w", {3, 1, 5, 5})},
       [](Graph& g, const Vals& v) { return g.conv2d(v[0], v[1], {.padding = {2, 2}}); }},
      {"conv2d_stride_pad_dilation_groups", OpKind::Conv2d, {in("x", {2, 4, 7, 7}), in("w", {6, 2, 3, 3})},
       [conv_full](Graph& g, const Vals& v) { return g.conv2d(v[0], v[1], conv_full); }},
      {"conv2d_stride_leaves_rows_unused", OpKind::Conv2d, {in("x", {1, 2, 8, 8}), in("w", {2, 2, 3, 3})},
       [](Graph& g, const Vals& v) { return g.conv2d(v[0], v[1], {.stride = {3, 3}}); }},
      {"max_pool2d", OpKind::MaxPool2d, {in("x", {2, 3, 6, 6})}, [](Graph& g, const Vals& v) { return g.max_pool2d(v[0], {.kernel = {2, 2}}); }},
      {"max_pool2d_overlap_padding", OpKind::MaxPool2d, {in("x", {2, 2, 7, 7})},
       [](Graph& g, const Vals& v) { return g.max_pool2d(v[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}); }},
      {"avg_pool2d", OpKind::AvgPool2d, {in("x", {2, 3, 6, 6})}, [](Graph& g, const Vals& v) { return g.avg_pool2d(v[0], {.kernel = {2, 2}}); }},
      {"avg_pool2d_overlap_padding", OpKind::AvgPool2d, {in("x", {2, 2, 7, 7})},
       [](Graph& g, const Vals& v) { return g.avg_pool2d(v[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}); }},
      {"softmax_last", *graph::op_from_name("softmax"), {in("x", {3, 5}, -2, 2)}, [](Graph& g, const Vals& v) { return softmax(g, v[0], -1); }},
      {"softmax_first", *graph::op_from_name("softmax"), {in("x", {3, 5}, -2, 2)}, [](Graph& g, const Vals& v) { return softmax(g, v[0], 0); }},
      {"log_softmax", *graph::op_from_name("log_softmax"), {in("x", {3, 5}, -2, 2)}, [](Graph& g, const Vals& v) { return log_softmax(g, v[0], 1); }},
      // write_at: the data's gradient everywhere but the written slice, the row's from that slice.
      {"write_at", *graph::op_from_name("write_at"), {in("data", {2, 5, 3}), in("row", {2, 1, 3}), labels({1}, 5)},
       [](Graph& g, const Vals& v) { return g.op("write_at", {v[0], v[1], v[2]}, {{"axis", int64_t(1)}}); }},
      // The normalizations (ir/graph/ops/norm_ops.cpp): every input's gradient, rows of 6 over a batch of 2 x 3.
      {"layer_norm", *graph::op_from_name("layer_norm"), {in("x", {2, 3, 6}, -2, 2), in("scale", {6}, 0.5, 1.5), in("bias", {6})},
       [](Graph& g, const Vals& v) { return g.op("layer_norm", {v[0], v[1], v[2]}, {{"epsilon", 1e-5}}); }},
      {"rms_norm", *graph::op_from_name("rms_norm"), {in("x", {2, 3, 6}, -2, 2), in("scale", {6}, 0.5, 1.5)},
       [](Graph& g, const Vals& v) { return g.op("rms_norm", {v[0], v[1]}, {{"epsilon", 1e-5}}); }},
      {"cross_entropy_i64", *graph::op_from_name("cross_entropy"), {in("logits", {4, 5}, -2, 2), labels({4}, 5)},
       [](Graph& g, const Vals& v) { return cross_entropy(g, v[0], v[1]); }},
      {"cross_entropy_i32", *graph::op_from_name("cross_entropy"), {in("logits", {6, 3}, -2, 2), labels({6}, 3, DType::I32)},
       [](Graph& g, const Vals& v) { return cross_entropy(g, v[0], v[1]); }},
      // Indexing ops (ir/graph/ops/indexing.cpp): strided and reversed slices, a pad that is its adjoint,
      // concat of three, gather with repeated and negative indices (its VJP sums into repeated rows).
      {"slice_strided_reversed", *graph::op_from_name("slice"), {in("x", {4, 7})},
       [](Graph& g, const Vals& v) {
         return g.op("slice", {v[0]}, {{"starts", std::vector<int64_t>{1, 6}}, {"steps", std::vector<int64_t>{2, -3}},
                                       {"shape", graph::Shape{2, 3}}});
       }},
      {"pad_strided", *graph::op_from_name("pad"), {in("x", {2, 3})},
       [](Graph& g, const Vals& v) {
         return g.op("pad", {v[0]}, {{"starts", std::vector<int64_t>{1, 5}}, {"steps", std::vector<int64_t>{1, -2}},
                                     {"shape", graph::Shape{4, 6}}, {"value", 0.25}});
       }},
      {"concat_three", *graph::op_from_name("concat"), {in("a", {2, 3}), in("b", {2, 1}), in("c", {2, 2})},
       [](Graph& g, const Vals& v) { return g.op("concat", {v[0], v[1], v[2]}, {{"axis", int64_t(1)}}); }},
      {"gather_repeated_negative", *graph::op_from_name("gather"), {in("x", {4, 3})},
       [](Graph& g, const Vals& v) {
         Value rows = g.cast(g.constant(-1.0, DType::F64, {4}), DType::I64);  // row -1 four times: all the last
         Value cols = g.cast(g.constant(1.0, DType::F64, {3}), DType::I32);   // column 1 three times
         return g.add(g.op("gather", {v[0], rows}, {{"axis", int64_t(0)}}),   // [4,3]
                      g.op("gather", {v[0], cols}, {{"axis", int64_t(1)}}));  // [4,3]
       }},
      // A small network: conv, bias, relu, pool, flatten, linear, cross entropy; parameters used once each
      // and an activation used twice (accumulation).
      {"small_cnn", OpKind::Conv2d,
       {in("x", {2, 1, 6, 6}), in("w", {2, 1, 3, 3}), in("b", {2}), in("fc", {3, 8}), labels({2}, 3)},
       [](Graph& g, const Vals& v) {
         Value c = g.add(g.conv2d(v[0], v[1], {.padding = {1, 1}}), g.reshape(v[2], {1, 2, 1, 1}));
         Value h = g.max_pool2d(g.add(g.relu(c), g.mul(c, 0.1)), {.kernel = {3, 3}});
         return cross_entropy(g, g.linear(g.flatten(h), v[3]), v[4]);
       }},
  };
}

// Every pointwise op whose op table entry has a test domain and a VJP gets a case generated from the entry (so a
// new pointwise op is checked here without a line of this file): float64 inputs drawn from its domain, the
// second of two inputs broadcast, inputs kept 0.05 off zero (the kink of abs, leaky_relu, sign, relu).
std::vector<Case> generated_cases() {
  std::vector<Case> out;
  for (const graph::OpInfo& info : graph::op_table()) {
    if (!info.test.generate || !info.vjp || !info.test.backward) continue;
    std::vector<InputSpec> inputs;
    for (int k = 0; k < info.arity; ++k) {
      graph::InputDomain d = size_t(k) < info.test.inputs.size() ? info.test.inputs[size_t(k)] : graph::InputDomain{};
      graph::Shape shape = k == 0 || !info.test.broadcast ? graph::Shape{2, 5} : graph::Shape{5};
      // A domain drawn away from zero with a random sign is |x| in [lo, hi]: here the interval [lo, hi] (the
      // positive side) keeps divisors off zero the same way.
      inputs.push_back({std::string(1, char('a' + k)), DType::F64, shape, d.lo, d.hi, true, d.away_from_zero ? 0.0 : 0.05});
    }
    const OpKind kind = info.kind;
    const graph::Attrs attrs = info.test.attrs;
    out.push_back({"generated_" + std::string(info.name), kind, inputs,
                   [kind, attrs](Graph& g, const Vals& v) { return g.add_node(kind, v, attrs); }});
  }
  return out;
}

std::vector<Case> all_cases() {
  std::vector<Case> c = cases();
  for (Case& g : generated_cases()) c.push_back(std::move(g));
  return c;
}

// GoogleTest prints a failing parameter with this (instead of its bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class VjpFiniteDifference : public ::testing::TestWithParam<Case> {};

TEST_P(VjpFiniteDifference, MatchesCentralDifferences) {
  const Case& c = GetParam();
  for (uint32_t seed : {1u, 2u}) {
    int64_t checked = check_gradients(c.inputs, c.body, seed, c.tol);
    EXPECT_GT(checked, 0) << "no gradient element was checked";
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, VjpFiniteDifference, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Every op with a VJP rule has at least one finite-difference case above.
TEST(VjpFiniteDifferenceCoverage, EveryDifferentiableOpHasACase) {
  std::set<OpKind> covered;
  for (const Case& c : all_cases()) covered.insert(c.op);
  for (const graph::OpInfo& info : graph::op_table()) {
    if (info.vjp) {
      EXPECT_TRUE(covered.contains(info.kind)) << info.name << " has a VJP rule but no test case";
    }
  }
}

}  // namespace
}  // namespace spire::autograd::testing
