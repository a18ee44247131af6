#include "lowering/op_harness.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/tensor.h"
#include "lowering/executable.h"
#include "lowering/op_tolerances.h"

namespace spire::lowering {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Shape;
using graph::Value;
using Build = std::function<Value(Graph&, const std::vector<Value>&)>;

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "FAIL";
    case Outcome::Skip: return "skip";
  }
  return "?";
}

namespace {

// ---------------------------------------------------------------------------------------------------------
// The cases

OpInput in(DType t, Shape s, Draw d = Draw::Uniform, double lo = -1, double hi = 1) { return {{t, std::move(s)}, d, lo, hi}; }
OpInput f32(Shape s, double lo = -1, double hi = 1) { return in(DType::F32, std::move(s), Draw::Uniform, lo, hi); }
OpInput f64(Shape s, double lo = -1, double hi = 1) { return in(DType::F64, std::move(s), Draw::Uniform, lo, hi); }

std::string shapes_label(const std::vector<OpInput>& inputs) {
  std::string s;
  for (const auto& i : inputs) s += (s.empty() ? "" : ", ") + i.type.to_string();
  return s;
}

class CaseList {
 public:
  void add(OpKind op, std::vector<OpInput> inputs, Build build, const std::string& attrs = "", bool backward = true) {
    std::string label = shapes_label(inputs) + (attrs.empty() ? "" : " " + attrs);
    cases_.push_back({op, std::move(label), std::move(inputs), std::move(build), backward});
  }
  std::vector<OpCase> take() { return std::move(cases_); }

 private:
  std::vector<OpCase> cases_;
};

std::string ints(const std::vector<int64_t>& v) { return graph::shape_to_string(v); }

void binary_cases(CaseList& cl) {
  struct B { OpKind op; Value (Graph::*fn)(Value, Value); };
  const std::vector<B> ops = {{OpKind::Add, &Graph::add},         {OpKind::Sub, &Graph::sub},
                              {OpKind::Mul, &Graph::mul},         {OpKind::Div, &Graph::div},
                              {OpKind::Pow, &Graph::pow},         {OpKind::Maximum, &Graph::maximum},
                              {OpKind::Minimum, &Graph::minimum}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7, 33}, {7, 33}}, {{7, 33}, {33}}, {{7, 1}, {1, 33}}, {{257}, {}}, {{1}, {1}}, {{2, 3, 5}, {3, 1}}};
  for (const auto& b : ops) {
    auto fn = b.fn;
    Build build = [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], x[1]); };
    // Divisors stay away from zero; pow takes a positive base (a negative one is NaN for most exponents).
    auto lhs = [&](DType t, Shape s) {
      return b.op == OpKind::Pow ? in(t, s, Draw::Uniform, 0.5, 2) : in(t, s);
    };
    auto rhs = [&](DType t, Shape s) {
      if (b.op == OpKind::Div) return in(t, s, Draw::AwayFromZero, 0.5, 2);
      if (b.op == OpKind::Pow) return in(t, s, Draw::Uniform, -2, 2);
      return in(t, s);
    };
    for (const auto& [a, c] : shapes) cl.add(b.op, {lhs(DType::F32, a), rhs(DType::F32, c)}, build);
    cl.add(b.op, {lhs(DType::F64, {7, 33}), rhs(DType::F64, {33})}, build);
    if (b.op != OpKind::Div && b.op != OpKind::Pow) {
      cl.add(b.op, {in(DType::I32, {7, 33}, Draw::Integers, -1000, 1000), in(DType::I32, {33}, Draw::Integers, -1000, 1000)},
             build);
      cl.add(b.op, {in(DType::I64, {257}, Draw::Integers, -1000, 1000), in(DType::I64, {}, Draw::Integers, -1000, 1000)},
             build);
    }
  }
  // Constants feeding pointwise kernels are folded into them; one feeding a heavy op gets a buffer filled once
  // at compile time.
  cl.add(OpKind::Constant, {f32({7, 33})},
         [](Graph& g, const std::vector<Value>& x) { return g.add(x[0], g.constant(2.5, DType::F32, {7, 33})); },
         "+ constant 2.5 of shape [7,33] (folded)");
  cl.add(OpKind::Constant, {f32({7, 33})},
         [](Graph& g, const std::vector<Value>& x) { return g.matmul(x[0], g.constant(-0.5, DType::F32, {33, 5})); },
         "matmul by constant -0.5 of shape [33,5] (a buffer)");
  cl.add(OpKind::Constant, {f32({257})}, [](Graph& g, const std::vector<Value>& x) { return g.mul(x[0], -3.0); },
         "* scalar constant -3");
}

