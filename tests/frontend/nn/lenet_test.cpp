// LeNet: parameter names and shapes as PyTorch's state_dict lists them, init bounds, the forward pass
// through the reference evaluator against a naive CPU LeNet written here, gradients against finite
// differences of that naive LeNet, the SGD-with-momentum step, and the checks on weights read from a file.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"

namespace spire::nn {
namespace {

using graph::DType;
using graph::Tensor;
using Params = std::map<std::string, Tensor>;

const std::vector<std::pair<std::string, graph::Shape>> kExpected = {
    {"convnet.0.weight", {6, 1, 5, 5}}, {"convnet.0.bias", {6}},   {"convnet.3.weight", {16, 6, 5, 5}},
    {"convnet.3.bias", {16}},           {"fc.1.weight", {120, 784}}, {"fc.1.bias", {120}},
    {"fc.3.weight", {84, 120}},         {"fc.3.bias", {84}},         {"fc.5.weight", {10, 84}},
    {"fc.5.bias", {10}},
};

// ---- a naive LeNet in double, independent of the graph IR

// x [N,C,H,W] (flat), w [O,C,k,k], b [O], zero padding p, stride 1.
std::vector<double> conv(const std::vector<double>& x, int N, int C, int H, int W, const Tensor& w, const Tensor& b,
                         int p, int& OH, int& OW) {
  const int O = int(w.shape[0]), k = int(w.shape[2]);
  OH = H + 2 * p - k + 1;
  OW = W + 2 * p - k + 1;
  std::vector<double> y(size_t(N) * O * OH * OW);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < OH; ++i)
        for (int j = 0; j < OW; ++j) {
          double acc = b.data[size_t(o)];
          for (int c = 0; c < C; ++c)
            for (int u = 0; u < k; ++u)
              for (int v = 0; v < k; ++v) {
                const int r = i + u - p, s = j + v - p;
                if (r < 0 || r >= H || s < 0 || s >= W) continue;
                acc += x[((size_t(n) * C + c) * H + r) * W + s] * w.data[((size_t(o) * C + c) * k + u) * k + v];
              }
          y[((size_t(n) * O + o) * OH + i) * OW + j] = acc;
        }
  return y;
}

void relu(std::vector<double>& x) {
  for (double& v : x) v = std::max(v, 0.0);
}

std::vector<double> pool2(const std::vector<double>& x, int N, int C, int H, int W) {
  std::vector<double> y(size_t(N) * C * (H / 2) * (W / 2));
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H / 2; ++i)
        for (int j = 0; j < W / 2; ++j) {
          double m = -INFINITY;
          for (int u = 0; u < 2; ++u)
            for (int v = 0; v < 2; ++v) m = std::max(m, x[((size_t(n) * C + c) * H + 2 * i + u) * W + 2 * j + v]);
          y[((size_t(n) * C + c) * (H / 2) + i) * (W / 2) + j] = m;
        }
  return y;
}

std::vector<double> linear(const std::vector<double>& x, int N, const Tensor& w, const Tensor& b) {
  const int O = int(w.shape[0]), I = int(w.shape[1]);
  std::vector<double> y(size_t(N) * O);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      double acc = b.data[size_t(o)];
      for (int i = 0; i < I; ++i) acc += x[size_t(n) * I + i] * w.data[size_t(o) * I + i];
      y[size_t(n) * O + o] = acc;
    }
  return y;
}

std::vector<double> naive_logits(const Tensor& x, const Params& p) {
  const int N = int(x.shape[0]);
  int h, w;
  auto a = conv(x.data, N, 1, 28, 28, p.at("convnet.0.weight"), p.at("convnet.0.bias"), 2, h, w);
  relu(a);
  a = pool2(a, N, 6, h, w);
  a = conv(a, N, 6, h / 2, w / 2, p.at("convnet.3.weight"), p.at("convnet.3.bias"), 2, h, w);
  relu(a);
  a = pool2(a, N, 16, h, w);  // [N,16,7,7], flattened row-major = PyTorch's Flatten
  a = linear(a, N, p.at("fc.1.weight"), p.at("fc.1.bias"));
  relu(a);
  a = linear(a, N, p.at("fc.3.weight"), p.at("fc.3.bias"));
  relu(a);
  return linear(a, N, p.at("fc.5.weight"), p.at("fc.5.bias"));
}

