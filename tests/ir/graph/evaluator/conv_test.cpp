// conv2d and its gradients: hand-computed 4x4 cases (stride, padding, dilation, groups), a direct
// seven-loop convolution written here for random shapes, and the adjoint identities that tie the gradients
// to the forward op: <conv(x, w), g> == <x, grad_input(g, w)> == <w, grad_weight(g, x)>.
#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace conv_test {  // named, not anonymous: test executables build as unity batches

Tensor conv(const Tensor& x, const Tensor& w, const Conv2dOptions& opt) {
  Graph g;
  Value vx = g.input("x", x.dtype, x.shape);
  Value vw = g.input("w", w.dtype, w.shape);
  g.output("y", g.conv2d(vx, vw, opt));
  return eval_output(g, {{"x", x}, {"w", w}});
}

// x[0][0][i][j] = 4i + j + 1 (1..16), w = [[1, 2], [3, 4]].
Tensor one_to_sixteen() {
  std::vector<double> v;
  for (int i = 1; i <= 16; ++i) v.push_back(i);
  return f64({1, 1, 4, 4}, v);
}
Tensor kernel_1234() { return f64({1, 1, 2, 2}, {1, 2, 3, 4}); }

TEST(EvalConv, Plain2x2KernelOn4x4) {
  // y[i][j] = x[i][j] + 2 x[i][j+1] + 3 x[i+1][j] + 4 x[i+1][j+1] = 40i + 10j + 44.
  expect_values(conv(one_to_sixteen(), kernel_1234(), {}), {1, 1, 3, 3}, {44, 54, 64, 84, 94, 104, 124, 134, 144});
}

TEST(EvalConv, StrideTwoPaddingOne) {
  // Windows start at rows/cols -1, 1, 3; taps in the padding read 0. E.g. y[0][0] = 4 x[0][0] = 4,
  // y[1][1] = x[1][1] + 2 x[1][2] + 3 x[2][1] + 4 x[2][2] = 6 + 14 + 30 + 44 = 94, y[2][2] = x[3][3] = 16.
  expect_values(conv(one_to_sixteen(), kernel_1234(), {.stride = {2, 2}, .padding = {1, 1}}), {1, 1, 3, 3},
                {4, 18, 12, 46, 94, 44, 26, 44, 16});
}

TEST(EvalConv, DilationTwo) {
  // y[i][j] = x[i][j] + 2 x[i][j+2] + 3 x[i+2][j] + 4 x[i+2][j+2] = 40i + 10j + 78.
  expect_values(conv(one_to_sixteen(), kernel_1234(), {.dilation = {2, 2}}), {1, 1, 2, 2}, {78, 88, 118, 128});
}

TEST(EvalConv, AsymmetricStrideAndPadding) {
  // stride (1, 3), padding (0, 1): output 3 x 2; columns start at -1 and 2.
  // y[i][0] = 2 x[i][0] + 4 x[i+1][0] = 2(4i+1) + 4(4i+5) = 24i + 22;
  // y[i][1] = x[i][2] + 2 x[i][3] + 3 x[i+1][2] + 4 x[i+1][3] = 40i + 10*2 + 44 = 40i + 64.
  expect_values(conv(one_to_sixteen(), kernel_1234(), {.stride = {1, 3}, .padding = {0, 1}}), {1, 1, 3, 2},
                {22, 64, 46, 104, 70, 144});
}

TEST(EvalConv, GroupsPickTheirOwnInputChannels) {
  // Two input channels (values 2 and 3), groups = 2, four 1x1 filters: filters 0,1 see channel 0 and
  // filters 2,3 see channel 1: y = [2*1, 2*2, 3*3, 3*4].
  expect_values(conv(f64({1, 2, 1, 1}, {2, 3}), f64({4, 1, 1, 1}, {1, 2, 3, 4}), {.groups = 2}), {1, 4, 1, 1},
                {2, 4, 9, 12});
}

TEST(EvalConv, SumsOverInputChannelsAndKeepsImagesApart) {
  // Two images, two input channels, one 1x1 filter [1, 10]: y[n] = x[n][0] + 10 x[n][1].
  expect_values(conv(f64({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), f64({1, 2, 1, 1}, {1, 10}), {}), {2, 1, 1, 2},
                {31, 42, 75, 86});
}

// The textbook definition, with explicit bounds checks: the independent reference for random cases.
Tensor direct_conv(const Tensor& x, const Tensor& w, const Conv2dOptions& o, const Shape& out_shape) {
  Tensor y(DType::F64, out_shape);
  const int64_t groups = o.groups, cin_g = w.shape[1], cout_g = w.shape[0] / groups;
  for (int64_t n = 0; n < out_shape[0]; ++n)
    for (int64_t co = 0; co < out_shape[1]; ++co)
      for (int64_t oh = 0; oh < out_shape[2]; ++oh)
        for (int64_t ow = 0; ow < out_shape[3]; ++ow) {
          double s = 0;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t kh = 0; kh < w.shape[2]; ++kh)
              for (int64_t kw = 0; kw < w.shape[3]; ++kw) {
                const int64_t ih = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
                const int64_t iw = ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
                if (ih < 0 || ih >= x.shape[2] || iw < 0 || iw >= x.shape[3]) continue;
                s += x.at({n, (co / cout_g) * cin_g + ci, ih, iw}) * w.at({co, ci, kh, kw});
              }
          y.at({n, co, oh, ow}) = s;
        }
  return y;
}

