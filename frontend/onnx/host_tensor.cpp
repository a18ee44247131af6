#include "frontend/onnx/host_tensor.h"
#include "base/axis_rows.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace spire::onnx_import {

using graph::DType;
using graph::Shape;
using graph::Tensor;

int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension " + std::to_string(d));
    if (d == 0) return 0;
    if (n > kMaxHostElements / d)
      throw std::invalid_argument("constant of shape " + graph::shape_to_string(shape) + " is too large to fold");
    n *= d;
  }
  return n;
}

int64_t to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

namespace {

Tensor make(DType dtype, const Shape& shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.assign(size_t(checked_numel(shape)), 0.0);
  return t;
}

// The flat index into x (of shape xs, broadcast against `shape`) of each element of `shape`.
std::vector<int64_t> broadcast_index(const Shape& xs, const Shape& shape) {
  const int64_t n = checked_numel(shape);
  const size_t rank = shape.size();
  if (xs.size() > rank) throw std::invalid_argument("cannot broadcast " + graph::shape_to_string(xs) + " to " +
                                                    graph::shape_to_string(shape));
  const size_t lead = rank - xs.size();
  std::vector<int64_t> xstride(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > lead;) {
    const int64_t xd = xs[d - lead];
    if (xd != 1 && xd != shape[d])
      throw std::invalid_argument("cannot broadcast " + graph::shape_to_string(xs) + " to " +
                                  graph::shape_to_string(shape));
    xstride[d] = xd == 1 ? 0 : s;
    s *= xd;
  }
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * xstride[d];
    out[size_t(i)] = off;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

Tensor host_binary(const Tensor& a, const Tensor& b, DType out, const std::function<double(double, double)>& f) {
  auto shape = graph::broadcast_shapes(a.shape, b.shape);
  if (!shape) throw std::invalid_argument("shapes " + graph::shape_to_string(a.shape) + " and " +
                                          graph::shape_to_string(b.shape) + " do not broadcast");
  Tensor r = make(out, *shape);
  const auto ia = broadcast_index(a.shape, *shape), ib = broadcast_index(b.shape, *shape);
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = graph::round_to(out, f(a.data[size_t(ia[i])], b.data[size_t(ib[i])]));
  return r;
}

Tensor host_where(const Tensor& c, const Tensor& a, const Tensor& b) {
  auto s1 = graph::broadcast_shapes(c.shape, a.shape);
  auto shape = s1 ? graph::broadcast_shapes(*s1, b.shape) : std::nullopt;
  if (!shape) throw std::invalid_argument("where: shapes do not broadcast");
  Tensor r = make(a.dtype, *shape);
  const auto ic = broadcast_index(c.shape, *shape), ia = broadcast_index(a.shape, *shape),
             ib = broadcast_index(b.shape, *shape);
  for (size_t i = 0; i < r.data.size(); ++i)
    r.data[i] = c.data[size_t(ic[i])] != 0 ? a.data[size_t(ia[i])] : b.data[size_t(ib[i])];
  return r;
}

Tensor host_broadcast_to(const Tensor& x, const Shape& shape) {
  Tensor r = make(x.dtype, shape);
  const auto ix = broadcast_index(x.shape, shape);
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = x.data[size_t(ix[i])];
  return r;
}

Tensor host_permute(const Tensor& x, const std::vector<int64_t>& perm) {
  const size_t rank = x.shape.size();
  if (perm.size() != rank) throw std::invalid_argument("perm has the wrong length");
  std::vector<bool> seen(rank, false);
  Shape shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || size_t(perm[d]) >= rank || seen[size_t(perm[d])]) throw std::invalid_argument("bad perm");
    seen[size_t(perm[d])] = true;
    shape[d] = x.shape[size_t(perm[d])];
  }
  Tensor r = make(x.dtype, shape);
  const auto xstr = x.strides();
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < r.data.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * xstr[size_t(perm[d])];
    r.data[i] = x.data[size_t(off)];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

Tensor host_strided_slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                          const Shape& counts) {
  const size_t rank = x.shape.size();
  if (starts.size() != rank || steps.size() != rank || counts.size() != rank)
    throw std::invalid_argument("slice: wrong number of axes");
  for (size_t d = 0; d < rank; ++d) {
    if (counts[d] == 0) continue;
    const int64_t last = starts[d] + steps[d] * (counts[d] - 1);
    if (starts[d] < 0 || starts[d] >= x.shape[d] || last < 0 || last >= x.shape[d])
      throw std::invalid_argument("slice: out of range");
  }
  Tensor r = make(x.dtype, counts);
  const auto xstr = x.strides();
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < r.data.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (starts[d] + steps[d] * idx[d]) * xstr[d];
    r.data[i] = x.data[size_t(off)];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < counts[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

Tensor host_concat(const std::vector<const Tensor*>& xs, int64_t axis) {
  if (xs.empty()) throw std::invalid_argument("concat of nothing");
  Shape shape = xs[0]->shape;
  const size_t rank = shape.size();
  if (axis < 0 || size_t(axis) >= rank) throw std::invalid_argument("concat: bad axis");
  shape[size_t(axis)] = 0;
  for (const Tensor* x : xs) {
    if (x->shape.size() != rank || x->dtype != xs[0]->dtype) throw std::invalid_argument("concat: inputs differ");
    for (size_t d = 0; d < rank; ++d)
      if (d != size_t(axis) && x->shape[d] != xs[0]->shape[d]) throw std::invalid_argument("concat: shapes differ");
    shape[size_t(axis)] += x->shape[size_t(axis)];
  }
  Tensor r = make(xs[0]->dtype, shape);
  const auto [outer, joined, inner] = axis_rows(shape, axis, "concat");
  size_t o = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (const Tensor* x : xs) {
      const int64_t block = x->shape[size_t(axis)] * inner;
      for (int64_t k = 0; k < block; ++k) r.data[o++] = x->data[size_t(i * block + k)];
    }
  return r;
}

Tensor host_gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  const size_t rank = x.shape.size();
  if (axis < 0 || size_t(axis) >= rank) throw std::invalid_argument("gather: bad axis");
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  Tensor r = make(x.dtype, shape);
  const auto [outer, dim, inner] = axis_rows(x.shape, axis, "gather");
  size_t o = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (double ind : indices.data) {
      const int64_t k = to_int64(ind);
      if (k < 0 || k >= dim) throw std::invalid_argument("gather: index " + std::to_string(k) + " out of range");
      for (int64_t j = 0; j < inner; ++j) r.data[o++] = x.data[size_t((i * dim + k) * inner + j)];
    }
  return r;
}

Tensor host_cast(const Tensor& x, DType to) {
  Tensor r = x;
  r.dtype = to;
  for (double& v : r.data) {
    if (to == DType::Bool) v = v != 0 ? 1 : 0;
    else if (graph::is_int(to)) v = std::isfinite(v) ? std::trunc(v) : 0;
  }
  return r.round_to_dtype();
}

}  // namespace spire::onnx_import
