// Indexing ops, each wholly defined here (shape rule, VJP, float64 reference): slice and its adjoint pad,
// concat, gather and its adjoint gather_grad, write_at. Their kernels are lowering/lower_indexing.cpp. What ONNX's Slice,
// Pad, Concat, Split and Gather import to.
//
//   slice(x; starts, steps, shape)        y[i] = x[starts + i * steps] per dimension (steps may be negative)
//   pad(x; starts, steps, shape, value)   y of `shape` = value, then y[starts + i * steps] = x[i] per dimension
//   concat(x0, x1, ...; axis)             the inputs one after another along axis
//   gather(data, indices; axis)           data[.., indices[k] (negative counts from the end), ..]
//   gather_grad(grad, indices; axis, shape)  the adjoint of gather: grad summed into the rows indices name
//   write_at(data, row, index; axis)      data with its slice index[0] along axis replaced by row
#include "ir/graph/ops/common.h"
#include "base/axis_rows.h"

namespace spire::graph::ops {

namespace {

// ---- shape rules

// Every dimension of `small` embedded in `big` at starts + i * steps stays inside big.
void check_embedding(const ShapeContext& c, const Shape& small, const Shape& big, const char* what) {
  const auto& starts = c.attrs.get_ints("starts");
  const auto& steps = c.attrs.get_ints("steps");
  if (starts.size() != big.size() || steps.size() != big.size() || small.size() != big.size())
    c.fail(fmt::format("starts {} and steps {} need one entry per dimension of {}", shape_to_string(starts),
                       shape_to_string(steps), shape_to_string(big)));
  for (size_t d = 0; d < big.size(); ++d) {
    if (steps[d] == 0) c.fail(fmt::format("steps {}: a step of 0 in dimension {}", shape_to_string(steps), d));
    if (small[d] == 0) continue;
    const int64_t first = starts[d], last = starts[d] + (small[d] - 1) * steps[d];
    if (first < 0 || first >= big[d] || last < 0 || last >= big[d])
      c.fail(fmt::format("{}: dimension {} runs from {} to {} with step {}, outside 0..{}", what, d, first, last,
                         steps[d], big[d] - 1));
  }
}

TensorType slice_shape(const ShapeContext& c) {
  const Shape shape = c.attrs.get_ints("shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("attribute shape has a negative dimension: " + shape_to_string(shape));
  check_embedding(c, shape, c.inputs[0].shape, "the slice reads outside the input");
  return {c.inputs[0].dtype, shape};
}

TensorType pad_shape(const ShapeContext& c) {
  const Shape shape = c.attrs.get_ints("shape");
  for (int64_t d : shape)
    if (d < 0) c.fail("attribute shape has a negative dimension: " + shape_to_string(shape));
  check_embedding(c, c.inputs[0].shape, shape, "the input lands outside the result");
  return {c.inputs[0].dtype, shape};
}

int64_t axis_of(const ShapeContext& c, int64_t rank) {
  const int64_t axis = c.attrs.get_int("axis");
  if (axis < 0 || axis >= rank) c.fail(fmt::format("axis {} is not a dimension of a rank-{} input", axis, rank));
  return axis;
}

TensorType concat_shape(const ShapeContext& c) {
  const TensorType& first = c.inputs[0];
  const int64_t axis = axis_of(c, first.rank());
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const TensorType& t = c.inputs[i];
    if (t.dtype != first.dtype || t.rank() != first.rank())
      c.fail(fmt::format("{} differs in dtype or rank from {}", c.describe_input(i), c.describe_input(0)));
    for (int64_t d = 0; d < first.rank(); ++d)
      if (d != axis && t.shape[size_t(d)] != first.shape[size_t(d)])
        c.fail(fmt::format("{} differs from {} outside axis {}", c.describe_input(i), c.describe_input(0), axis));
    out[size_t(axis)] += t.shape[size_t(axis)];
  }
  return {first.dtype, out};
}

void require_indices(const ShapeContext& c, size_t i) {
  if (!is_int(c.inputs[i].dtype)) c.fail(fmt::format("{} (the indices) must be i32 or i64", c.describe_input(i)));
}

TensorType gather_shape(const ShapeContext& c) {
  require_indices(c, 1);
  const Shape& data = c.inputs[0].shape;
  const int64_t axis = axis_of(c, int64_t(data.size()));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), c.inputs[1].shape.begin(), c.inputs[1].shape.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {c.inputs[0].dtype, out};
}

// write_at(data, row, index; axis): data with its slice at index[0] along axis replaced by row (size 1 there).
TensorType write_at_shape(const ShapeContext& c) {
  require_indices(c, 2);
  const TensorType& data = c.inputs[0];
  const int64_t axis = axis_of(c, data.rank());
  Shape want = data.shape;
  want[size_t(axis)] = 1;
  if (c.inputs[1].dtype != data.dtype || c.inputs[1].shape != want)
    c.fail(fmt::format("{} should be {} {}: data's shape with 1 along axis {}", c.describe_input(1),
                       dtype_name(data.dtype), shape_to_string(want), axis));
  if (c.inputs[2].numel() != 1) c.fail(fmt::format("{} should hold one index", c.describe_input(2)));
  return data;
}

TensorType gather_grad_shape(const ShapeContext& c) {
  require_indices(c, 1);
  const Shape data = c.attrs.get_ints("shape");
  const int64_t axis = axis_of(c, int64_t(data.size()));
  Shape expected(data.begin(), data.begin() + axis);
  expected.insert(expected.end(), c.inputs[1].shape.begin(), c.inputs[1].shape.end());
  expected.insert(expected.end(), data.begin() + axis + 1, data.end());
  if (c.inputs[0].shape != expected)
    c.fail(fmt::format("{} should be {}: gather's result for data {} and {}", c.describe_input(0),
                       shape_to_string(expected), shape_to_string(data), c.describe_input(1)));
  return {c.inputs[0].dtype, data};
}

// ---- VJPs

std::vector<Value> slice_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const Shape in = c.g.type(n.inputs[0]).shape;
  return {c.g.add_node(op_from_name("pad").value(), {c.grad_out},
                       {{"starts", n.attrs.get_ints("starts")}, {"steps", n.attrs.get_ints("steps")},
                        {"shape", in}, {"value", 0.0}})};
}