double naive_loss(const std::vector<double>& logits, const Tensor& y) {
  const size_t N = y.data.size();
  double total = 0;
  for (size_t n = 0; n < N; ++n) {
    double m = -INFINITY;
    for (size_t c = 0; c < 10; ++c) m = std::max(m, logits[n * 10 + c]);
    double s = 0;
    for (size_t c = 0; c < 10; ++c) s += std::exp(logits[n * 10 + c] - m);
    total += m + std::log(s) - logits[n * 10 + size_t(y.data[n])];
  }
  return total / double(N);
}

// ---- fixtures

struct Batch {
  Tensor x, y;
};

Batch random_batch(int64_t n, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pixel(0.0, 1.0);
  Batch b{Tensor(dtype, {n, 1, 28, 28}), Tensor(DType::I64, {n})};
  for (double& v : b.x.data) v = graph::round_to(dtype, pixel(rng));
  for (double& v : b.y.data) v = double(rng() % 10);
  return b;
}

Params as_map(const NamedTensors& t) { return Params(t.begin(), t.end()); }

std::map<std::string, Tensor> feeds(const Batch& b, const Params& params) {
  std::map<std::string, Tensor> in = params;
  in["x"] = b.x;
  in["y"] = b.y;
  return in;
}

// ---- tests

TEST(LeNet, ParameterNamesAndShapesAreTorchsStateDict) {
  const auto specs = make_lenet().parameters();
  ASSERT_EQ(specs.size(), kExpected.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].name, kExpected[i].first);
    EXPECT_EQ(specs[i].shape, kExpected[i].second) << specs[i].name;
  }
  const auto init = lenet_initial_parameters(0);
  ASSERT_EQ(init.size(), kExpected.size());
  for (size_t i = 0; i < init.size(); ++i) {
    EXPECT_EQ(init[i].first, kExpected[i].first);
    EXPECT_EQ(init[i].second.shape, kExpected[i].second);
    EXPECT_EQ(init[i].second.dtype, DType::F32);
  }
}

TEST(LeNet, InitialValuesWithinPyTorchsDefaultBounds) {
  // fan_in by hand: conv1 1*5*5, conv2 6*5*5, fc1 16*7*7 = 784, fc2 120, fc3 84; weight and bias share the bound.
  const std::map<std::string, double> fan_in = {{"convnet.0", 25}, {"convnet.3", 150}, {"fc.1", 784},
                                                {"fc.3", 120},     {"fc.5", 84}};
  for (const auto& [name, t] : lenet_initial_parameters(123, DType::F64)) {
    const double bound = 1.0 / std::sqrt(fan_in.at(name.substr(0, name.rfind('.'))));
    double lo = INFINITY, hi = -INFINITY;
    for (double v : t.data) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_GE(lo, -bound) << name;
    EXPECT_LE(hi, bound) << name;
    if (t.numel() >= 1000) {  // enough draws to come near both ends
      EXPECT_LT(lo, -0.99 * bound) << name;
      EXPECT_GT(hi, 0.99 * bound) << name;
    }
  }
}

TEST(LeNet, GraphHasTheAgreedInterface) {
  const graph::Graph g = build_lenet_graph({.batch = 8, .dtype = DType::F32});
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.type(g.at("x")), (graph::TensorType{DType::F32, {8, 1, 28, 28}}));
  EXPECT_EQ(g.type(g.at("y")), (graph::TensorType{DType::I64, {8}}));
  const auto params = g.parameters();
  ASSERT_EQ(params.size(), kExpected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(g.node(params[i]).name, kExpected[i].first);
    EXPECT_EQ(g.type(params[i]), (graph::TensorType{DType::F32, kExpected[i].second}));
  }
  std::vector<std::string> outputs;
  for (const auto& o : g.outputs()) outputs.push_back(o.name);
  std::vector<std::string> expected{"logits", "loss"};
  for (const auto& [name, shape] : kExpected) expected.push_back("grad." + name);
  EXPECT_EQ(outputs, expected);
  EXPECT_EQ(g.type(g.outputs()[0].value), (graph::TensorType{DType::F32, {8, 10}}));
  EXPECT_EQ(g.type(g.outputs()[1].value), (graph::TensorType{DType::F32, {}}));
  for (size_t i = 0; i < kExpected.size(); ++i) {
    EXPECT_EQ(g.type(g.outputs()[2 + i].value), (graph::TensorType{DType::F32, kExpected[i].second}));
  }
  EXPECT_TRUE(g.state_updates().empty());
  EXPECT_THROW(build_lenet_graph({.batch = 0}), std::invalid_argument);
  EXPECT_THROW(build_lenet_graph({.dtype = DType::I32}), std::invalid_argument);
}