struct ConvCase {
  Shape x, w;
  Conv2dOptions opt;
};

// Includes sizes where the last rows/columns are never read (7 + 2*1 - 3 not divisible by 2).
std::vector<ConvCase> conv_cases() {
  return {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {}},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}}},
      {{1, 4, 9, 8}, {6, 2, 3, 2}, {.stride = {2, 1}, .padding = {2, 0}, .dilation = {2, 3}, .groups = 2}},
      {{3, 6, 5, 5}, {6, 1, 3, 3}, {.padding = {1, 1}, .groups = 6}},  // depthwise
      {{2, 1, 28, 28}, {6, 1, 5, 5}, {.padding = {2, 2}}},             // LeNet's first layer
      {{1, 2, 4, 5}, {3, 2, 1, 1}, {.stride = {3, 2}}},
  };
}

std::string describe(const ConvCase& c) {
  return shape_to_string(c.x) + " * " + shape_to_string(c.w) + " stride " + shape_to_string(c.opt.stride) +
         " padding " + shape_to_string(c.opt.padding) + " dilation " + shape_to_string(c.opt.dilation) +
         " groups " + std::to_string(c.opt.groups);
}

TEST(EvalConv, MatchesTheDirectDefinitionOnRandomInputs) {
  uint64_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(describe(c));
    Tensor x = random_tensor(DType::F64, c.x, seed++);
    Tensor w = random_tensor(DType::F64, c.w, seed++);
    Tensor y = conv(x, w, c.opt);
    Tensor want = direct_conv(x, w, c.opt, y.shape);
    ASSERT_EQ(y.data.size(), want.data.size());
    for (size_t i = 0; i < want.data.size(); ++i) ASSERT_NEAR(y.data[i], want.data[i], 1e-12) << "element " << i;
  }
}

TEST(EvalConv, GradientsAreTheAdjointsOfConv) {
  uint64_t seed = 200;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(describe(c));
    Graph g;
    Value x = g.input("x", DType::F64, c.x);
    Value w = g.input("w", DType::F64, c.w);
    Value y = g.conv2d(x, w, c.opt);
    Value gy = g.input("gy", DType::F64, g.type(y).shape);
    g.output("y", y);
    g.output("gx", g.conv2d_grad_input(gy, w, c.opt, c.x));
    g.output("gw", g.conv2d_grad_weight(gy, x, c.opt, c.w));
    std::map<std::string, Tensor> in = {{"x", random_tensor(DType::F64, c.x, seed++)},
                                        {"w", random_tensor(DType::F64, c.w, seed++)},
                                        {"gy", random_tensor(DType::F64, g.type(y).shape, seed++)}};
    auto out = evaluate(g, in);
    const double lhs = dot(out["y"], in["gy"]);
    EXPECT_NEAR(dot(in["x"], out["gx"]), lhs, 1e-10 * (1 + std::abs(lhs)));
    EXPECT_NEAR(dot(in["w"], out["gw"]), lhs, 1e-10 * (1 + std::abs(lhs)));
  }
}

TEST(EvalConv, GradInputLeavesUnreadPixelsAtZero) {
  // 1x1 kernel, stride 2 on a 3x3 input reads only the four corners' rows/cols 0 and 2: y = 2x2.
  Graph g;
  Value gy = g.input("gy", DType::F64, {1, 1, 2, 2});
  Value w = g.input("w", DType::F64, {1, 1, 1, 1});
  g.output("y", g.conv2d_grad_input(gy, w, {.stride = {2, 2}}, {1, 1, 3, 3}));
  Tensor y = eval_output(g, {{"gy", f64({1, 1, 2, 2}, {1, 2, 3, 4})}, {"w", f64({1, 1, 1, 1}, {10})}});
  expect_values(y, {1, 1, 3, 3}, {10, 0, 20, 0, 0, 0, 30, 0, 40});
}

}  // namespace conv_test
}  // namespace spire::graph::test
