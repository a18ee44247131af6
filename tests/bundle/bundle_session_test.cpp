// A model compiled to a bundle in this process (no file, no ONNX) and run through bundle::Session and the C API
// on every Vulkan device present: each batch 1..4 of a dynamic bundle against the float64 evaluator, a run through
// host memory as one submit and one wait, the refusals a user meets (no plan for the device, a batch out of range,
// wrong sizes and names), and statuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "bundle/bundle_file.h"
#include "bundle/compiler/compile_bundle.h"
#include "bundle/compiler/target_profiles.h"
#include "bundle/session.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"
#include "lowering/executable.h"
#include "lowering/precision_policy.h"
#include "spire/spire.h"
#include "tests/bundle/mlp_model.h"

namespace spire::bundle {
namespace {

std::vector<std::string> vulkan_devices() {
  std::vector<std::string> out;
  for (const auto& d : rt::list_devices())
    if (d.backend == rt::Backend::Vulkan) out.push_back(d.id);
  return out;
}

TEST(BundleSession, EveryBatchOfADynamicBundleMatchesTheEvaluator) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  auto b = std::make_shared<const Bundle>(parse_bundle(serialize(compile_mlp("spirv,ptx", true)), "mlp.spire"));
  ASSERT_EQ(b->plans.size(), 6u);  // batches 1, 2, 4 for two targets
  for (const std::string& id : devices) {
    auto dev = rt::open_device(id);
    Session s(b, *dev);
    for (int64_t batch : {1, 2, 3, 4, 3, 1}) {
      s.set_batch(batch);
      EXPECT_EQ(s.current_plan().batch, batch == 3 ? 4 : batch);
      const std::vector<float> x = input_rows(batch);
      s.set_input("x", x.data(), x.size() * 4);
      s.run();
      std::vector<float> y(size_t(batch * 5), std::nanf(""));
      s.get_output("y", y.data(), y.size() * 4);
      const std::vector<double> ref = reference(batch, x);
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-6) << id << " batch " << batch << " element " << i;
    }
  }
}

// The plan's distinct kernels are loaded on several threads (PlanExecutor); on one thread (SPIRE_LOAD_THREADS=1, the
// serial path) the same pipelines give the same bits, and both the evaluator's values. Each on a device of its own,
// so that every pipeline is created afresh.
TEST(BundleSession, KernelsLoadedOnSeveralThreadsGiveTheSerialPathsBits) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  auto b = std::make_shared<const Bundle>(compile_mlp("spirv", true));
  const std::vector<float> x = input_rows(4);
  std::vector<std::vector<float>> outputs;
  for (const char* threads : {"1", "4"}) {
    ::setenv("SPIRE_LOAD_THREADS", threads, 1);
    auto dev = rt::open_device(devices.front());
    Session s(b, *dev);
    s.set_batch(4);
    s.set_input("x", x.data(), x.size() * 4);
    s.run();
    outputs.emplace_back(20, std::nanf(""));
    s.get_output("y", outputs.back().data(), outputs.back().size() * 4);
  }
  ::unsetenv("SPIRE_LOAD_THREADS");
  EXPECT_EQ(std::memcmp(outputs[0].data(), outputs[1].data(), outputs[0].size() * 4), 0);
  const std::vector<double> ref = reference(4, x);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(outputs[1][i], ref[i], 1e-6) << i;
}

// A run fed and read through host memory costs one submit and one wait: the input is written in place where the
// device maps its memory (lavapipe, a GPU's resizable BAR), else into a feed buffer the run copies in (CUDA; forced
// staging, SPIRE_VULKAN_FORCE_STAGING=1, takes that path on Vulkan), and the output is read from the run's own copy;
// run after run, batch after batch, with the evaluator's values.
TEST(BundleSession, ARunThroughHostMemoryIsOneSubmitAndOneWait) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  auto b = std::make_shared<const Bundle>(compile_mlp("spirv", true));
  const bool forced = std::getenv("SPIRE_VULKAN_FORCE_STAGING") != nullptr;
  for (bool staged : {false, true}) {
    if (staged) setenv("SPIRE_VULKAN_FORCE_STAGING", "1", 1);
    auto dev = rt::open_device(devices.front());
    if (staged && !forced) unsetenv("SPIRE_VULKAN_FORCE_STAGING");
    const bool mapped = dev->alloc(4, rt::Memory::DeviceMapped)->mapped() != nullptr;
    if (staged) {
      EXPECT_FALSE(mapped) << "forced staging maps no device memory";
    } else if (dev->info().type == rt::DeviceType::Cpu && !forced) {
      EXPECT_TRUE(mapped) << "lavapipe maps all its memory";
    }
    Session s(b, *dev);
    for (int64_t batch : {4, 4, 3, 1}) {
      SCOPED_TRACE(fmt::format("{}, staged {}, batch {}", devices.front(), staged, batch));
      s.set_batch(batch);
      s.run();  // a first run at this batch records the stream (and makes the plan's buffers): not counted
      std::vector<float> x = input_rows(batch);
      for (float& v : x) v += float(batch);
      const rt::SyncCounts before = dev->sync_counts();
      s.set_input("x", x.data(), x.size() * 4);
      s.run();
      std::vector<float> y(size_t(batch * 5), std::nanf(""));
      s.get_output("y", y.data(), y.size() * 4);
      const rt::SyncCounts after = dev->sync_counts();
      EXPECT_EQ(after.submits - before.submits, 1u);
      EXPECT_EQ(after.waits - before.waits, 1u);
      const std::vector<double> ref = reference(batch, x);
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-6) << "element " << i;
    }
  }
}

