// What the rewrite tests compare: random feeds for every leaf a graph reads, gradients appended by autograd,
// and the error measure of the op table's tolerances (ir/graph/op_table.h Tolerance).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "autograd/grad.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::passes::testing {

// Values in [-2, 2], rounded to float, for every input and parameter (a fixed seed per leaf name).
inline std::map<std::string, graph::Tensor> random_feeds(const graph::Graph& g, uint64_t seed) {
  std::map<std::string, graph::Tensor> feeds;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != graph::OpKind::Input && n.op != graph::OpKind::Parameter) continue;
    std::mt19937_64 rng(seed + std::hash<std::string>{}(n.name));
    std::uniform_real_distribution<double> d(-2, 2);
    std::vector<double> v(size_t(n.type.numel()));
    for (double& x : v) x = double(float(d(rng)));
    feeds[n.name] = graph::Tensor::from(n.type.dtype, n.type.shape, std::move(v));
  }
  return feeds;
}

// A copy of `g` with grad.<name> outputs: d(output `loss`)/d(every input and parameter).
inline graph::Graph with_gradients(graph::Graph g, const std::string& loss) {
  std::vector<graph::Value> wrt;
  for (graph::Value v : g.values())
    if (g.node(v).op == graph::OpKind::Input || g.node(v).op == graph::OpKind::Parameter) wrt.push_back(v);
  const std::vector<graph::Value> grads = autograd::grad(g, *g.find_output(loss), wrt);
  for (size_t i = 0; i < wrt.size(); ++i) g.output("grad." + g.node(wrt[i]).name, grads[i]);
  return g;
}

// max_i |a_i - ref_i| / max(1, max_i |ref_i|); infinite for a shape mismatch or a NaN where ref has a number.
inline double max_norm_error(const graph::Tensor& a, const graph::Tensor& ref) {
  if (a.shape != ref.shape) return std::numeric_limits<double>::infinity();
  double err = 0, scale = 1;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    const double e = std::fabs(a.data[i] - ref.data[i]);
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();
    err = std::max(err, e);
    scale = std::max(scale, std::fabs(ref.data[i]));
  }
  return err / scale;
}

}  // namespace spire::passes::testing
