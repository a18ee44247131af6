// Optimizer steps as graph ops against hand-computed torch.optim formulas, two (and more) steps, with the
// state written back between steps as an executor does.
//
// The gradient is made exactly known: loss = sum(p * c) has d loss / d p = c, a fresh input each step.
#include <cmath>

#include <gtest/gtest.h>

#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/training_state.h"
#include "tests/support/named_ops.h"

namespace spire::autograd {
namespace {

using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::Value;

// 64 elements with full mantissas, so that a different rounding order shows up in some element; one
// gradient element is exactly 0.
constexpr int kN = 64;
std::vector<double> make_values(double a, double b, double scale) {
  std::vector<double> v(kN);
  for (int i = 0; i < kN; ++i) v[size_t(i)] = scale * std::sin(a * i + b);
  return v;
}
const std::vector<double> kP0 = make_values(0.37, 0.1, 2.0);
const std::vector<std::vector<double>> kGrads = {make_values(0.91, 0.0, 1.5), make_values(1.3, 0.4, 0.8),
                                                 make_values(2.1, 1.0, 3.0)};

// Builds p, c -> loss = sum(p * c), its gradient and the optimizer step (via `step`).
Graph training_graph(DType dt, const std::function<void(Graph&, Value, Value)>& step) {
  Graph g;
  Value p = g.parameter("p", dt, {kN});
  Value c = g.input("c", dt, {kN});
  Value loss = g.sum(g.mul(p, c));
  g.output("loss", loss);
  step(g, p, grad(g, loss, {p})[0]);
  return g;
}

// Per step, the persistent values by name (p and every optimizer state), as an executor keeps them.
using History = std::vector<std::map<std::string, std::vector<double>>>;

History run_steps(const Graph& g, DType dt, DType compute) {
  std::map<std::string, Tensor> persistent = graph::initial_states(g);
  persistent["p"] = Tensor::from(dt, {kN}, kP0);
  History out;
  for (const auto& c : kGrads) {
    std::map<std::string, Tensor> feed = persistent;
    feed["c"] = Tensor::from(dt, {kN}, c);
    auto results = graph::evaluate(g, feed, compute);
    graph::write_back_state_updates(g, results, persistent);
    out.emplace_back();
    for (const auto& [name, t] : persistent) out.back()[name] = t.data;
  }
  return out;
}

// Compares every named vector of `want` with `got`, step by step: exactly, or within 4 ulp (EXPECT_DOUBLE_EQ).
void expect_history(const History& got, const History& want, bool exact) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < want.size(); ++s)
    for (const auto& [name, values] : want[s]) {
      ASSERT_TRUE(got[s].contains(name)) << name;
      const auto& g = got[s].at(name);
      ASSERT_EQ(g.size(), values.size()) << name;
      for (size_t i = 0; i < values.size(); ++i) {
        if (exact) EXPECT_EQ(g[i], values[i]) << name << "[" << i << "] after step " << s + 1;
        else EXPECT_DOUBLE_EQ(g[i], values[i]) << name << "[" << i << "] after step " << s + 1;
      }
    }
}

// ---- SGD

struct SgdRef {
  double lr, momentum, wd;
  // torch.optim.SGD in double: the buffer is a copy of d on the first step.
  History run() const {
    std::vector<double> p = kP0, buf;
    History out;
    for (const auto& c : kGrads) {
      std::vector<double> d(kN);
      for (int i = 0; i < kN; ++i) d[i] = c[i] + wd * p[i];
      if (momentum != 0) {
        if (buf.empty()) {
          buf = d;
        } else {
          for (int i = 0; i < kN; ++i) buf[i] = momentum * buf[i] + d[i];
        }
        d = buf;
      }
      for (int i = 0; i < kN; ++i) p[i] = p[i] - lr * d[i];
      out.push_back({{"p", p}});
      if (momentum != 0) out.back()["momentum.p"] = buf;
    }
    return out;
  }
  // The same in float, one rounding per op in the graph's order.
  History run_f32() const {
    float lr_f = float(lr), m_f = float(momentum), wd_f = float(wd);
    std::vector<float> p(kP0.begin(), kP0.end()), buf(kN, 0.0f);
    History out;
    for (const auto& c : kGrads) {
      for (int i = 0; i < kN; ++i) {
        float d = float(c[i]);
        if (wd != 0) d = d + p[i] * wd_f;
        if (momentum != 0) d = buf[i] = buf[i] * m_f + d;
        p[i] = p[i] - d * lr_f;
      }
      out.push_back({{"p", {p.begin(), p.end()}}, {"momentum.p", {buf.begin(), buf.end()}}});
    }
    return out;
  }
};

