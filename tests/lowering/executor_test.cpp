// compile() and the Executable on every device present: small graphs with hand-computed answers, state
// updates across steps, the errors a user meets, and run-to-run reproducibility. The Vulkan validation
// layer is on; any message fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "lowering/executable.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/support/on_device.h"
#include "tests/lowering/device_list.h"

using namespace spire;
using graph::DType;
using graph::Tensor;

namespace {

using testing_support::OnDevice;

std::vector<double> random_values(size_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = double(float(d(rng)));
  return v;
}

TEST_P(OnDevice, AddMulReluEndToEnd) {
  graph::Graph g;
  auto a = g.input("a", DType::F32, {7, 33});
  auto b = g.input("b", DType::F32, {33});
  auto c = g.input("c", DType::F32, {7, 1});
  g.output("y", g.relu(g.mul(g.add(a, b), c)));
  auto exe = lowering::compile(g, *dev_);
  auto av = random_values(7 * 33, 1), bv = random_values(33, 2), cv = random_values(7, 3);
  exe->set("a", Tensor::from(DType::F32, {7, 33}, av));
  exe->set("b", Tensor::from(DType::F32, {33}, bv));
  exe->set("c", Tensor::from(DType::F32, {7, 1}, cv));
  exe->step();
  Tensor y = exe->get("y");
  ASSERT_EQ(y.shape, (graph::Shape{7, 33}));
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 33; ++j) {
      float want = std::max(0.0f, (float(av[size_t(i * 33 + j)]) + float(bv[size_t(j)])) * float(cv[size_t(i)]));
      ASSERT_EQ(float(y.data[size_t(i * 33 + j)]), want) << "at " << i << "," << j;
    }
  EXPECT_GE(exe->last_step_ms(), 0.0);
}

TEST_P(OnDevice, ReductionsAndLayoutOps) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {3, 4, 5});
  g.output("sum12", g.sum(x, {1, 2}));
  g.output("max0", g.max(x, {0}, true));
  g.output("mean", g.mean(x));
  g.output("perm", g.permute(x, {2, 0, 1}));
  g.output("bcast", g.broadcast_to(g.input("r", DType::F32, {4, 1}), {2, 4, 3}));
  g.output("sumto", g.sum_to(x, {4, 1}));
  auto exe = lowering::compile(g, *dev_);
  auto xv = random_values(60, 5);
  exe->set("x", Tensor::from(DType::F32, {3, 4, 5}, xv));
  exe->set("r", Tensor::from(DType::F32, {4, 1}, {1, 2, 3, 4}));
  exe->step();
  auto X = [&](int i, int j, int k) { return xv[size_t((i * 4 + j) * 5 + k)]; };
  Tensor s = exe->get("sum12"), m = exe->get("max0"), mean = exe->get("mean"), p = exe->get("perm"),
         bc = exe->get("bcast"), st = exe->get("sumto");
  double total = 0;
  for (int i = 0; i < 3; ++i) {
    double want = 0;
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) want += X(i, j, k);
    total += want;
    EXPECT_NEAR(s.data[size_t(i)], want, 1e-5);
  }
  EXPECT_NEAR(mean.data[0], total / 60, 1e-6);
  ASSERT_EQ(m.shape, (graph::Shape{1, 4, 5}));
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 5; ++k)
      EXPECT_EQ(m.data[size_t(j * 5 + k)], std::max({X(0, j, k), X(1, j, k), X(2, j, k)}));
  for (int k = 0; k < 5; ++k)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(p.data[size_t((k * 3 + i) * 4 + j)], X(i, j, k));
  for (int a = 0; a < 2; ++a)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(bc.data[size_t((a * 4 + j) * 3 + k)], j + 1);
  for (int j = 0; j < 4; ++j) {
    double want = 0;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) want += X(i, j, k);
    EXPECT_NEAR(st.data[size_t(j)], want, 1e-5);
  }
}

