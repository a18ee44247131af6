// The op table: one entry per op (name, arity, attributes, shape rule, VJP rule). The entries are listed
// in OpKind order; op_table() checks that once, at first use.
#include "ir/graph/op_table.h"

#include <array>

#include <fmt/format.h>

namespace spire::graph {
namespace {

using K = AttrKind;
namespace S = shape_rules;
namespace V = vjp_rules;

const std::vector<AttrSpec> kNoAttrs = {};
const std::vector<AttrSpec> kReduceAttrs = {{"axes", K::Ints}, {"keepdim", K::Bool}};
const std::vector<AttrSpec> kConvAttrs = {
    {"stride", K::Ints}, {"padding", K::Ints}, {"dilation", K::Ints}, {"groups", K::Int}};
const std::vector<AttrSpec> kPoolAttrs = {{"kernel", K::Ints}, {"stride", K::Ints}, {"padding", K::Ints}};

std::vector<AttrSpec> with(std::vector<AttrSpec> base, AttrSpec extra) {
  base.push_back(extra);
  return base;
}

std::vector<OpInfo> build_table() {
  return {
      // kind, name, arity, attributes, shape rule, VJP rule
      {OpKind::Input, "input", 0, kNoAttrs, nullptr, nullptr},
      {OpKind::Parameter, "parameter", 0, kNoAttrs, nullptr, nullptr},
      {OpKind::State, "state", 0, {{"init", K::Float}}, nullptr, nullptr},
      {OpKind::Constant, "constant", 0, {{"value", K::Float}}, nullptr, nullptr},

      {OpKind::Add, "add", 2, kNoAttrs, S::binary, V::add},
      {OpKind::Sub, "sub", 2, kNoAttrs, S::binary, V::sub},
      {OpKind::Mul, "mul", 2, kNoAttrs, S::binary, V::mul},
      {OpKind::Div, "div", 2, kNoAttrs, S::binary, V::div},
      {OpKind::Pow, "pow", 2, kNoAttrs, S::binary, V::pow},
      {OpKind::Maximum, "maximum", 2, kNoAttrs, S::binary, V::maximum},
      {OpKind::Minimum, "minimum", 2, kNoAttrs, S::binary, V::minimum},
      {OpKind::Compare, "compare", 2, {{"mode", K::String}}, S::compare, nullptr},

      {OpKind::Neg, "neg", 1, kNoAttrs, S::unary_float, V::neg},
      {OpKind::Exp, "exp", 1, kNoAttrs, S::unary_float, V::exp},
      {OpKind::Log, "log", 1, kNoAttrs, S::unary_float, V::log},
      {OpKind::Sqrt, "sqrt", 1, kNoAttrs, S::unary_float, V::sqrt},
      {OpKind::Tanh, "tanh", 1, kNoAttrs, S::unary_float, V::tanh},
      {OpKind::Sigmoid, "sigmoid", 1, kNoAttrs, S::unary_float, V::sigmoid},
      {OpKind::Relu, "relu", 1, kNoAttrs, S::unary_float, V::relu},
      {OpKind::Silu, "silu", 1, kNoAttrs, S::unary_float, V::silu},
      {OpKind::Gelu, "gelu", 1, kNoAttrs, S::unary_float, V::gelu},

      {OpKind::Where, "where", 3, kNoAttrs, S::where, V::where},
      {OpKind::Cast, "cast", 1, {{"to", K::String}}, S::cast, V::cast},

      {OpKind::Sum, "sum", 1, kReduceAttrs, S::reduce, V::sum},
      {OpKind::Mean, "mean", 1, kReduceAttrs, S::reduce, V::mean},
      {OpKind::Max, "max", 1, kReduceAttrs, S::reduce, V::max},

      {OpKind::Reshape, "reshape", 1, {{"shape", K::Ints}}, S::reshape, V::reshape},
      {OpKind::Flatten, "flatten", 1, {{"start_dim", K::Int}, {"end_dim", K::Int}}, S::flatten, V::reshape},
      {OpKind::Permute, "permute", 1, {{"perm", K::Ints}}, S::permute, V::permute},
      {OpKind::BroadcastTo, "broadcast_to", 1, {{"shape", K::Ints}}, S::broadcast_to, V::broadcast_to},
      {OpKind::SumTo, "sum_to", 1, {{"shape", K::Ints}}, S::sum_to, V::sum_to},

      {OpKind::Matmul, "matmul", 2, kNoAttrs, S::matmul, V::matmul},
      {OpKind::Conv2d, "conv2d", 2, kConvAttrs, S::conv2d, V::conv2d},
      {OpKind::MaxPool2d, "max_pool2d", 1, kPoolAttrs, S::pool2d, V::max_pool2d},
      {OpKind::AvgPool2d, "avg_pool2d", 1, kPoolAttrs, S::pool2d, V::avg_pool2d},
      {OpKind::Softmax, "softmax", 1, {{"axis", K::Int}}, S::softmax, V::softmax},
      {OpKind::LogSoftmax, "log_softmax", 1, {{"axis", K::Int}}, S::softmax, V::log_softmax},
      {OpKind::CrossEntropy, "cross_entropy", 2, kNoAttrs, S::cross_entropy, V::cross_entropy},

      // Backward-only ops: not differentiable themselves (no double backward).
      {OpKind::ReluGrad, "relu_grad", 2, kNoAttrs, S::activation_grad, nullptr},
      {OpKind::SiluGrad, "silu_grad", 2, kNoAttrs, S::activation_grad, nullptr},
      {OpKind::GeluGrad, "gelu_grad", 2, kNoAttrs, S::activation_grad, nullptr},
      {OpKind::Conv2dGradInput, "conv2d_grad_input", 2, with(kConvAttrs, {"input_shape", K::Ints}),
       S::conv2d_grad_input, nullptr},
      {OpKind::Conv2dGradWeight, "conv2d_grad_weight", 2, with(kConvAttrs, {"weight_shape", K::Ints}),
       S::conv2d_grad_weight, nullptr},
      {OpKind::MaxPool2dGrad, "max_pool2d_grad", 2, kPoolAttrs, S::max_pool2d_grad, nullptr},
      {OpKind::AvgPool2dGrad, "avg_pool2d_grad", 1, with(kPoolAttrs, {"input_shape", K::Ints}),
       S::avg_pool2d_grad, nullptr},
      {OpKind::CrossEntropyGrad, "cross_entropy_grad", 3, kNoAttrs, S::cross_entropy_grad, nullptr},
  };
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = [] {
    std::vector<OpInfo> t = build_table();
    if (t.size() != size_t(kNumOps))
      throw std::logic_error(fmt::format("op table has {} entries, OpKind has {}", t.size(), kNumOps));
    for (size_t i = 0; i < t.size(); ++i)
      if (size_t(t[i].kind) != i)
        throw std::logic_error(fmt::format("op table entry {} ('{}') is out of OpKind order", i, t[i].name));
    return t;
  }();
  return t;
}

}  // namespace

const OpInfo& op_info(OpKind op) { return table().at(size_t(op)); }
std::span<const OpInfo> op_table() { return table(); }

}  // namespace spire::graph