std::vector<Value> pad_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const Shape in = c.g.type(n.inputs[0]).shape;
  return {c.g.add_node(op_from_name("slice").value(), {c.grad_out},
                       {{"starts", n.attrs.get_ints("starts")}, {"steps", n.attrs.get_ints("steps")}, {"shape", in}})};
}

std::vector<Value> concat_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const size_t axis = size_t(n.attrs.get_int("axis"));
  const size_t rank = n.type.shape.size();
  std::vector<Value> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Shape in = c.g.type(n.inputs[i]).shape;
    if (c.wants(i)) {
      std::vector<int64_t> starts(rank, 0);
      starts[axis] = offset;
      grads.push_back(c.g.add_node(op_from_name("slice").value(), {c.grad_out},
                                   {{"starts", starts}, {"steps", std::vector<int64_t>(rank, 1)}, {"shape", in}}));
    } else {
      grads.push_back(Value{});
    }
    offset += in[axis];
  }
  return grads;
}

std::vector<Value> gather_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const Shape data = c.g.type(n.inputs[0]).shape;
  Value g0;
  if (c.wants(0))
    g0 = c.g.add_node(op_from_name("gather_grad").value(), {c.grad_out, n.inputs[1]},
                      {{"axis", n.attrs.get_int("axis")}, {"shape", data}});
  return {g0, Value{}};
}

// ---- float64 references

