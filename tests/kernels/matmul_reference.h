// The float64 product the tensor-core matmul tests compare with, and the magnitude that bounds each element's error.
#pragma once

#include <cstdint>

#include "ir/graph/tensor.h"
#include "kernels/matmul_kernel.h"
#include "runtime/device.h"

namespace spire::heavy_test {

struct ReferenceProduct {
  graph::Tensor product;    // f64 [batch, m, n]
  graph::Tensor magnitude;  // f64 [batch, m, n]: sum over k of |a_ik b_kj|
};

// a is [batch, m, k] (or [k, m] when a_transposed, shared by every batch), b [batch, k, n] (or [batch, n, k] when
// b_transposed); b_shared, or b of k x n elements: one b ([k, n] or [n, k]) for every batch.
ReferenceProduct reference_product(const graph::Tensor& a, const graph::Tensor& b, int64_t batch, int64_t m, int64_t k,
                                   int64_t n, bool a_transposed, bool b_transposed, bool b_shared = false);

// Runs a product kernel on `dev` (its buffers: a and b, each the f16, bf16 or f32 operand as given; c, f32 [batch, m, n],
// poisoned before the run) and compares c with `want` within `bound` times each dot product's sum |a b| (1e-5: the f32
// bound of the sums here; TF32 operands: base/precision.h's precision_dot_bound). Returns "" when it matches, else the
// mismatches and the kernel's name.
std::string run_product(rt::Device& dev, lowering::heavy::HeavyKernel kernel, const graph::Tensor& a,
                        const graph::Tensor& b, int64_t batch, int64_t m, int64_t n, const ReferenceProduct& want,
                        double bound = 1e-5);

// Runs `kernel` (a 64 x 64 x 64 product of bf16 operands into f32: buffers a, b, c) on `dev` and returns what it
// threw, or "" when it ran: for tests that a device lacking the kernel's features refuses it by name.
std::string product_refusal(rt::Device& dev, lowering::heavy::HeavyKernel kernel);

}  // namespace spire::heavy_test