void compare_cases(CaseList& cl) {
  for (auto mode : {graph::CompareMode::Lt, graph::CompareMode::Le, graph::CompareMode::Gt, graph::CompareMode::Ge,
                    graph::CompareMode::Eq, graph::CompareMode::Ne}) {
    Build build = [mode](Graph& g, const std::vector<Value>& x) { return g.compare(x[0], x[1], mode); };
    std::string attrs = fmt::format("mode={}", graph::compare_mode_name(mode));
    // Small integers (as floats) make ties common, so eq/le/ge see both answers.
    cl.add(OpKind::Compare, {in(DType::F32, {7, 33}, Draw::Integers, -3, 3), in(DType::F32, {33}, Draw::Integers, -3, 3)},
           build, attrs);
    cl.add(OpKind::Compare, {in(DType::I32, {257}, Draw::Integers, -3, 3), in(DType::I32, {}, Draw::Integers, -3, 3)},
           build, attrs);
  }
  cl.add(OpKind::Compare, {in(DType::F64, {7, 1}, Draw::Integers, -3, 3), in(DType::F64, {1, 33}, Draw::Integers, -3, 3)},
         [](Graph& g, const std::vector<Value>& x) { return g.compare(x[0], x[1], graph::CompareMode::Le); }, "mode=le");
}

void unary_cases(CaseList& cl) {
  struct U { OpKind op; Value (Graph::*fn)(Value); double lo, hi; };
  // Ranges: log and sqrt need positive inputs; the activations see both tails.
  const std::vector<U> ops = {
      {OpKind::Neg, &Graph::neg, -1, 1},          {OpKind::Exp, &Graph::exp, -3, 3},
      {OpKind::Log, &Graph::log, 0.1, 3},         {OpKind::Sqrt, &Graph::sqrt, 0.1, 3},
      {OpKind::Tanh, &Graph::tanh, -4, 4},        {OpKind::Sigmoid, &Graph::sigmoid, -6, 6},
      {OpKind::Relu, &Graph::relu, -1, 1},        {OpKind::Silu, &Graph::silu, -6, 6},
      {OpKind::Gelu, &Graph::gelu, -5, 5}};
  for (const auto& u : ops) {
    auto fn = u.fn;
    Build build = [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0]); };
    for (Shape s : {Shape{1}, Shape{7, 33}, Shape{257}, Shape{2, 3, 5}}) cl.add(u.op, {f32(s, u.lo, u.hi)}, build);
    cl.add(u.op, {f64({7, 33}, u.lo, u.hi)}, build);
    if (u.op == OpKind::Neg || u.op == OpKind::Relu)
      cl.add(u.op, {in(DType::I32, {7, 33}, Draw::Integers, -50, 50)}, build);
  }
  // Backward-only activation gradients, also checked directly (they are not differentiable themselves).
  struct G { OpKind op; Value (Graph::*fn)(Value, Value); double lo, hi; };
  for (const auto& a : std::vector<G>{{OpKind::ReluGrad, &Graph::relu_grad, -1, 1},
                                      {OpKind::SiluGrad, &Graph::silu_grad, -6, 6},
                                      {OpKind::GeluGrad, &Graph::gelu_grad, -5, 5}}) {
    auto fn = a.fn;
    Build build = [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], x[1]); };
    for (Shape s : {Shape{7, 33}, Shape{257}}) cl.add(a.op, {f32(s), f32(s, a.lo, a.hi)}, build, "", false);
    cl.add(a.op, {f64({7, 33}), f64({7, 33}, a.lo, a.hi)}, build, "", false);
  }
}

