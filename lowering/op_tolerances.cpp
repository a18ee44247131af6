// The tolerance table. Units: max-norm relative error (op_tolerances.h). f32's unit roundoff is 6e-8, f64's
// 1.1e-16. Vulkan's precision rules allow 3 ulp + 2|x| ulp for exp, 3 ulp (or 2^-21 absolute near 1) for
// log, 2.5 ulp for division, and inherit tanh and pow from exp/log formulas; CUDA's fast paths are similar.
// Each bound is about ten times what those rules and the op's arithmetic give, so a correct kernel passes on
// every conforming device while a wrong index, a missed element or a wrong formula (errors of order 1e-2 to 1)
// cannot.
#include "lowering/op_tolerances.h"

#include <array>

namespace spire::lowering {

namespace {

using K = graph::OpKind;

struct Entry {
  Tolerance forward;
  Tolerance backward;
};

// Shared reasons.
constexpr std::string_view kExact = "one correctly rounded operation (or none): at most half an ulp";
constexpr std::string_view kCopy = "moves values without arithmetic: exact";
constexpr std::string_view kSumBackward = "gradient is the upstream gradient summed over broadcast dims: a float sum";
constexpr std::string_view kTranscendental =
    "exp/log/tanh/pow are a few ulp on GPUs (Vulkan allows 3 + 2|x| ulp for exp on |x| <= 6); composed with "
    "a division and a multiply";
constexpr std::string_view kReduction =
    "float sums of up to a few thousand terms; error grows with the number of terms (about sqrt(n) ulp of "
    "the partial sums for a tree)";
constexpr std::string_view kHeavy =
    "dot products of up to a few hundred terms in the device's precision, then an epilogue";
constexpr std::string_view kSoftmax = "exp, a sum over the row and a division (or log): a few ulp of each";

std::array<Entry, graph::kNumOps> build() {
  std::array<Entry, graph::kNumOps> t{};
  auto set = [&](K k, Tolerance fwd, Tolerance bwd) { t[size_t(k)] = {fwd, bwd}; };
  const Tolerance exact{1e-6, 1e-14, kExact}, copy{0, 0, kCopy}, sum_bwd{1e-5, 1e-13, kSumBackward},
      trans{1e-5, 1e-12, kTranscendental}, red{1e-5, 1e-13, kReduction}, heavy{1e-5, 1e-13, kHeavy},
      soft{1e-5, 1e-12, kSoftmax};
  // Leaves: inputs, parameters and states are uploaded, not computed.
  set(K::Input, copy, copy);
  set(K::Parameter, copy, copy);
  set(K::State, copy, copy);
  // The constant cases read a constant through add, mul (folded into the kernel) and matmul (a buffer).
  set(K::Constant, {1e-5, 1e-13, "read through add, mul and matmul: matmul's bound (a dot product of 33 terms)"},
      {1e-5, 1e-13, "the gradients of those ops: matmul's bound"});
  // Binary: one rounded op forward; backward also sums over broadcast dims.
  set(K::Add, exact, sum_bwd);
  set(K::Sub, exact, sum_bwd);
  set(K::Mul, exact, sum_bwd);
  set(K::Div, {2e-6, 1e-14, "division is 2.5 ulp on Vulkan (not correctly rounded on GPUs)"},
      {2e-5, 1e-13, "a / b^2 and sums over broadcast dims, each division 2.5 ulp"});
  set(K::Pow, {1e-5, 1e-12, "pow = exp(b log a) on GPUs: the error of log is multiplied by |b log a|"},
      {2e-5, 1e-12, "pow, log and products of them, summed over broadcast dims"});
  set(K::Maximum, exact, sum_bwd);
  set(K::Minimum, exact, sum_bwd);
  set(K::Compare, copy, copy);
  // Unary.
  set(K::Neg, exact, exact);
  set(K::Exp, trans, trans);
  set(K::Log, {1e-5, 1e-12, "log is 3 ulp, or 2^-21 absolute for arguments near 1"}, trans);
  set(K::Sqrt, {2e-6, 1e-14, "sqrt is 3 ulp on Vulkan (an inverse square root and a multiply)"},
      {1e-5, 1e-13, "0.5 / sqrt(x): a square root and a division"});
  set(K::Tanh, trans, trans);
  set(K::Sigmoid, trans, trans);
  set(K::Relu, exact, exact);
  set(K::Silu, trans, trans);
  set(K::Gelu, {2e-5, 1e-12, "tanh of a cubic, where the cubic's rounding is amplified by up to 3x"},
      {2e-5, 1e-12, "the derivative of the tanh form: tanh, its square and a cubic"});
  set(K::Where, copy, sum_bwd);
  set(K::Cast, {1e-7, 0, "float -> float rounds once (f64 -> f32); float -> int truncates exactly"}, exact);
  // Reductions.
  set(K::Sum, red, copy);
  set(K::Mean, red, exact);
  set(K::Max, copy, copy);
  // Layout: pure data movement forward; backward of sum_to is a broadcast (exact), of broadcast a sum.
  set(K::Reshape, copy, copy);
  set(K::Flatten, copy, copy);
  set(K::Permute, copy, copy);
  set(K::BroadcastTo, copy, red);
  set(K::SumTo, red, copy);
  // Heavy ops.
  set(K::Matmul, heavy, heavy);
  set(K::Conv2d, heavy, heavy);
  set(K::MaxPool2d, copy, {1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"});
  set(K::AvgPool2d, {2e-6, 1e-14, "a sum of a few window elements times 1/count"}, red);
  set(K::Softmax, soft, {2e-5, 1e-12, "softmax, then y * (g - sum(g * y)): a row sum and products"});
  set(K::LogSoftmax, soft, {2e-5, 1e-12, "exp of log_softmax and a row sum of the gradient"});
  set(K::CrossEntropy, soft, soft);
  set(K::ReluGrad, copy, copy);
  set(K::SiluGrad, trans, trans);
  set(K::GeluGrad, {2e-5, 1e-12, "the derivative of the tanh form: tanh, its square and a cubic"}, trans);
  set(K::Conv2dGradInput, heavy, heavy);
  set(K::Conv2dGradWeight, heavy, heavy);
  set(K::MaxPool2dGrad, {1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"},
      copy);
  set(K::AvgPool2dGrad, {2e-6, 1e-14, "a sum of a few upstream gradients times 1/count"}, copy);
  set(K::CrossEntropyGrad, soft, soft);
  return t;
}

}  // namespace

const Tolerance& op_tolerance(graph::OpKind op, bool backward) {
  static const std::array<Entry, graph::kNumOps> table = build();
  const Entry& e = table[size_t(op)];
  return backward ? e.backward : e.forward;
}

double tolerance_for(graph::OpKind op, bool backward, graph::DType dtype) {
  if (!graph::is_float(dtype)) return 0;
  const Tolerance& t = op_tolerance(op, backward);
  return dtype == graph::DType::F64 ? t.f64 : t.f32;
}

}  // namespace spire::lowering