// A launch that computes only from weights (the column sums of b) runs in a plan's first run only: every run after it,
// with new inputs, still reads its result, and matches the evaluator.
TEST(BundleSession, LaunchesThatReadOnlyWeightsRunOnceAndTheirResultsHold) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  const std::string text = R"(x = input() : f32[3,6]
w = parameter() : f32[6,5]
b = parameter() : f32[4,5]
bs = sum(b) {axes=[0], keepdim=false} : f32[5]
mm = matmul(x, w) : f32[3,5]
y = add(mm, bs) : f32[3,5]
output y = y
)";
  std::map<std::string, graph::Tensor> feeds = weights();
  graph::Tensor b(graph::DType::F32, {4, 5}, 0);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = 0.25 * double(i % 7) - 0.5;
  feeds["b"] = b;
  CompileBundleOptions o;
  o.targets = target_profiles("spirv");
  o.model_name = "column_sums";
  auto bundle = std::make_shared<const Bundle>(parse_bundle(
      serialize(compile_bundle([&](int64_t) { return ModelAtBatch{graph::parse(text), feeds, {{"x", "x"}}, {{"y", "y"}}}; }, o)),
      "column_sums.spire"));
  ASSERT_EQ(bundle->plans.size(), 1u);
  const auto& launches = bundle->plans[0].launches;
  EXPECT_EQ(std::count_if(launches.begin(), launches.end(), [](const LaunchSpec& l) { return l.parameters_only; }), 1);
  for (const std::string& id : devices) {
    auto dev = rt::open_device(id);
    Session s(bundle, *dev);
    for (uint32_t run = 0; run < 3; ++run) {
      std::vector<float> x = input_rows(3);
      for (float& v : x) v += float(run);
      s.set_input("x", x.data(), x.size() * 4);
      s.run();
      std::vector<float> y(15, std::nanf(""));
      s.get_output("y", y.data(), y.size() * 4);
      graph::Tensor xt(graph::DType::F32, {3, 6}, 0);
      for (size_t i = 0; i < x.size(); ++i) xt.data[i] = x[i];
      feeds["x"] = xt;
      const std::vector<double> ref = graph::evaluate(graph::parse(text), feeds, graph::DType::F64).at("y").data;
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-5) << id << " run " << run << " element " << i;
    }
  }
}

// Under --precision bf16 the weights only half readers read are stored in the bundle in half (2 bytes a value), and a
// run of the bundle gives the bits the same graph compiled in process (lowering::compile) gives under bf16.
TEST(BundleSession, ABf16BundleStoresItsWeightsInHalfAndGivesTheJitsBits) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  CompileBundleOptions o;
  o.targets = target_profiles("spirv");
  o.model_name = "mlp";
  o.precision = Precision::Bf16;
  auto b = std::make_shared<const Bundle>(parse_bundle(
      serialize(compile_bundle([](int64_t) { return ModelAtBatch{mlp_at(4), weights(), {{"x", "x"}}, {{"y", "y"}}}; }, o)),
      "mlp_bf16.spire"));
  ASSERT_EQ(b->weights.size(), 2u);
  for (const Weight& w : b->weights) {
    EXPECT_EQ(w.type, DType::BF16) << w.name;
    EXPECT_EQ(w.data().size(), w.name == "w" ? 30u * 2 : 5u * 2) << w.name;
  }
  const std::vector<float> x = input_rows(4);
  for (const std::string& id : devices) {
    auto dev = rt::open_device(id);
    if (!lowering::has_half_storage(dev->info(), Precision::Bf16)) continue;  // the plan would not run here
    Session s(b, *dev);
    s.set_input("x", x.data(), x.size() * 4);
    s.run();
    std::vector<float> y(20, std::nanf(""));
    s.get_output("y", y.data(), y.size() * 4);
    auto jit = lowering::compile(mlp_at(4), *dev, {.precision = Precision::Bf16});
    for (const auto& [name, t] : weights()) jit->set(name, t);
    jit->set_raw("x", x.data(), x.size() * 4);
    jit->step();
    std::vector<float> want(20, std::nanf(""));
    jit->get_raw("y", want.data(), want.size() * 4);
    const std::vector<double> ref = reference(4, x);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(y[i], want[i]) << id << " element " << i;
      EXPECT_NEAR(y[i], ref[i], 2e-2) << id << " element " << i;  // bf16's bound on these sums of 6 terms
    }
  }
}