void where_cast_cases(CaseList& cl) {
  Build where = [](Graph& g, const std::vector<Value>& x) { return g.where(x[0], x[1], x[2]); };
  cl.add(OpKind::Where, {in(DType::Bool, {7, 33}, Draw::Bools), f32({7, 33}), f32({7, 33})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {7, 1}, Draw::Bools), f32({33}), f32({7, 33})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {257}, Draw::Bools), f32({257}), f32({})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {7, 33}, Draw::Bools), f64({33}), f64({7, 1})}, where);
  cl.add(OpKind::Where,
         {in(DType::Bool, {33}, Draw::Bools), in(DType::I64, {7, 33}, Draw::Integers, -9, 9), in(DType::I64, {}, Draw::Integers, -9, 9)},
         where);

  auto cast = [&](OpInput from, DType to) {
    cl.add(OpKind::Cast, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.cast(x[0], to); },
           fmt::format("to={}", graph::dtype_name(to)));
  };
  cast(f32({7, 33}, -10, 10), DType::I32);   // truncation toward zero
  cast(f32({257}, -10, 10), DType::I64);
  cast(in(DType::F32, {7, 33}, Draw::Integers, -1, 1), DType::Bool);
  cast(in(DType::I32, {7, 33}, Draw::Integers, -1000, 1000), DType::F32);
  cast(in(DType::I64, {257}, Draw::Integers, -1000, 1000), DType::F32);
  cast(in(DType::I64, {33}, Draw::Integers, -1000, 1000), DType::I32);
  cast(in(DType::I32, {33}, Draw::Integers, -2, 2), DType::Bool);
  cast(in(DType::Bool, {7, 33}, Draw::Bools), DType::F32);
  cast(in(DType::Bool, {33}, Draw::Bools), DType::I64);
  cast(f32({7, 33}), DType::F64);
  cast(f64({7, 33}, -1e3, 1e3), DType::F32);
  cast(f64({33}, -10, 10), DType::I32);
}

void reduction_cases(CaseList& cl) {
  struct R { OpKind op; Value (Graph::*fn)(Value, std::vector<int64_t>, bool); };
  const std::vector<R> ops = {{OpKind::Sum, &Graph::sum}, {OpKind::Mean, &Graph::mean}, {OpKind::Max, &Graph::max}};
  struct S { Shape shape; std::vector<int64_t> axes; bool keepdim; };
  // Small and large reduced extents (one invocation per output, or one workgroup per output), leading,
  // trailing and interleaved axes, everything, nothing.
  const std::vector<S> shapes = {
      {{7, 33}, {1}, false},       {{7, 33}, {0}, true},        {{257}, {0}, false},       {{2, 3, 5}, {0, 2}, false},
      {{3, 4, 5, 6}, {1, 3}, true}, {{3, 1000}, {1}, false},    {{1000, 3}, {0}, false},   {{1}, {0}, false},
      {{7, 33}, {}, false},        {{33, 257}, {0, 1}, false},  {{4, 40000}, {1}, false},  // split in chunks
  };
  for (const auto& r : ops) {
    auto fn = r.fn;
    for (const auto& s : shapes) {
      auto axes = s.axes;
      bool keep = s.keepdim;
      cl.add(r.op, {f32(s.shape)}, [fn, axes, keep](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], axes, keep); },
             fmt::format("axes={}{}", ints(axes), keep ? " keepdim" : ""));
    }
    cl.add(r.op, {f64({7, 33})}, [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); },
           "axes=[1]");
    if (r.op != OpKind::Mean)
      cl.add(r.op, {in(DType::I32, {7, 300}, Draw::Integers, -1000, 1000)},
             [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
  }
}