TEST(LeNet, ForwardMatchesNaiveLeNetAndLossIsNearLn10AtInit) {
  const Params params = as_map(lenet_initial_parameters(7, DType::F64));
  const Batch batch = random_batch(3, DType::F64, 11);
  const graph::Graph g = build_lenet_graph({.batch = 3, .dtype = DType::F64});
  const auto out = graph::evaluate(g, feeds(batch, params), DType::F64);

  const Tensor& logits = out.at("logits");
  ASSERT_EQ(logits.shape, (graph::Shape{3, 10}));
  const auto expected = naive_logits(batch.x, params);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(std::isfinite(logits.data[i]));
    EXPECT_NEAR(logits.data[i], expected[i], 1e-12 + 1e-12 * std::abs(expected[i])) << i;
  }
  const double loss = out.at("loss").data.at(0);
  EXPECT_NEAR(loss, naive_loss(expected, batch.y), 1e-12);
  // At PyTorch's default init the logits are small, so the softmax is near uniform: loss ~ ln(10) = 2.303.
  EXPECT_NEAR(loss, std::log(10.0), 0.1);
}

TEST(LeNet, F32GraphAgreesWithF64Reference) {
  const Params params = as_map(lenet_initial_parameters(8, DType::F32));  // float values, exact in both
  const Batch batch = random_batch(4, DType::F32, 12);
  const graph::Graph g = build_lenet_graph({.batch = 4, .dtype = DType::F32});
  const auto out = graph::evaluate(g, feeds(batch, params), DType::F32);
  const auto expected = naive_logits(batch.x, params);
  const Tensor& logits = out.at("logits");
  EXPECT_EQ(logits.dtype, DType::F32);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(logits.data[i], expected[i], 1e-5) << i;
  EXPECT_NEAR(out.at("loss").data[0], naive_loss(expected, batch.y), 1e-5);
}

TEST(LeNet, GradientsMatchFiniteDifferencesOfNaiveLeNet) {
  Params params = as_map(lenet_initial_parameters(9, DType::F64));
  const Batch batch = random_batch(2, DType::F64, 13);
  const graph::Graph g = build_lenet_graph({.batch = 2, .dtype = DType::F64});
  const auto out = graph::evaluate(g, feeds(batch, params), DType::F64);

  std::mt19937 rng(99);
  for (const auto& [name, shape] : kExpected) {
    const Tensor& grad = out.at("grad." + name);
    ASSERT_EQ(grad.shape, shape);
    for (int k = 0; k < 4; ++k) {
      const size_t i = rng() % grad.data.size();
      const double keep = params.at(name).data[i];
      const double h = 1e-6;
      params.at(name).data[i] = keep + h;
      const double up = naive_loss(naive_logits(batch.x, params), batch.y);
      params.at(name).data[i] = keep - h;
      const double down = naive_loss(naive_logits(batch.x, params), batch.y);
      params.at(name).data[i] = keep;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(grad.data[i], fd, 1e-7 + 1e-5 * std::abs(fd)) << name << "[" << i << "]";
    }
  }
}