TEST_P(OnDevice, LargeReductionUsesWorkgroupsAndIsReproducible) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {3, 100003});
  g.output("s", g.sum(x, {1}));
  g.output("m", g.max(x, {1}));
  auto exe = lowering::compile(g, *dev_);
  auto xv = random_values(3 * 100003, 11);
  exe->set("x", Tensor::from(DType::F32, {3, 100003}, xv));
  exe->step();
  Tensor s1 = exe->get("s"), m1 = exe->get("m");
  exe->step();
  Tensor s2 = exe->get("s");
  for (int r = 0; r < 3; ++r) {
    double want = 0, mag = 0, mx = -1e30;
    for (int k = 0; k < 100003; ++k) {
      double v = xv[size_t(r * 100003 + k)];
      want += v;
      mag += std::abs(v);
      mx = std::max(mx, v);
    }
    EXPECT_LE(std::abs(s1.data[size_t(r)] - want), 1e-6 * mag * 17) << "row " << r;
    EXPECT_EQ(m1.data[size_t(r)], mx);
    EXPECT_EQ(s1.data[size_t(r)], s2.data[size_t(r)]) << "a reduction must give the same bits every run";
  }
}

TEST_P(OnDevice, ReductionWithMoreWorkgroupsThanOneGridDimension) {
  // 70000 outputs of 130 elements: one workgroup per output, more than lavapipe's 65535 per dimension, so the
  // runtime folds the grid and the kernel must ignore the extra groups.
  graph::Graph g;
  auto x = g.input("x", DType::F32, {70000, 130});
  g.output("s", g.sum(x, {1}));
  auto exe = lowering::compile(g, *dev_);
  std::vector<double> xv(70000 * 130);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = double((i * 7919) % 13) - 6;  // small integers: exact sums
  exe->set("x", Tensor::from(DType::F32, {70000, 130}, xv));
  exe->step();
  Tensor s = exe->get("s");
  for (size_t r = 0; r < 70000; ++r) {
    double want = 0;
    for (size_t k = 0; k < 130; ++k) want += xv[r * 130 + k];
    ASSERT_EQ(s.data[r], want) << "row " << r;
  }
}

TEST_P(OnDevice, SplitReductionOfAWholeTensor) {
  // One output over a million elements is cut into chunks (two launches); mean scales only once, at the end.
  graph::Graph g;
  auto x = g.input("x", DType::F32, {1000, 1000});
  g.output("s", g.sum(x));
  g.output("m", g.mean(x));
  g.output("mx", g.max(x, {0, 1}));
  auto exe = lowering::compile(g, *dev_);
  EXPECT_NE(exe->plan_text().find("split"), std::string::npos) << exe->plan_text();
  std::vector<double> xv(1000000);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = double((i * 7919) % 101) - 50;
  xv[777777] = 1000;
  exe->set("x", Tensor::from(DType::F32, {1000, 1000}, xv));
  exe->step();
  double want = 0;
  for (double v : xv) want += v;
  EXPECT_EQ(exe->get("s").data[0], want);  // integers below 2^24 in every partial: exact
  EXPECT_NEAR(exe->get("m").data[0], want / 1e6, 1e-6 * std::abs(want / 1e6));
  EXPECT_EQ(exe->get("mx").data[0], 1000);
}

TEST_P(OnDevice, EmptyTensors) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {0, 3});
  g.output("y", g.exp(x));
  g.output("s", g.sum(x, {0}));  // the sum over nothing is 0
  auto exe = lowering::compile(g, *dev_);
  exe->set("x", Tensor(DType::F32, {0, 3}));
  exe->step();
  EXPECT_EQ(exe->get("y").numel(), 0);
  EXPECT_EQ(exe->get("s").data, (std::vector<double>{0, 0, 0}));
}

TEST_P(OnDevice, RawUploadAndDownload) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4});
  auto labels = g.input("labels", DType::I64, {4});
  g.output("y", g.add(x, g.cast(labels, DType::F32)));
  auto exe = lowering::compile(g, *dev_);
  float xs[4] = {0.5f, 1.5f, -2.0f, 8.0f};
  int32_t ls[4] = {1, 2, 3, -4};  // i64 inputs travel as i32
  exe->set_raw("x", xs, sizeof xs);
  exe->set_raw("labels", ls, sizeof ls);
  exe->step();
  float ys[4];
  exe->get_raw("y", ys, sizeof ys);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ys[i], xs[i] + float(ls[i]));
}

