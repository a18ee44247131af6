// Indexing ops: slices with positive, negative and skipping steps; pads (constant fill, strided embeddings);
// concat of several and of one input; gather along leading and middle axes with negative and repeated indices
// (so its VJP, gather_grad, sums several gradients into one row).
#include "op_harness/cases.h"

namespace spire::harness {

namespace {

graph::Attrs embedding(std::vector<int64_t> starts, std::vector<int64_t> steps, Shape shape) {
  return {{"starts", std::move(starts)}, {"steps", std::move(steps)}, {"shape", std::move(shape)}};
}

void add_op(CaseList& cl, const char* op, std::vector<OpInput> inputs, graph::Attrs attrs, const std::string& label,
            bool backward = true) {
  const OpKind kind = *graph::op_from_name(op);
  cl.add(kind, std::move(inputs), [kind, attrs](Graph& g, const std::vector<Value>& x) { return g.add_node(kind, x, attrs); },
         label, backward);
}

}  // namespace

void indexing_cases(CaseList& cl) {
  auto slice = [&](OpInput x, std::vector<int64_t> starts, std::vector<int64_t> steps, Shape shape) {
    std::string label = fmt::format("starts={} steps={} shape={}", ints(starts), ints(steps), ints(shape));
    add_op(cl, "slice", {std::move(x)}, embedding(starts, steps, shape), label);
  };
  slice(f32({7, 33}), {1, 2}, {1, 3}, {5, 10});
  slice(f32({2, 3, 5}), {1, 2, 4}, {1, -1, -2}, {1, 3, 3});
  slice(f32({257}), {0}, {1}, {257});
  slice(f64({7, 33}), {6, 0}, {-1, 1}, {7, 33});
  slice(in(DType::I64, {4, 9}, Draw::Integers, -50, 50), {0, 8}, {2, -4}, {2, 3});

  auto pad = [&](OpInput x, std::vector<int64_t> starts, std::vector<int64_t> steps, Shape shape, double value) {
    graph::Attrs a = embedding(starts, steps, shape);
    a.set("value", value);
    add_op(cl, "pad", {std::move(x)}, a,
           fmt::format("starts={} steps={} shape={} value={}", ints(starts), ints(steps), ints(shape), value));
  };
  pad(f32({7, 33}), {1, 0}, {1, 1}, {9, 35}, 0.5);
  pad(f32({3, 5}), {0, 4}, {2, -1}, {5, 5}, 0);
  pad(f32({2, 3, 4, 4}), {0, 0, 1, 1}, {1, 1, 1, 1}, {2, 3, 6, 6}, 0);
  pad(f64({7, 33}), {2, 3}, {1, 1}, {9, 40}, -1);
  pad(in(DType::I32, {5}, Draw::Integers, -9, 9), {1}, {1}, {8}, 7);

  auto concat = [&](std::vector<OpInput> xs, int64_t axis) {
    add_op(cl, "concat", std::move(xs), {{"axis", axis}}, fmt::format("axis={}", axis));
  };
  concat({f32({2, 3}), f32({2, 5}), f32({2, 1})}, 1);
  concat({f32({7, 33}), f32({1, 33})}, 0);
  concat({f32({2, 3, 4}), f32({2, 2, 4})}, 1);
  concat({f32({257})}, 0);
  concat({f64({3, 2}), f64({3, 4})}, 1);
  concat({in(DType::I64, {4}, Draw::Integers, -9, 9), in(DType::I64, {3}, Draw::Integers, -9, 9)}, 0);

  auto gather = [&](OpInput data, OpInput indices, int64_t axis) {
    add_op(cl, "gather", {std::move(data), std::move(indices)}, {{"axis", axis}}, fmt::format("axis={}", axis));
  };
  gather(f32({5, 7}), in(DType::I64, {6}, Draw::Integers, -5, 4), 0);
  gather(f32({2, 6, 3}), in(DType::I32, {2, 2}, Draw::Integers, -6, 5), 1);
  gather(f32({4, 33}), in(DType::I64, {}, Draw::Integers, 0, 3), 0);
  gather(f64({5, 7}), in(DType::I64, {3}, Draw::Integers, 0, 6), 1);
  gather(in(DType::I64, {10}, Draw::Integers, -99, 99), in(DType::I64, {4}, Draw::Integers, -10, 9), 0);

  add_op(cl, "gather_grad", {f32({6, 3}), in(DType::I64, {6}, Draw::Integers, -5, 4)},
         {{"axis", int64_t(0)}, {"shape", Shape{5, 3}}}, "axis=0 shape=[5,3]", false);

  // The in-place form, on a state, is tests/lowering/write_at_test.cpp's.
  add_op(cl, "write_at", {f32({3, 5, 4}), f32({3, 1, 4}), in(DType::I64, {1}, Draw::Integers, 0, 4)},
         {{"axis", int64_t(1)}}, "axis=1");
  add_op(cl, "write_at", {f32({6, 2}), f32({1, 2}), in(DType::I32, {}, Draw::Integers, 0, 5)}, {{"axis", int64_t(0)}},
         "axis=0");
}

}  // namespace spire::harness