TEST(BundleSession, RefusesWhatTheUserGetsWrong) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  auto dev = rt::open_device(devices.front());
  auto ptx_only = std::make_shared<const Bundle>(compile_mlp("ptx", true));
  try {
    Session s(ptx_only, *dev);
    FAIL() << "a PTX-only bundle was accepted by " << devices.front();
  } catch (const BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("no SPIR-V plan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("compiled for: ptx"), std::string::npos) << e.what();
  }
  Session s(std::make_shared<const Bundle>(compile_mlp("spirv", true)), *dev);
  EXPECT_THROW(s.set_batch(5), std::invalid_argument);
  EXPECT_THROW(s.set_batch(0), std::invalid_argument);
  s.set_batch(2);
  std::vector<float> x(12);
  EXPECT_THROW(s.set_input("x", x.data(), 11 * 4), std::invalid_argument);
  EXPECT_THROW(s.set_input("nope", x.data(), 12 * 4), std::out_of_range);
  Session fixed(std::make_shared<const Bundle>(compile_mlp("spirv", false)), *dev);
  EXPECT_EQ(fixed.bundle().max_batch, 0);
  EXPECT_THROW(fixed.set_batch(3), std::invalid_argument);
}

// The C API, through libspire_runtime.so: statuses with codes and messages, never a crash.
TEST(BundleCApi, RunsABundleAndReportsBadInputAsStatuses) {
  const auto devices = vulkan_devices();
  if (devices.empty()) GTEST_SKIP() << "no Vulkan device";
  spire_device* dev = nullptr;
  ASSERT_EQ(spire_device_open(devices.front().c_str(), &dev), nullptr);
  EXPECT_EQ(std::string(spire_device_id(dev)), devices.front());

  spire_device* none = nullptr;
  spire_status st = spire_device_open("vulkan:99", &none);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_NOT_FOUND) << spire_status_message(st);
  spire_status_free(st);

  const std::vector<uint8_t> bytes = serialize(compile_mlp("spirv,ptx", true));
  spire_model* model = nullptr;
  // Damaged copies: each a BAD_BUNDLE status whose message names the damage.
  for (auto [damage, expect] : {std::pair<int, const char*>{0, "truncated"}, {1, "checksum"}, {2, "format version"}}) {
    std::vector<uint8_t> bad = bytes;
    if (damage == 0) bad.resize(bad.size() - 100);
    if (damage == 1) bad[bad.size() - 7] ^= 1;
    if (damage == 2) bad[8] = 99;  // a format version no runtime reads
    st = spire_model_load_memory(dev, bad.data(), bad.size(), &model);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_BAD_BUNDLE);
    EXPECT_NE(std::string(spire_status_message(st)).find(expect), std::string::npos) << spire_status_message(st);
    EXPECT_EQ(model, nullptr);
    spire_status_free(st);
  }
  st = spire_model_load(dev, "/no/such/model.spire", &model);
  EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_NOT_FOUND);
  spire_status_free(st);

  ASSERT_EQ(spire_model_load_memory(dev, bytes.data(), bytes.size(), &model), nullptr);
  spire_device_release(dev);  // the model keeps the device alive
  EXPECT_EQ(spire_model_max_batch(model), 4);
  EXPECT_EQ(spire_model_dynamic_batch(model), 1);
  ASSERT_EQ(spire_model_set_batch(model, 3), nullptr);
  spire_tensor_info info;
  ASSERT_EQ(spire_model_input_info(model, 0, &info), nullptr);
  EXPECT_EQ(std::string(info.name), "x");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 3);
  EXPECT_EQ(info.bytes, 3u * 6 * 4);
  st = spire_model_input_info(model, 1, &info);
  EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_NOT_FOUND);
  spire_status_free(st);

  const std::vector<float> x = input_rows(3);
  st = spire_model_set_input(model, "x", x.data(), 7);
  EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spire_status_message(st)).find("72 bytes"), std::string::npos) << spire_status_message(st);
  spire_status_free(st);
  st = spire_model_set_batch(model, 9);
  EXPECT_EQ(spire_status_get_code(st), SPIRE_STATUS_INVALID_ARGUMENT);
  spire_status_free(st);

  ASSERT_EQ(spire_model_set_input(model, "x", x.data(), x.size() * 4), nullptr);
  ASSERT_EQ(spire_model_run(model), nullptr);
  std::vector<float> y(15, std::nanf(""));
  ASSERT_EQ(spire_model_get_output(model, "y", y.data(), y.size() * 4), nullptr);
  const std::vector<double> ref = reference(3, x);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-6) << i;
  spire_model_release(model);
  EXPECT_EQ(spire_status_get_code(nullptr), SPIRE_STATUS_OK);
}

}  // namespace
}  // namespace spire::bundle