TEST_P(OnDevice, StateUpdatesPersistAcrossSteps) {
  // momentum SGD by hand: m <- 0.9 m + g; w <- w - 0.5 m; with g = w (the gradient of w^2 / 2).
  graph::Graph g;
  auto w = g.parameter("w", DType::F32, {5});
  auto m = g.state("m", DType::F32, {5}, 0.0);
  auto new_m = g.add(g.mul(m, 0.9), w);
  auto new_w = g.sub(w, g.mul(new_m, 0.5));
  g.state_update(m, new_m);
  g.state_update(w, new_w);
  g.output("loss", g.sum(g.mul(w, w)));
  auto exe = lowering::compile(g, *dev_);
  std::vector<double> wv = {1, -2, 3, -4, 5}, mv(5, 0.0);
  exe->set("w", Tensor::from(DType::F32, {5}, wv));
  for (int step = 0; step < 3; ++step) {
    exe->step();
    double loss = 0;
    for (int i = 0; i < 5; ++i) {
      loss += float(wv[size_t(i)]) * float(wv[size_t(i)]);
      mv[size_t(i)] = float(float(0.9f * float(mv[size_t(i)])) + float(wv[size_t(i)]));
      wv[size_t(i)] = float(float(wv[size_t(i)]) - float(0.5f * float(mv[size_t(i)])));
    }
    EXPECT_NEAR(exe->get("loss").data[0], loss, 1e-4 * loss) << "loss reads w before the update, step " << step;
    Tensor wt = exe->get("w"), mt = exe->get("m");
    for (int i = 0; i < 5; ++i) {
      EXPECT_FLOAT_EQ(float(wt.data[size_t(i)]), float(wv[size_t(i)])) << "step " << step;
      EXPECT_FLOAT_EQ(float(mt.data[size_t(i)]), float(mv[size_t(i)])) << "step " << step;
    }
  }
}

