// Layout ops: reshape and flatten (the row-major data is unchanged), permute and broadcast_to (a strided read
// of the input in the output's row-major order).
#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

Tensor reshape(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  if (x.numel() != n.type.numel())
    fail(n, fmt::format("cannot reshape {} ({} elements) to {}", x.type().to_string(), x.numel(),
                        n.type.to_string()));
  Tensor out = x;
  out.dtype = n.type.dtype;
  out.shape = n.type.shape;
  return out;
}

Tensor permute(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  const std::vector<int64_t>& perm = n.attrs.get_ints("perm");
  if (perm.size() != x.shape.size()) fail(n, fmt::format("perm of size {} for rank {}", perm.size(), x.rank()));
  // Result dimension i is input dimension perm[i]: walking the result row-major reads the input with the
  // input's strides permuted.
  const std::vector<int64_t> in_strides = row_major_strides(x.shape);
  std::vector<int64_t> read(perm.size());
  std::vector<char> seen(perm.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= int64_t(perm.size()) || seen[size_t(p)])
      fail(n, fmt::format("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), perm.size() - 1));
    seen[size_t(p)] = 1;
    read[i] = in_strides[size_t(p)];
  }
  Tensor out = result_of(n);
  for_each_index<1>(out.shape, {&read},
                    [&](int64_t i, const std::array<int64_t, 1>& o) { out.data[size_t(i)] = x.data[size_t(o[0])]; });
  return out;
}

Tensor broadcast_to(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  Tensor out = result_of(n);
  if (x.shape.size() > out.shape.size() || broadcast_shapes(x.shape, out.shape) != out.shape)
    fail(n, fmt::format("cannot broadcast {} to {}", x.type().to_string(), shape_to_string(out.shape)));
  const std::vector<int64_t> read = broadcast_strides(x.shape, out.shape);
  for_each_index<1>(out.shape, {&read},
                    [&](int64_t i, const std::array<int64_t, 1>& o) { out.data[size_t(i)] = x.data[size_t(o[0])]; });
  return out;
}

}  // namespace spire::graph::eval
