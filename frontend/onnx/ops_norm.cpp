// Normalizations beyond BatchNormalization and LayerNormalization: InstanceNormalization, MeanVarianceNormalization
// and LRN, each as means, sums and pointwise ops over the axes it normalizes.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// (x - mean) / sqrt(var + eps) over `axes`, the variance biased (divided by the count), as ONNX's references compute.
Value standardize(graph::Graph& g, Value x, const std::vector<int64_t>& axes, double epsilon) {
  const Value mean = g.mean(x, axes, true);
  const Value d = g.sub(x, mean);
  const Value var = g.mean(g.mul(d, d), axes, true);
  return g.div(d, g.sqrt(g.add(var, epsilon)));
}

// InstanceNormalization(x [N, C, spatial..], scale [C], B [C]): each (n, c) standardized over its spatial axes.
void instance_norm(NodeContext& c) {
  auto& g = c.g();
  const Value x = c.float_value(0);
  const int64_t rank = c.type(0).rank();
  if (rank < 3) c.refuse("the input needs rank >= 3 ([N, C, spatial...])");
  const int64_t channels = c.type(0).shape[1];
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  Shape per_channel(size_t(rank - 1), 1);
  per_channel[0] = channels;
  auto channel = [&](int i) {
    if (c.type(i).shape != Shape{channels}) c.refuse(fmt::format("input {} must have shape [{}]", i, channels));
    return g.reshape(c.float_value(i), per_channel);
  };
  const Value y = standardize(g, x, axes, c.attr_float("epsilon", 1e-5f));
  c.set_output(0, g.add(g.mul(y, channel(1)), channel(2)));
}

// MeanVarianceNormalization: standardized over `axes` (default [0, 2, 3]) with ONNX's epsilon of 1e-9.
void mean_variance_norm(NodeContext& c) {
  const int64_t rank = c.type(0).rank();
  std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
  for (int64_t& a : axes) a = normalize_axis(c, a, rank);
  c.set_output(0, standardize(c.g(), c.float_value(0), axes, 1e-9));
}

// LRN: x / (bias + alpha / size * sum of x^2 over the `size` channels around each one)^beta. The channel window runs
// from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), zeros beyond the ends: the squares padded along the
// channel axis, then `size` shifted slices summed.
void lrn(NodeContext& c) {
  auto& g = c.g();
  const Value x = c.float_value(0);
  const Shape s = c.type(0).shape;
  if (s.size() < 3) c.refuse("the input needs rank >= 3 ([N, C, spatial...])");
  const int64_t size = c.attr_int("size", 0);
  if (size < 1 || size > (int64_t(1) << 16)) c.refuse(fmt::format("size {} must be in [1, 2^16]", size));
  const double alpha = c.attr_float("alpha", 1e-4f), beta = c.attr_float("beta", 0.75f), bias = c.attr_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const size_t rank = s.size();
  Shape padded = s;
  padded[1] += before + after;
  std::vector<int64_t> at(rank, 0), steps(rank, 1);
  at[1] = before;
  const Value squares = g.op("pad", {g.mul(x, x)}, {{"starts", at}, {"steps", steps}, {"shape", padded}, {"value", 0.0}});
  Value sum;
  for (int64_t k = 0; k < size; ++k) {
    std::vector<int64_t> starts(rank, 0);
    starts[1] = k;
    const Value part = g.op("slice", {squares}, {{"starts", starts}, {"steps", steps}, {"shape", s}});
    sum = sum.valid() ? g.add(sum, part) : part;
  }
  const DType dt = c.type(0).dtype;
  const Value scale = g.add(g.mul(sum, alpha / double(size)), bias);
  c.set_output(0, g.div(x, g.pow(scale, g.scalar(beta, dt))));
}

}  // namespace

void register_norm_ops(OpTable& t) {
  add_graph_ops(t, {{"InstanceNormalization", instance_norm}, {"MeanVarianceNormalization", mean_variance_norm},
                    {"LRN", lrn}});
}

}  // namespace spire::onnx_import
