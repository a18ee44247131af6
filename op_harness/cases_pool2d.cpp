// The poolings (max, its positions, avg): square and non-square windows, stride, padding, f64; their gradients
// checked directly as forward ops, with windows that tile the input and overlapping ones.
#include "op_harness/cases.h"

namespace spire::harness {

void pool2d_cases(CaseList& cl) {
  auto pool = [&](OpKind op, Shape x, graph::Pool2dOptions o, DType t = DType::F32) {
    cl.add(op, {in(t, x)},
           [op, o](Graph& g, const std::vector<Value>& v) {
             if (op == OpKind::MaxPool2dArgmax) return g.max_pool2d_argmax(v[0], o);
             return op == OpKind::MaxPool2d ? g.max_pool2d(v[0], o) : g.avg_pool2d(v[0], o);
           },
           fmt::format("kernel={} stride={} padding={}", ints(o.kernel), ints(o.stride.empty() ? o.kernel : o.stride),
                       ints(o.padding)));
  };
  for (OpKind op : {OpKind::MaxPool2d, OpKind::MaxPool2dArgmax, OpKind::AvgPool2d}) {
    pool(op, {2, 3, 8, 8}, {});
    pool(op, {1, 2, 7, 9}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
    pool(op, {2, 1, 5, 5}, {.kernel = {2, 3}, .stride = {1, 2}});
    pool(op, {1, 2, 6, 6}, {}, DType::F64);
  }

  // The gradients: backward-only, so no gradient of their own to check.
  graph::Pool2dOptions k3{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
  cl.add(OpKind::MaxPool2dGrad, {f32({2, 3, 4, 4}), f32({2, 3, 8, 8})},
         [](Graph& g, const std::vector<Value>& v) { return g.max_pool2d_grad(v[0], v[1], {}); }, "kernel=[2,2]", false);
  cl.add(OpKind::MaxPool2dGrad, {f32({1, 2, 4, 5}), f32({1, 2, 7, 9})},
         [k3](Graph& g, const std::vector<Value>& v) { return g.max_pool2d_grad(v[0], v[1], k3); },
         "kernel=[3,3] stride=[2,2] padding=[1,1]", false);
  // Positions drawn at random: windows that tile the input (one invocation per window), and overlapping ones.
  cl.add(OpKind::MaxPool2dGradArgmax, {f32({2, 3, 4, 4}), in(DType::I32, {2, 3, 4, 4}, Draw::Integers, 0, 3)},
         [](Graph& g, const std::vector<Value>& v) { return g.max_pool2d_grad_argmax(v[0], v[1], {}, {2, 3, 8, 8}); },
         "kernel=[2,2] input_shape=[2,3,8,8]", false);
  cl.add(OpKind::MaxPool2dGradArgmax, {f32({1, 2, 3, 4}), in(DType::I32, {1, 2, 3, 4}, Draw::Integers, 0, 8)},
         [](Graph& g, const std::vector<Value>& v) {
           return g.max_pool2d_grad_argmax(v[0], v[1], {.kernel = {3, 3}, .stride = {2, 2}}, {1, 2, 7, 9});
         },
         "kernel=[3,3] stride=[2,2] input_shape=[1,2,7,9]", false);
  cl.add(OpKind::AvgPool2dGrad, {f32({2, 3, 4, 4})},
         [](Graph& g, const std::vector<Value>& v) { return g.avg_pool2d_grad(v[0], {}, {2, 3, 8, 8}); },
         "kernel=[2,2] input_shape=[2,3,8,8]", false);
  cl.add(OpKind::AvgPool2dGrad, {f32({1, 2, 4, 5})},
         [k3](Graph& g, const std::vector<Value>& v) { return g.avg_pool2d_grad(v[0], k3, {1, 2, 7, 9}); },
         "kernel=[3,3] stride=[2,2] padding=[1,1] input_shape=[1,2,7,9]", false);
}

}  // namespace spire::harness