TEST(Sgd, MomentumAndWeightDecayMatchTorchFormulaInFloat64) {
  SgdOptions opt{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01};
  Graph g = training_graph(DType::F64, [&](Graph& gr, Value p, Value dp) { sgd_step(gr, {p}, {dp}, opt); });
  ASSERT_TRUE(g.find("momentum.p").has_value());
  ASSERT_EQ(g.state_updates().size(), 2u);  // momentum buffer and parameter
  expect_history(run_steps(g, DType::F64, DType::F64), SgdRef{0.1, 0.9, 0.01}.run(), false);
}

TEST(Sgd, Float32StepIsBitExactWithPerOpRounding) {
  SgdOptions opt{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1};
  Graph g = training_graph(DType::F32, [&](Graph& gr, Value p, Value dp) { sgd_step(gr, {p}, {dp}, opt); });
  expect_history(run_steps(g, DType::F32, DType::F32), SgdRef{0.05, 0.8, 0.1}.run_f32(), true);
}

TEST(Sgd, PlainSgdHasNoState) {
  SgdOptions opt{.lr = 0.5};
  Graph g = training_graph(DType::F64, [&](Graph& gr, Value p, Value dp) { sgd_step(gr, {p}, {dp}, opt); });
  EXPECT_TRUE(g.states().empty());
  expect_history(run_steps(g, DType::F64, DType::F64), SgdRef{0.5, 0.0, 0.0}.run(), false);
}

// ---- Adam

struct AdamRef {
  double lr, b1, b2, eps, wd;
  // torch.optim.Adam (single-tensor) in double.
  History run() const {
    std::vector<double> p = kP0, m(kN, 0.0), v(kN, 0.0);
    History out;
    double step = 0;
    for (const auto& c : kGrads) {
      step += 1;
      double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      double step_size = lr / bc1, bc2_sqrt = std::sqrt(bc2);
      for (int i = 0; i < kN; ++i) {
        double g = c[i] + wd * p[i];
        m[i] = m[i] + (1 - b1) * (g - m[i]);
        v[i] = v[i] * b2 + (1 - b2) * g * g;
        double denom = std::sqrt(v[i]) / bc2_sqrt + eps;
        p[i] = p[i] - step_size * (m[i] / denom);
      }
      out.push_back({{"p", p}, {"adam.exp_avg.p", m}, {"adam.exp_avg_sq.p", v}, {"adam.step", {step}}});
    }
    return out;
  }
  // All in float with one rounding per graph op (scalar_dtype = F32).
  History run_f32() const {
    auto f = [](double x) { return double(float(x)); };
    double lr_f = f(lr), b1_f = f(b1), b2_f = f(b2), eps_f = f(eps), wd_f = f(wd), omb1 = f(1 - b1), omb2 = f(1 - b2);
    std::vector<double> p(kN), m(kN, 0.0), v(kN, 0.0);
    for (int i = 0; i < kN; ++i) p[i] = f(kP0[i]);
    History out;
    double step = 0;
    for (const auto& c : kGrads) {
      step = f(step + 1);
      double bc1 = f(1 - f(std::pow(b1_f, step))), bc2 = f(1 - f(std::pow(b2_f, step)));
      double step_size = f(lr_f / bc1), bc2_sqrt = f(std::sqrt(bc2));
      for (int i = 0; i < kN; ++i) {
        double g = f(c[i]);
        if (wd != 0) g = f(g + f(p[i] * wd_f));
        m[i] = f(m[i] + f(f(g - m[i]) * omb1));
        v[i] = f(f(v[i] * b2_f) + f(f(g * omb2) * g));
        double denom = f(f(f(std::sqrt(v[i])) / bc2_sqrt) + eps_f);
        p[i] = f(p[i] - f(f(m[i] / denom) * step_size));
      }
      out.push_back({{"p", p}, {"adam.exp_avg.p", m}, {"adam.exp_avg_sq.p", v}, {"adam.step", {step}}});
    }
    return out;
  }
};