// Calls f(flat, index) for every element of `shape` in row-major order.
template <class F>
void for_each_element(const Shape& shape, F&& f) {
  const int64_t total = num_elements(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    f(flat, index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// The flat index in `big` of `small`'s element `index` embedded at starts + index * steps.
int64_t embedded(const Node& n, const Shape& big, const std::vector<int64_t>& index) {
  const auto& starts = n.attrs.get_ints("starts");
  const auto& steps = n.attrs.get_ints("steps");
  const std::vector<int64_t> strides = eval::row_major_strides(big);
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) flat += (starts[d] + index[d] * steps[d]) * strides[d];
  return flat;
}

Tensor slice_ref(const Node& n, std::span<const Tensor* const> in) {
  const Tensor& x = *in[0];
  Tensor out = eval::result_of(n);
  for_each_element(out.shape, [&](int64_t i, const std::vector<int64_t>& index) {
    out.data[size_t(i)] = x.data[size_t(embedded(n, x.shape, index))];
  });
  return out;
}

Tensor pad_ref(const Node& n, std::span<const Tensor* const> in) {
  const Tensor& x = *in[0];
  Tensor out(n.type.dtype, n.type.shape, n.attrs.get_float("value"));
  for_each_element(x.shape, [&](int64_t i, const std::vector<int64_t>& index) {
    out.data[size_t(embedded(n, out.shape, index))] = x.data[size_t(i)];
  });
  return out;
}

Tensor concat_ref(const Node& n, std::span<const Tensor* const> in) {
  const size_t axis = size_t(n.attrs.get_int("axis"));
  Tensor out = eval::result_of(n);
  const std::vector<int64_t> strides = eval::row_major_strides(out.shape);
  int64_t offset = 0;
  for (const Tensor* x : in) {
    for_each_element(x->shape, [&](int64_t i, const std::vector<int64_t>& index) {
      int64_t flat = 0;
      for (size_t d = 0; d < index.size(); ++d) flat += (index[d] + (d == axis ? offset : 0)) * strides[d];
      out.data[size_t(flat)] = x->data[size_t(i)];
    });
    offset += x->shape[axis];
  }
  return out;
}

// gather's and gather_grad's shared walk: (outer, k, inner) over the gathered shape, and the data row each
// index names (negative indices count from the end; an index outside the axis is an error, as in ONNX).
template <class F>
void walk_gather(const Node& n, const Shape& data, const Tensor& indices, F&& f) {
  const auto [outer, rows, inner] = axis_rows(data, n.attrs.get_int("axis"), "gather");
  const int64_t count = indices.numel();
  for (int64_t k = 0; k < count; ++k) {
    int64_t row = int64_t(indices.data[size_t(k)]);
    if (row < 0) row += rows;
    if (row < 0 || row >= rows)
      eval::fail(n, fmt::format("index {} (element {}) is outside an axis of size {}", indices.data[size_t(k)], k, rows));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) f((o * count + k) * inner + i, (o * rows + row) * inner + i);
  }
}

Tensor gather_ref(const Node& n, std::span<const Tensor* const> in) {
  Tensor out = eval::result_of(n);
  walk_gather(n, in[0]->shape, *in[1], [&](int64_t o, int64_t d) { out.data[size_t(o)] = in[0]->data[size_t(d)]; });
  return out;
}

// The data's gradient is the result's with the written slice zeroed (write_at of zeros); the row's is that slice
// (gather at the index, shaped as the row).
std::vector<Value> write_at_vjp(VjpContext& c) {
  Graph& g = c.g;
  const Node& n = g.node(c.out);
  const Value index = n.inputs[2];
  const int64_t axis = n.attrs.get_int("axis");
  const TensorType row = g.type(n.inputs[1]);
  std::vector<Value> grads(3);
  if (c.wants(0))
    grads[0] = g.op("write_at", {c.grad_out, g.constant(0.0, row.dtype, row.shape), index}, {{"axis", axis}});
  if (c.wants(1)) grads[1] = g.reshape(g.op("gather", {c.grad_out, index}, {{"axis", axis}}), row.shape);
  return grads;
}

Tensor write_at_ref(const Node& n, std::span<const Tensor* const> in) {
  const Tensor& data = *in[0];
  const auto [outer, rows, inner] = axis_rows(data.shape, n.attrs.get_int("axis"), graph::op_name(n.op));
  const int64_t index = int64_t(in[2]->data[0]);
  if (index < 0 || index >= rows)
    eval::fail(n, fmt::format("index {} is outside an axis of size {}", in[2]->data[0], rows));
  Tensor out = data;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) out.data[size_t((o * rows + index) * inner + i)] = in[1]->data[size_t(o * inner + i)];
  return out;
}

Tensor gather_grad_ref(const Node& n, std::span<const Tensor* const> in) {
  Tensor out = eval::result_of(n);
  walk_gather(n, out.shape, *in[1], [&](int64_t g, int64_t d) { out.data[size_t(d)] += in[0]->data[size_t(g)]; });
  return out;
}

}  // namespace

std::vector<OpInfo> indexing() {
  const OpCategory L = OpCategory::Layout;
  const Tolerance scatter_sum{1e-5, 1e-13, "each row sums the gradients of the positions that read it: a float sum"};
  return {
      {.name = "slice", .arity = 1, .attrs = {{"starts", K::Ints}, {"steps", K::Ints}, {"shape", K::Ints}},
       .category = L, .shape = slice_shape, .vjp = slice_vjp, .reference = slice_ref, .forward = kCopy,
       .backward = kCopy},
      {.name = "pad", .arity = 1,
       .attrs = {{"starts", K::Ints}, {"steps", K::Ints}, {"shape", K::Ints}, {"value", K::Float}}, .category = L,
       .shape = pad_shape, .vjp = pad_vjp, .reference = pad_ref, .forward = kCopy, .backward = kCopy},
      {.name = "concat", .arity = -1, .attrs = {{"axis", K::Int}}, .category = L, .shape = concat_shape,
       .vjp = concat_vjp, .reference = concat_ref, .forward = kCopy, .backward = kCopy},
      {.name = "gather", .arity = 2, .attrs = {{"axis", K::Int}}, .category = L, .shape = gather_shape,
       .vjp = gather_vjp, .reference = gather_ref, .forward = kCopy, .backward = scatter_sum},
      {.name = "gather_grad", .arity = 2, .attrs = {{"axis", K::Int}, {"shape", K::Ints}}, .category = L,
       .shape = gather_grad_shape, .reference = gather_grad_ref, .forward = scatter_sum, .backward = kCopy},
      // A decoder's key/value cache written at the token's position (tools/spire/decoder_generate.cpp): where the
      // data is a state this replaces, its lowering writes the row in place (lower_indexing.cpp).
      {.name = "write_at", .arity = 3, .attrs = {{"axis", K::Int}}, .category = L, .shape = write_at_shape,
       .vjp = write_at_vjp, .reference = write_at_ref, .forward = kCopy, .backward = kCopy},
  };
}

}  // namespace spire::graph::ops
