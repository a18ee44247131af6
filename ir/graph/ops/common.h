// What the op family files (ir/graph/ops/*.cpp) share: the rule namespaces, the reference evaluator's helpers
// (eval_ops.h), and the tolerance reasons that several entries give. Internal to ir/graph/ops.
#pragma once

#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"
#include "ir/graph/op_table.h"

namespace spire::graph::ops {

namespace S = shape_rules;
namespace V = vjp_rules;
using K = AttrKind;
using kir::Val;

// Tolerance reasons (units: op_table.h's Tolerance). f32's unit roundoff is 6e-8, f64's 1.1e-16. Vulkan's
// precision rules allow 3 ulp + 2|x| ulp for exp, 3 ulp (or 2^-21 absolute near 1) for log, 2.5 ulp for
// division, and inherit tanh and pow from exp/log formulas; CUDA's fast paths are similar.
inline constexpr std::string_view kExactWhy = "one correctly rounded operation (or none): at most half an ulp";
inline constexpr std::string_view kCopyWhy = "moves values without arithmetic: exact";
inline constexpr std::string_view kSumBackwardWhy =
    "gradient is the upstream gradient summed over broadcast dims: a float sum";
inline constexpr std::string_view kTranscendentalWhy =
    "exp/log/tanh/pow are a few ulp on GPUs (Vulkan allows 3 + 2|x| ulp for exp on |x| <= 6); composed with "
    "a division and a multiply";
inline constexpr std::string_view kReductionWhy =
    "float sums of up to a few thousand terms; error grows with the number of terms (about sqrt(n) ulp of "
    "the partial sums for a tree)";
inline constexpr std::string_view kHeavyWhy =
    "dot products of up to a few hundred terms in the device's precision, then an epilogue";
inline constexpr std::string_view kLogSumExpWhy = "exp, a sum over the row and a division (or log): a few ulp of each";

inline constexpr Tolerance kExact{1e-6, 1e-14, kExactWhy};
inline constexpr Tolerance kCopy{0, 0, kCopyWhy};
inline constexpr Tolerance kSumBackward{1e-5, 1e-13, kSumBackwardWhy};
inline constexpr Tolerance kTranscendental{1e-5, 1e-12, kTranscendentalWhy};
inline constexpr Tolerance kReduction{1e-5, 1e-13, kReductionWhy};
inline constexpr Tolerance kHeavy{1e-5, 1e-13, kHeavyWhy};
inline constexpr Tolerance kLogSumExp{1e-5, 1e-12, kLogSumExpWhy};

// An op's attributes and one more (a gradient op's shape of what it differentiates).
inline std::vector<AttrSpec> plus(std::vector<AttrSpec> attrs, AttrSpec more) {
  attrs.push_back(std::move(more));
  return attrs;
}

// A product's cost: K multiply-adds per result element (K: the first input's last size, 2MKN per matrix); the bytes
// are its inputs' (an int8 weight's a quarter of an f32 one's) and its result's.
inline OpCost product_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * n.type.numel() * in[0].shape.back(), io_bytes(n, in)};
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline Val sigmoid_of(Val x) { return 1.0 / (1.0 + kir::exp(-x)); }

// The input of the node whose gradient a unary op's VJP forms (copied: appending to the graph moves node storage).
inline Value input_of(const VjpContext& c) { return c.g.node(c.out).inputs[0]; }

// A stored bool (u32 0/1) as a register bool, and back.
inline Val as_bool(Val u) { return u != 0u; }
inline Val from_bool(kir::KernelBuilder& kb, Val b) { return kir::select(b, kb.u32(1), kb.u32(0)); }

// d gelu(x) / dx of the tanh form, on devices and in double (ops/unary.cpp; used by gelu_grad).
Val gelu_derivative(Val x);
double gelu_derivative(double x);

}  // namespace spire::graph::ops