TEST(Adam, MatchesTorchFormulaInFloat64) {
  AdamOptions opt{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.05};
  Graph g = training_graph(DType::F64, [&](Graph& gr, Value p, Value dp) { adam_step(gr, {p}, {dp}, opt); });
  EXPECT_EQ(g.state_updates().size(), 4u);  // step, m, v, p
  expect_history(run_steps(g, DType::F64, DType::F64), AdamRef{0.01, 0.9, 0.999, 1e-8, 0.05}.run(), false);
}

TEST(Adam, Float32WithFloat32ScalarsIsBitExactWithPerOpRounding) {
  AdamOptions opt{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1,
                  .scalar_dtype = DType::F32};
  Graph g = training_graph(DType::F32, [&](Graph& gr, Value p, Value dp) { adam_step(gr, {p}, {dp}, opt); });
  expect_history(run_steps(g, DType::F32, DType::F32), AdamRef{0.01, 0.9, 0.999, 1e-8, 0.1}.run_f32(), true);
}

TEST(Adam, Float32ParametersWithFloat64BiasCorrectionsTrackTorch) {
  // f32 parameters, bias corrections in f64 as PyTorch's Python scalars; evaluated in float64 the result is
  // the double formula up to the f32 rounding of the inputs and constants.
  AdamOptions opt{.lr = 0.01, .weight_decay = 0.05};
  Graph g = training_graph(DType::F32, [&](Graph& gr, Value p, Value dp) { adam_step(gr, {p}, {dp}, opt); });
  bool has_f64 = false;
  for (const graph::Node& n : g.nodes()) has_f64 = has_f64 || n.type.dtype == DType::F64;
  EXPECT_TRUE(has_f64);
  History got = run_steps(g, DType::F32, DType::F64);
  History want = AdamRef{0.01, 0.9, 0.999, 1e-8, 0.05}.run();
  for (size_t s = 0; s < want.size(); ++s)
    for (int i = 0; i < kN; ++i)
      EXPECT_NEAR(got[s]["p"][i], want[s]["p"][i], 1e-6 * (1 + std::abs(want[s]["p"][i])));
}

TEST(Optimizers, RejectMismatchedArguments) {
  Graph g;
  Value p = g.parameter("p", DType::F32, {3});
  Value x = g.input("x", DType::F32, {3});
  EXPECT_THROW(sgd_step(g, {p}, {}, {}), graph::GraphError);
  EXPECT_THROW(sgd_step(g, {x}, {x}, {}), graph::GraphError);  // not a parameter
  EXPECT_THROW(adam_step(g, {p}, {g.sum(x)}, {}), graph::GraphError);  // gradient of the wrong type
}

// Training a tiny softmax classifier reduces its loss with both optimizers.
TEST(Optimizers, TrainingStepsReduceTheLoss) {
  for (int which = 0; which < 2; ++which) {
    Graph g;
    Value x = g.input("x", DType::F64, {6, 4});
    Value labels = g.input("labels", DType::I64, {6});
    Value w = g.parameter("w", DType::F64, {3, 4});
    Value b = g.parameter("b", DType::F64, {3});
    Value loss = cross_entropy(g, g.linear(x, w, b), labels);
    g.output("loss", loss);
    auto grads = grad(g, loss, {w, b});
    if (which == 0) sgd_step(g, {w, b}, grads, {.lr = 0.5, .momentum = 0.9});
    else adam_step(g, {w, b}, grads, {.lr = 0.05});
    std::map<std::string, Tensor> persistent = graph::initial_states(g);
    persistent["w"] = Tensor(DType::F64, {3, 4}, 0.0);
    persistent["b"] = Tensor(DType::F64, {3}, 0.0);
    Tensor xs(DType::F64, {6, 4});
    for (int i = 0; i < 24; ++i) xs[i] = (i % 4 == (i / 4) % 3 ? 1.0 : 0.0) + 0.1 * std::sin(1.7 * i);  // separable
    Tensor ls = Tensor::from(DType::I64, {6}, {0, 1, 2, 0, 1, 2});
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      std::map<std::string, Tensor> feed = persistent;
      feed["x"] = xs;
      feed["labels"] = ls;
      auto r = graph::evaluate(g, feed, DType::F64);
      graph::write_back_state_updates(g, r, persistent);
      (step == 0 ? first : last) = r.at("loss")[0];
    }
    EXPECT_NEAR(first, std::log(3.0), 1e-12);  // zero weights: uniform prediction
    EXPECT_LT(last, 0.5 * first) << (which == 0 ? "sgd" : "adam");
  }
}

}  // namespace
}  // namespace spire::autograd
