// Backward-only ops: what VJP rules emit. Ordinary ops in every other way, but not differentiable themselves
// (no double backward). The op harness checks them directly as forward ops.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

std::vector<AttrSpec> conv_attrs();  // ops/heavy.cpp
std::vector<AttrSpec> pool_attrs();
int64_t pool_window(const Node& n);

namespace {
std::vector<AttrSpec> with(std::vector<AttrSpec> base, AttrSpec extra) {
  base.push_back(extra);
  return base;
}

// (grad, x) pairs: grad is the upstream gradient, x the activation's input (relu: its result, same sign).
TestDomain grad_domain(double lo, double hi) {
  return {.generate = true, .inputs = {{-1, 1}, {lo, hi}}, .backward = false, .broadcast = false};
}
// Costs (op_table.h's OpCost). The convolution gradients do the forward's multiply-adds again: grad_input
// one per (upstream element, weight element of its output channel), grad_weight one per (upstream element,
// weight element of its channel), as conv2d_cost counts them.
OpCost conv_grad_input_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * in[0].numel() * (in[1].numel() / std::max<int64_t>(in[1].shape[0], 1)), io_bytes(n, in)};
}
OpCost conv_grad_weight_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * in[0].numel() * (n.type.numel() / std::max<int64_t>(n.type.shape[0], 1)), io_bytes(n, in)};
}
// Each window finds its maximum again (one compare per element) and adds its upstream gradient there; avg
// spreads gradient/count over the window.
OpCost pool_grad_cost(const Node& n, std::span<const TensorType> in) {
  return {in[0].numel() * (pool_window(n) + 1), io_bytes(n, in)};
}
// Each window's gradient goes where its position says: one add per window, no compares.
OpCost pool_grad_argmax_cost(const Node& n, std::span<const TensorType> in) { return {in[0].numel(), io_bytes(n, in)}; }
// softmax (5 per element, as softmax_cost), minus the one-hot, times grad/N.
OpCost cross_entropy_grad_cost(const Node& n, std::span<const TensorType> in) {
  return {7 * n.type.numel(), io_bytes(n, in)};
}

}  // namespace

std::vector<OpInfo> backward_only() {
  const OpCategory P = OpCategory::Pointwise, H = OpCategory::Heavy;
  const Tolerance gelu_grad{2e-5, 1e-12, "the derivative of the tanh form: tanh, its square and a cubic"};
  return {
      // relu_grad: 0 where x <= 0, else grad (PyTorch's threshold_backward: a NaN x passes its gradient).
      {.kind = OpKind::ReluGrad, .name = "relu_grad", .arity = 2, .category = P, .shape = S::activation_grad,
       .scalar = [](const Node&, std::span<const double> x) { return x[1] <= 0 ? 0.0 : x[0]; },
       .formula = [](const PointwiseEmit& e) { return kir::select(e.x[1] <= 0, kir::like(e.x[0], 0), e.x[0]); },
       .forward = kCopy, .backward = kCopy, .test = grad_domain(-1, 1)},
      // d/dx x s(x) = s (1 + x (1 - s)).
      {.kind = OpKind::SiluGrad, .name = "silu_grad", .arity = 2, .category = P, .shape = S::activation_grad,
       .scalar = [](const Node&, std::span<const double> x) {
         const double s = sigmoid_of(x[1]);
         return x[0] * s * (1.0 + x[1] * (1.0 - s));
       },
       .formula = [](const PointwiseEmit& e) {
         Val s = sigmoid_of(e.x[1]);
         return e.x[0] * (s * (1.0 + e.x[1] * (1.0 - s)));
       },
       .forward = kTranscendental, .backward = kTranscendental, .test = grad_domain(-6, 6)},
      {.kind = OpKind::GeluGrad, .name = "gelu_grad", .arity = 2, .category = P, .shape = S::activation_grad,
       .scalar = [](const Node&, std::span<const double> x) { return x[0] * gelu_derivative(x[1]); },
       .formula = [](const PointwiseEmit& e) { return e.x[0] * gelu_derivative(e.x[1]); },
       .forward = gelu_grad, .backward = kTranscendental, .test = grad_domain(-5, 5)},
      {.kind = OpKind::Conv2dGradInput, .name = "conv2d_grad_input", .arity = 2,
       .attrs = with(conv_attrs(), {"input_shape", K::Ints}), .category = H, .shape = S::conv2d_grad_input,
       .reference = eval::conv2d_grad_input, .forward = kHeavy, .backward = kHeavy, .cost = conv_grad_input_cost},
      {.kind = OpKind::Conv2dGradWeight, .name = "conv2d_grad_weight", .arity = 2,
       .attrs = with(conv_attrs(), {"weight_shape", K::Ints}), .category = H, .shape = S::conv2d_grad_weight,
       .reference = eval::conv2d_grad_weight, .forward = kHeavy, .backward = kHeavy, .cost = conv_grad_weight_cost},
      // Each window's gradient goes to its FIRST maximal element in row-major window order (as PyTorch).
      {.kind = OpKind::MaxPool2dGrad, .name = "max_pool2d_grad", .arity = 2, .attrs = pool_attrs(), .category = H,
       .shape = S::max_pool2d_grad, .reference = eval::max_pool2d_grad,
       .forward = {1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"},
       .backward = kCopy, .cost = pool_grad_cost},
      {.kind = OpKind::AvgPool2dGrad, .name = "avg_pool2d_grad", .arity = 1,
       .attrs = with(pool_attrs(), {"input_shape", K::Ints}), .category = H, .shape = S::avg_pool2d_grad,
       .reference = eval::avg_pool2d_grad,
       .forward = {2e-6, 1e-14, "a sum of a few upstream gradients times 1/count"}, .backward = kCopy,
       .cost = pool_grad_cost},
      {.kind = OpKind::MaxPool2dGradArgmax, .name = "max_pool2d_grad_argmax", .arity = 2,
       .attrs = with(pool_attrs(), {"input_shape", K::Ints}), .category = H, .shape = S::max_pool2d_grad_argmax,
       .reference = eval::max_pool2d_grad_argmax,
       .forward = {1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"},
       .backward = kCopy, .cost = pool_grad_argmax_cost},
      {.kind = OpKind::CrossEntropyGrad, .name = "cross_entropy_grad", .arity = 3, .category = H,
       .shape = S::cross_entropy_grad, .reference = eval::cross_entropy_grad, .forward = kSoftmax,
       .backward = kSoftmax, .cost = cross_entropy_grad_cost},
  };
}

}  // namespace spire::graph::ops