void layout_cases(CaseList& cl) {
  auto reshape = [&](Shape from, Shape to) {
    cl.add(OpKind::Reshape, {f32(from)}, [to](Graph& g, const std::vector<Value>& x) { return g.reshape(x[0], to); },
           "shape=" + ints(to));
  };
  reshape({7, 33}, {33, 7});
  reshape({2, 3, 5}, {30});
  reshape({257}, {1, 257, 1});
  auto flatten = [&](Shape from, int64_t a, int64_t b) {
    cl.add(OpKind::Flatten, {f32(from)}, [a, b](Graph& g, const std::vector<Value>& x) { return g.flatten(x[0], a, b); },
           fmt::format("start_dim={} end_dim={}", a, b));
  };
  flatten({2, 3, 5, 7}, 1, -1);
  flatten({2, 3, 5, 7}, 1, 2);
  auto permute = [&](OpInput from, std::vector<int64_t> perm) {
    cl.add(OpKind::Permute, {from}, [perm](Graph& g, const std::vector<Value>& x) { return g.permute(x[0], perm); },
           "perm=" + ints(perm));
  };
  permute(f32({7, 33}), {1, 0});
  permute(f32({2, 3, 5}), {2, 0, 1});
  permute(f32({2, 3, 5, 7}), {0, 2, 3, 1});
  permute(f32({1, 7, 1, 33}), {2, 3, 0, 1});
  permute(f64({7, 33}), {1, 0});
  permute(in(DType::I32, {3, 5}, Draw::Integers, -9, 9), {1, 0});
  auto broadcast = [&](OpInput from, Shape to) {
    cl.add(OpKind::BroadcastTo, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.broadcast_to(x[0], to); },
           "shape=" + ints(to));
  };
  broadcast(f32({33}), {7, 33});
  broadcast(f32({7, 1}), {7, 33});
  broadcast(f32({}), {4, 5});
  broadcast(f32({1, 5}), {2, 3, 5});
  broadcast(f32({3, 1}), {1, 3, 257});
  broadcast(f64({33}), {7, 33});
  auto sum_to = [&](OpInput from, Shape to) {
    cl.add(OpKind::SumTo, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.sum_to(x[0], to); },
           "shape=" + ints(to));
  };
  sum_to(f32({7, 33}), {33});
  sum_to(f32({7, 33}), {7, 1});
  sum_to(f32({2, 3, 5}), {3, 1});
  sum_to(f32({4, 5}), {});
  sum_to(f32({300, 257}), {1, 257});
  sum_to(f64({7, 33}), {33});
  sum_to(in(DType::I32, {7, 33}, Draw::Integers, -9, 9), {33});
}

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

  auto pool = [&](OpKind op, Shape x, graph::Pool2dOptions o, DType t = DType::F32) {
    cl.add(op, {in(t, x)},
           [op, o](Graph& g, const std::vector<Value>& v) {
             return op == OpKind::MaxPool2d ? g.max_pool2d(v[0], o) : g.avg_pool2d(v[0], o);
           },
           fmt::format("kernel={} stride={} padding={}", ints(o.kernel), ints(o.stride.empty() ? o.kernel : o.stride),
                       ints(o.padding)));
  };
  for (OpKind op : {OpKind::MaxPool2d, OpKind::AvgPool2d}) {
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

uint64_t label_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same seed on every platform
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

graph::Tensor draw(const OpInput& in, std::mt19937_64& rng) {
  graph::Tensor t(in.type.dtype, in.type.shape);
  std::uniform_real_distribution<double> u(in.lo, in.hi);
  std::uniform_int_distribution<int64_t> k(int64_t(in.lo), int64_t(in.hi));
  std::bernoulli_distribution coin(0.5);
  for (double& v : t.data) {
    switch (in.draw) {
      case Draw::Uniform: v = u(rng); break;
      case Draw::AwayFromZero: v = coin(rng) ? u(rng) : -u(rng); break;
      case Draw::Integers: v = double(k(rng)); break;
      case Draw::Bools: v = coin(rng) ? 1 : 0; break;
    }
  }
  return t.round_to_dtype();
}

}  // namespace

// Max-norm relative error (op_tolerances.h).
double max_norm_error(const graph::Tensor& got, const graph::Tensor& want) {
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double w = want.data[i], d = got.data[i];
    if (std::isnan(w)) {
      if (!std::isnan(d)) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(w)) {
      if (d != w) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    max_ref = std::max(max_ref, std::abs(w));
    max_diff = std::max(max_diff, std::abs(d - w));
  }
  return max_diff / std::max(1.0, max_ref);
}

