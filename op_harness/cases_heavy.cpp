// Heavy ops: matmul, conv2d, pooling, the softmax family, cross-entropy, and the backward-only heavy ops
// checked directly as forward ops.
#include "op_harness/cases.h"

namespace spire::harness {

void heavy_cases(CaseList& cl) {
  Build matmul = [](Graph& g, const std::vector<Value>& x) { return g.matmul(x[0], x[1]); };
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{{{7, 33}, {33, 5}},
                                                           {{1, 1}, {1, 1}},
                                                           {{2, 4, 7}, {7, 3}},
                                                           {{3, 33, 17}, {3, 17, 9}},
                                                           {{257, 3}, {3, 2}},
                                                           {{64, 120}, {120, 84}}})
    cl.add(OpKind::Matmul, {f32(a), f32(b)}, matmul);
  cl.add(OpKind::Matmul, {f64({7, 33}), f64({33, 5})}, matmul);

  auto conv = [&](Shape x, Shape w, graph::Conv2dOptions o, DType t = DType::F32) {
    cl.add(OpKind::Conv2d, {in(t, x), in(t, w)}, [o](Graph& g, const std::vector<Value>& v) { return g.conv2d(v[0], v[1], o); },
           fmt::format("stride={} padding={} dilation={} groups={}", ints(o.stride), ints(o.padding), ints(o.dilation),
                       o.groups));
  };
  conv({2, 3, 9, 9}, {4, 3, 3, 3}, {});
  conv({2, 3, 9, 9}, {4, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}});
  conv({1, 2, 9, 9}, {3, 2, 3, 3}, {.dilation = {2, 2}});
  conv({1, 6, 7, 7}, {6, 2, 3, 3}, {.padding = {1, 1}, .groups = 3});
  conv({2, 5, 4, 4}, {3, 5, 1, 1}, {});
  conv({1, 2, 7, 11}, {3, 2, 2, 4}, {.stride = {1, 2}, .padding = {1, 0}});
  conv({2, 1, 28, 28}, {6, 1, 5, 5}, {.padding = {2, 2}});  // LeNet's first layer
  conv({1, 3, 9, 9}, {4, 3, 3, 3}, {.padding = {1, 1}}, DType::F64);
  // Channels enough for Winograd's F(2x2, 3x3) (conv2d_winograd_kernels.h), an odd output width.
  conv({2, 32, 6, 7}, {32, 32, 3, 3}, {.padding = {1, 1}});
  conv({1, 32, 6, 6}, {40, 32, 3, 3}, {.padding = {1, 1}}, DType::F64);

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

  auto softmax = [&](OpKind op, OpInput x, int64_t axis) {
    cl.add(op, {x},
           [op, axis](Graph& g, const std::vector<Value>& v) {
             return op == OpKind::Softmax ? g.softmax(v[0], axis) : g.log_softmax(v[0], axis);
           },
           fmt::format("axis={}", axis));
  };
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax}) {
    softmax(op, f32({7, 33}, -5, 5), 1);
    softmax(op, f32({7, 33}, -5, 5), 0);
    softmax(op, f32({2, 3, 5}, -5, 5), 1);
    softmax(op, f32({1, 257}, -5, 5), 1);
    softmax(op, f64({7, 33}, -5, 5), 1);
  }

  Build ce = [](Graph& g, const std::vector<Value>& v) { return g.cross_entropy(v[0], v[1]); };
  cl.add(OpKind::CrossEntropy, {f32({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9)}, ce);
  cl.add(OpKind::CrossEntropy, {f32({1, 3}, -3, 3), in(DType::I32, {1}, Draw::Integers, 0, 2)}, ce);
  cl.add(OpKind::CrossEntropy, {f32({64, 10}, -3, 3), in(DType::I64, {64}, Draw::Integers, 0, 9)}, ce);
  cl.add(OpKind::CrossEntropy, {f32({33, 257}, -3, 3), in(DType::I32, {33}, Draw::Integers, 0, 256)}, ce);
  cl.add(OpKind::CrossEntropy, {f64({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9)}, ce);

  // Backward-only heavy ops, checked directly as forward ops.
  graph::Conv2dOptions s2{.stride = {2, 2}, .padding = {1, 1}};
  cl.add(OpKind::Conv2dGradInput, {f32({2, 4, 7, 7}), f32({4, 3, 3, 3})},
         [](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_input(v[0], v[1], {}, {2, 3, 9, 9}); },
         "input_shape=[2,3,9,9]", false);
  cl.add(OpKind::Conv2dGradInput, {f32({2, 4, 5, 5}), f32({4, 3, 3, 3})},
         [s2](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_input(v[0], v[1], s2, {2, 3, 9, 9}); },
         "stride=[2,2] padding=[1,1] input_shape=[2,3,9,9]", false);
  cl.add(OpKind::Conv2dGradWeight, {f32({2, 4, 7, 7}), f32({2, 3, 9, 9})},
         [](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_weight(v[0], v[1], {}, {4, 3, 3, 3}); },
         "weight_shape=[4,3,3,3]", false);
  cl.add(OpKind::Conv2dGradWeight, {f32({2, 4, 5, 5}), f32({2, 3, 9, 9})},
         [s2](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_weight(v[0], v[1], s2, {4, 3, 3, 3}); },
         "stride=[2,2] padding=[1,1] weight_shape=[4,3,3,3]", false);
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
  cl.add(OpKind::CrossEntropyGrad, {f32({}), f32({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9)},
         [](Graph& g, const std::vector<Value>& v) { return g.cross_entropy_grad(v[0], v[1], v[2]); }, "", false);
  cl.add(OpKind::CrossEntropyGrad, {f32({}), f32({64, 10}, -3, 3), in(DType::I32, {64}, Draw::Integers, 0, 9)},
         [](Graph& g, const std::vector<Value>& v) { return g.cross_entropy_grad(v[0], v[1], v[2]); }, "", false);
}

// ---------------------------------------------------------------------------------------------------------
// Running a case

}  // namespace spire::harness
