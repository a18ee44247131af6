// Host-side tensor arithmetic for values known at import: the constant folder behind shape subgraphs
// (Shape -> Gather -> Concat -> Reshape, as PyTorch exports them) and constant initializers. Values are
// graph::Tensor (doubles that hold every int32/float exactly and int64 up to 2^53). Every function checks
// its arguments and throws std::invalid_argument with the problem; sizes are capped so a hostile model
// cannot make the importer allocate without bound.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph/tensor.h"

namespace spire::onnx_import {

// The largest host constant the folder builds (elements).
inline constexpr int64_t kMaxHostElements = int64_t(1) << 27;

// The largest initializer the importer reads (elements): what 32-bit indices reach.
inline constexpr int64_t kMaxWeightElements = int64_t(1) << 32;

// Product of the dims, refusing negative dims and products beyond kMaxHostElements.
int64_t checked_numel(const graph::Shape& shape);

// A double holding an integer, as int64 without undefined behaviour (clamped to the int64 range).
int64_t to_int64(double v);

// numpy broadcasting of a and b, f(a_i, b_i) elementwise; the result has dtype `out` (rounded to it).
graph::Tensor host_binary(const graph::Tensor& a, const graph::Tensor& b, graph::DType out,
                          const std::function<double(double, double)>& f);
graph::Tensor host_where(const graph::Tensor& c, const graph::Tensor& a, const graph::Tensor& b);
graph::Tensor host_broadcast_to(const graph::Tensor& x, const graph::Shape& shape);
graph::Tensor host_permute(const graph::Tensor& x, const std::vector<int64_t>& perm);
// Elements [starts[d], starts[d] + steps[d] * k, ...) along each dim d, `counts[d]` of them.
graph::Tensor host_strided_slice(const graph::Tensor& x, const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& steps, const graph::Shape& counts);
graph::Tensor host_concat(const std::vector<const graph::Tensor*>& xs, int64_t axis);
// numpy take(x, indices, axis): indices already normalised to [0, dim).
graph::Tensor host_gather(const graph::Tensor& x, const graph::Tensor& indices, int64_t axis);
graph::Tensor host_cast(const graph::Tensor& x, graph::DType to);

}  // namespace spire::onnx_import