namespace {

bool uses_f64(const OpCase& c, const Graph& g) {
  for (const auto& n : g.nodes())
    if (n.type.dtype == DType::F64) return true;
  return false;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> all = [] {
    CaseList cl;
    binary_cases(cl);
    compare_cases(cl);
    unary_cases(cl);
    where_cast_cases(cl);
    reduction_cases(cl);
    layout_cases(cl);
    heavy_cases(cl);
    return cl.take();
  }();
  return all;
}

std::vector<OpRow> run_op_case(const OpCase& c, rt::Device& dev, uint64_t seed) {
  OpRow base;
  base.op = std::string(graph::op_name(c.op));
  base.label = c.label;
  base.device = dev.info().id;
  auto single = [&](std::string check, Outcome o, std::string note) {
    OpRow r = base;
    r.check = std::move(check);
    r.outcome = o;
    r.note = std::move(note);
    if (o == Outcome::Fail) r.max_error = std::numeric_limits<double>::infinity();
    return std::vector<OpRow>{r};
  };

  // The graph: in0.. -> op -> y; for a float y, loss = sum(y * loss_weight) and its gradients.
  Graph g;
  std::vector<Value> inputs;
  std::map<std::string, graph::Tensor> feed;
  std::mt19937_64 rng(seed ^ label_hash(base.op + " " + c.label));
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    std::string name = fmt::format("in{}", k);
    inputs.push_back(g.input(name, c.inputs[k].type.dtype, c.inputs[k].type.shape));
    feed[name] = draw(c.inputs[k], rng);
  }
  std::vector<std::pair<std::string, bool>> checks;  // output name, is a gradient
  try {
    Value y = c.build(g, inputs);
    g.output("y", y);
    checks.push_back({"y", false});
    const graph::TensorType& yt = g.type(y);
    if (c.backward && graph::is_float(yt.dtype)) {
      std::vector<Value> wrt;
      std::vector<std::string> names;
      for (size_t k = 0; k < inputs.size(); ++k)
        if (graph::is_float(c.inputs[k].type.dtype)) {
          wrt.push_back(inputs[k]);
          names.push_back(fmt::format("in{}", k));
        }
      if (!wrt.empty()) {
        Value w = g.input("loss_weight", yt.dtype, yt.shape);
        feed["loss_weight"] = draw({yt, Draw::Uniform, -1, 1}, rng);
        Value loss = g.sum(g.mul(y, w));
        auto grads = autograd::grad(g, loss, wrt);
        for (size_t k = 0; k < grads.size(); ++k) {
          g.output("grad." + names[k], grads[k]);
          checks.push_back({"grad." + names[k], true});
        }
      }
    }
  } catch (const std::exception& e) {
    return single("build", Outcome::Fail, fmt::format("building the graph failed: {}", e.what()));
  }

  std::map<std::string, graph::Tensor> want;
  try {
    want = graph::evaluate(g, feed, DType::F64);
  } catch (const std::exception& e) {
    return single("reference", Outcome::Fail, fmt::format("the reference evaluator failed: {}", e.what()));
  }

  std::map<std::string, graph::Tensor> got;
  try {
    auto exe = compile(g, dev);
    for (const auto& [name, t] : feed) exe->set(name, t);
    exe->step();
    for (const auto& [name, is_grad] : checks) got[name] = exe->get(name);
  } catch (const rt::MissingFeature& e) {
    if (uses_f64(c, g) && !dev.info().features.has(kir::Feature::Float64))
      return single("all", Outcome::Skip, fmt::format("{} has no float64", dev.info().id));
    return single("all", Outcome::Fail, e.what());
  } catch (const std::exception& e) {
    return single("all", Outcome::Fail, e.what());
  }

  std::vector<OpRow> rows;
  for (const auto& [name, is_grad] : checks) {
    OpRow r = base;
    r.check = is_grad ? "grad " + name.substr(5) : "forward";
    const graph::Tensor& w = want.at(name);
    const graph::Tensor& d = got.at(name);
    if (d.shape != w.shape || d.dtype != w.dtype) {
      r.outcome = Outcome::Fail;
      r.max_error = std::numeric_limits<double>::infinity();
      r.note = fmt::format("device gave {}, reference {}", d.type().to_string(), w.type().to_string());
    } else {
      r.max_error = max_norm_error(d, w);
      r.tolerance = tolerance_for(c.op, is_grad, w.dtype);
      r.outcome = r.max_error <= r.tolerance ? Outcome::Pass : Outcome::Fail;
      if (std::isinf(r.max_error)) r.note = "NaN, infinity or an unwritten (poisoned) element";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string format_row_header() {
  return fmt::format("{:<20} {:<52} {:<10} {:<10} {:>11} {:>9}  {}", "op", "inputs", "device", "check", "max error",
                     "tolerance", "result");
}

std::string format_row(const OpRow& r) {
  std::string err = r.outcome == Outcome::Skip ? "-" : fmt::format("{:.3g}", r.max_error);
  std::string s = fmt::format("{:<20} {:<52} {:<10} {:<10} {:>11} {:>9.3g}  {}", r.op, r.label, r.device, r.check, err,
                              r.tolerance, outcome_name(r.outcome));
  if (!r.note.empty()) s += "  (" + r.note + ")";
  return s;
}

}  // namespace spire::lowering