TEST(LeNet, SgdGraphIsOneTrainingStep) {
  const double lr = 0.05, momentum = 0.9;
  LeNetGraphOptions opt{.batch = 4, .dtype = DType::F64, .sgd = true};
  opt.sgd_options = {.lr = lr, .momentum = momentum, .weight_decay = 0.0};
  const graph::Graph g = build_lenet_graph(opt);
  ASSERT_EQ(g.state_updates().size(), 2 * kExpected.size());  // each parameter and its momentum buffer

  Params state = as_map(lenet_initial_parameters(10, DType::F64));
  for (const auto& [name, shape] : kExpected) state["momentum." + name] = Tensor(DType::F64, shape, 0.0);
  const Batch batch = random_batch(4, DType::F64, 14);

  // Step 1 by hand: buf = grad, p' = p - lr * grad. Step 2: buf' = momentum * buf + grad', p'' = p' - lr * buf'.
  std::vector<double> losses;
  for (int step = 0; step < 8; ++step) {
    const auto out = graph::evaluate(g, feeds(batch, state), DType::F64);
    losses.push_back(out.at("loss").data[0]);
    if (step < 2) {
      for (const auto& [name, shape] : kExpected) {
        const Tensor& grad = out.at("grad." + name);
        const Tensor& buf = state.at("momentum." + name);
        const Tensor& p = state.at(name);
        for (size_t i = 0; i < grad.data.size(); i += 97) {
          const double new_buf = momentum * buf.data[i] + grad.data[i];
          EXPECT_NEAR(out.at("momentum." + name).data[i], new_buf, 1e-15);
          EXPECT_NEAR(out.at(name).data[i], p.data[i] - lr * new_buf, 1e-15) << name;
        }
      }
    }
    for (auto& [name, t] : state) t = out.at(name);  // the executor's write-back
  }
  // Eight steps on one batch must fit it better.
  EXPECT_LT(losses.back(), losses.front() - 0.1) << "loss went " << losses.front() << " -> " << losses.back();
}

TEST(LeNet, ParametersFromAFileAreCheckedByNameAndShape) {
  std::map<std::string, Tensor> file;
  for (const auto& [name, t] : lenet_initial_parameters(5, DType::F64)) file[name] = t;
  file["unused"] = Tensor(DType::F32, {1});
  const NamedTensors ok = lenet_parameters_from(file, "w.safetensors");
  ASSERT_EQ(ok.size(), kExpected.size());
  for (size_t i = 0; i < ok.size(); ++i) {
    EXPECT_EQ(ok[i].first, kExpected[i].first);
    EXPECT_EQ(ok[i].second.dtype, DType::F32) << "f64 files load rounded to the requested f32";
  }

  auto message = [](const std::map<std::string, Tensor>& f) -> std::string {
    try {
      lenet_parameters_from(f, "w.safetensors");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // The earlier spire LeNet (conv2 unpadded, 400 features) is named as such.
  auto old = file;
  old["fc.1.weight"] = Tensor(DType::F32, {120, 400});
  const std::string m = message(old);
  EXPECT_NE(m.find("w.safetensors: parameter 'fc.1.weight' has shape [120,400] but LeNet expects [120,784]"),
            std::string::npos) << m;
  EXPECT_NE(m.find("400 features"), std::string::npos) << m;

  auto other = file;
  other["convnet.3.weight"] = Tensor(DType::F32, {16, 6, 3, 3});
  EXPECT_NE(message(other).find("parameter 'convnet.3.weight' has shape [16,6,3,3] but LeNet expects [16,6,5,5]"),
            std::string::npos) << message(other);

  auto missing = file;
  missing.erase("fc.5.bias");
  EXPECT_NE(message(missing).find("no tensor 'fc.5.bias'"), std::string::npos) << message(missing);
}

TEST(LeNet, ReprIsTorchsPrintOfTheModel) {
  EXPECT_EQ(make_lenet().repr(),
            "LeNet(\n"
            "  (convnet): Sequential(\n"
            "    (0): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))\n"
            "    (1): ReLU()\n"
            "    (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
            "    (3): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))\n"
            "    (4): ReLU()\n"
            "    (5): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
            "  )\n"
            "  (fc): Sequential(\n"
            "    (0): Flatten(start_dim=1, end_dim=-1)\n"
            "    (1): Linear(in_features=784, out_features=120, bias=True)\n"
            "    (2): ReLU()\n"
            "    (3): Linear(in_features=120, out_features=84, bias=True)\n"
            "    (4): ReLU()\n"
            "    (5): Linear(in_features=84, out_features=10, bias=True)\n"
            "  )\n"
            ")");
}

}  // namespace
}  // namespace spire::nn
