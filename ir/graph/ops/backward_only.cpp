// The activations' backward-only ops: what the VJP rules of relu, silu and gelu emit. Ordinary pointwise ops in
// every other way, but not differentiable themselves (no double backward). The op harness checks them directly
// as forward ops. A heavy op's gradient op lives in its family file (ops/conv2d_ops.cpp, ...).
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {
// (grad, x) pairs: grad is the upstream gradient, x the activation's input (relu: its result, same sign).
TestDomain grad_domain(double lo, double hi) {
  return {.generate = true, .inputs = {{-1, 1}, {lo, hi}}, .backward = false, .broadcast = false};
}
}  // namespace

std::vector<OpInfo> backward_only() {
  const OpCategory P = OpCategory::Pointwise;
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
  };
}

}  // namespace spire::graph::ops