TEST_P(OnDevice, OutputsReadParametersBeforeTheirUpdate) {
  // An output that is (a view of) an updated parameter shows the value the step read, as the reference does.
  graph::Graph g;
  auto w = g.parameter("w", DType::F32, {2, 3});
  auto x = g.input("x", DType::F32, {2, 3});
  g.output("w_seen", g.reshape(w, {6}));
  g.state_update(w, g.add(w, x));
  auto exe = lowering::compile(g, *dev_);
  exe->set("w", Tensor::from(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  exe->set("x", Tensor(DType::F32, {2, 3}, 10.0));
  exe->step();
  EXPECT_EQ(exe->get("w_seen").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(exe->get("w").data, (std::vector<double>{11, 12, 13, 14, 15, 16}));
  exe->step();
  EXPECT_EQ(exe->get("w_seen").data, (std::vector<double>{11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(exe->get("w").data, (std::vector<double>{21, 22, 23, 24, 25, 26}));
}

TEST_P(OnDevice, IntegerAndBoolValues) {
  graph::Graph g;
  auto labels = g.input("labels", DType::I64, {6});
  auto k = g.input("k", DType::I32, {6});
  auto x = g.input("x", DType::F32, {6});
  auto lt = g.compare(g.cast(labels, DType::I32), k, graph::CompareMode::Lt);
  g.output("lt", lt);
  g.output("picked", g.where(lt, x, g.neg(x)));
  g.output("as_float", g.cast(labels, DType::F32));
  g.output("imax", g.maximum(k, g.cast(labels, DType::I32)));
  auto exe = lowering::compile(g, *dev_);
  exe->set("labels", Tensor::from(DType::I64, {6}, {0, 5, -3, 2000000000, 7, 1}));
  exe->set("k", Tensor::from(DType::I32, {6}, {1, 5, -4, 3, 8, -1}));
  exe->set("x", Tensor::from(DType::F32, {6}, {1, 2, 3, 4, 5, 6}));
  exe->step();
  EXPECT_EQ(exe->get("lt").data, (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(exe->get("lt").dtype, DType::Bool);
  EXPECT_EQ(exe->get("picked").data, (std::vector<double>{1, -2, -3, -4, 5, -6}));
  EXPECT_EQ(exe->get("as_float").data, (std::vector<double>{0, 5, -3, 2000000000, 7, 1}));
  EXPECT_EQ(exe->get("imax").data, (std::vector<double>{1, 5, -3, 2000000000, 8, 1}));
  EXPECT_EQ(exe->get("labels").dtype, DType::I64);
}

TEST_P(OnDevice, Float64WhenTheDeviceHasIt) {
  graph::Graph g;
  auto x = g.input("x", DType::F64, {4});
  g.output("y", g.exp(g.mul(x, 1.0 / 3)));
  if (!dev_->info().features.has(kir::Feature::Float64)) {
    EXPECT_THROW(lowering::compile(g, *dev_), rt::MissingFeature);
    GTEST_SKIP() << dev_->info().id << " has no float64: the refusal was checked";
  }
  auto exe = lowering::compile(g, *dev_);
  exe->set("x", Tensor::from(DType::F64, {4}, {0.1, 1, 2, -7}));
  exe->step();
  Tensor y = exe->get("y");
  for (int i = 0; i < 4; ++i) {
    double xi = std::vector<double>{0.1, 1, 2, -7}[size_t(i)];
    EXPECT_NEAR(y.data[size_t(i)], std::exp(xi * (1.0 / 3)), 1e-14);
  }
}

TEST_P(OnDevice, ErrorsNameTheProblem) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 3});
  auto labels = g.input("labels", DType::I64, {2});
  g.output("y", g.name(g.exp(x), "expx"));
  g.output("l", g.cast(labels, DType::F32));
  g.output("hidden_user", g.neg(g.name(g.log(x), "logx")));
  auto exe = lowering::compile(g, *dev_);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const graph::GraphError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto has = [](const std::string& m, std::initializer_list<const char*> parts) {
    for (const char* p : parts)
      if (m.find(p) == std::string::npos) return testing::AssertionFailure() << "'" << p << "' not in: " << m;
    return testing::AssertionSuccess();
  };
  EXPECT_TRUE(has(message([&] { exe->set("nope", Tensor(DType::F32, {2, 3})); }), {"nope", "x"}));
  EXPECT_TRUE(has(message([&] { exe->set("x", Tensor(DType::F32, {3, 2})); }), {"x", "f32[2,3]", "f32[3,2]"}));
  EXPECT_TRUE(has(message([&] { exe->set("x", Tensor(DType::F64, {2, 3})); }), {"x", "f32[2,3]", "f64[2,3]"}));
  EXPECT_TRUE(has(message([&] { exe->set("labels", Tensor::from(DType::I64, {2}, {1, 3e9})); }), {"labels", "3000000000", "32-bit"}));
  EXPECT_TRUE(has(message([&] { exe->set("y", Tensor(DType::F32, {2, 3})); }), {"y", "output"}));
  EXPECT_TRUE(has(message([&] { exe->get("logx"); }), {"logx", "intermediate"}));
  EXPECT_TRUE(has(message([&] {
                    float tiny[2];
                    exe->set_raw("x", tiny, sizeof tiny);
                  }),
                  {"x", "24 bytes", "8 bytes"}));
}

TEST_P(OnDevice, UnsetParametersReadAsNan) {
  // Buffers start poisoned: a parameter never set shows up as NaN, never as a plausible zero.
  graph::Graph g;
  auto w = g.parameter("w", DType::F32, {3});
  g.output("y", g.add(w, 1.0));
  auto exe = lowering::compile(g, *dev_);
  exe->step();
  for (double v : exe->get("y").data) EXPECT_TRUE(std::isnan(v));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, OnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnDevice);

TEST(Executor, ValidationLayerIsOnWhenAsked) {
  // ctest sets SPIRE_VULKAN_VALIDATION=1: the "no validation message" checks above mean something only if the
  // layer really runs.
  const char* env = std::getenv("SPIRE_VULKAN_VALIDATION");
  bool vulkan_present = false;
  for (const auto& d : rt::list_devices()) vulkan_present = vulkan_present || d.backend == rt::Backend::Vulkan;
  if (!env || (std::string(env) != "1" && std::string(env) != "sync") || !vulkan_present)
    GTEST_SKIP() << "SPIRE_VULKAN_VALIDATION=1 (or sync) not set, or no Vulkan device: nothing to check";
  EXPECT_TRUE(rt::vulkan::validation_enabled()) << "install vulkan-validationlayers";
}

TEST(Executor, AtLeastOneDeviceIsPresent) {
  EXPECT_FALSE(rt::list_devices().empty()) << "no Vulkan or CUDA device: install mesa-vulkan-drivers";
}

}  // namespace
