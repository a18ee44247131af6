// conv2d: stride, padding, dilation, groups, 1x1 and non-square kernels, LeNet's first layer, channels enough
// for Winograd, f64 and f16/bf16; its two gradients checked directly as forward ops.
#include "op_harness/cases.h"

namespace spire::harness {

void conv2d_cases(CaseList& cl) {
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
  // Half precision: labelled with stride and padding only.
  for (DType t : kHalfTypes) {
    auto half = [&](Shape x, Shape w, graph::Conv2dOptions o) {
      cl.add(OpKind::Conv2d, {in(t, x), in(t, w)}, [o](Graph& g, const std::vector<Value>& v) { return g.conv2d(v[0], v[1], o); },
             fmt::format("stride={} padding={}", ints(o.stride), ints(o.padding)));
    };
    half({2, 1, 28, 28}, {6, 1, 5, 5}, {.padding = {2, 2}});  // LeNet's first layer
    half({2, 3, 9, 9}, {4, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}});
  }

  // The gradients: backward-only, so no gradient of their own to check. Each at stride 1 and at stride 2 with
  // padding 1, from an output gradient of the forward's output shape.
  const Shape x{2, 3, 9, 9}, w{4, 3, 3, 3};
  struct GradCase {
    graph::Conv2dOptions options;
    Shape grad_out;
    const char* described;
  };
  for (const GradCase& c : {GradCase{{}, {2, 4, 7, 7}, ""},
                            GradCase{{.stride = {2, 2}, .padding = {1, 1}}, {2, 4, 5, 5}, "stride=[2,2] padding=[1,1] "}}) {
    const graph::Conv2dOptions o = c.options;
    cl.add(OpKind::Conv2dGradInput, {f32(c.grad_out), f32(w)},
           [o, x](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_input(v[0], v[1], o, x); },
           fmt::format("{}input_shape=[2,3,9,9]", c.described), false);
    cl.add(OpKind::Conv2dGradWeight, {f32(c.grad_out), f32(x)},
           [o, w](Graph& g, const std::vector<Value>& v) { return g.conv2d_grad_weight(v[0], v[1], o, w); },
           fmt::format("{}weight_shape=[4,3,3,3]", c.described), false);
  }
}

}  // namespace spire::harness
