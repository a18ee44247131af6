// Streamed values (CompileOptions::streamed_inputs / streamed_outputs) on every device present: a graph compiled
// with its per-step inputs and outputs streamed gives bit for bit what the same graph compiled without gives, over
// several steps of fresh data, state updates included; the semantics around set() and get() (the last value set
// wins, a streamed output has no value before the first step, a streamed input reads back as set); the names
// compile() refuses; what streaming is for: a step fed and read through streamed values is one submit and one
// wait; two steps in flight (CompileOptions::steps_in_flight) giving what one at a time gives; and inputs written in
// place into mapped device memory giving what inputs copied in give. The Vulkan validation layer is on; any message
// fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "lowering/executable.h"
#include "lowering/plan.h"
#include "lowering/device_plan.h"
#include "runtime/plan_executor.h"
#include "tests/lowering/device_list.h"
#include "tests/support/on_device.h"

using namespace spire;
using graph::DType;
using graph::Tensor;

namespace {

class Streamed : public testing_support::OnDevice {};

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<int32_t> random_labels(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> d(-5, 5);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
std::vector<T> get_raw(lowering::Executable& exe, const std::string& name, size_t count) {
  std::vector<T> out(count);
  exe.get_raw(name, out.data(), count * sizeof(T));
  return out;
}

// Bitwise: the two executables run the same kernels on the same data.
template <class T>
testing::AssertionResult same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0)
      return testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  return testing::AssertionSuccess();
}

// y = relu(2a + bias) + labels (per row), s = sum(a): an f32 input, an i64 one (i32 on the device), a parameter.
graph::Graph pointwise_graph() {
  graph::Graph g;
  auto a = g.input("a", DType::F32, {6, 40});
  auto labels = g.input("labels", DType::I64, {6});
  auto bias = g.parameter("bias", DType::F32, {40});
  auto row = g.reshape(g.cast(labels, DType::F32), {6, 1});
  g.output("y", g.add(g.relu(g.add(g.mul(a, 2.0), bias)), row));
  g.output("s", g.sum(a));
  return g;
}

// One step of least squares with momentum SGD: pred = x w, loss = mean((pred - t)^2), m <- 0.9 m + grad,
// w <- w - 0.1 m. The parameter and the state must carry over from step to step.
graph::Graph sgd_graph() {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 8});
  auto t = g.input("t", DType::F32, {4, 5});
  auto w = g.parameter("w", DType::F32, {8, 5});
  auto m = g.state("m", DType::F32, {8, 5}, 0.0);
  auto pred = g.matmul(x, w);
  auto diff = g.sub(pred, t);
  g.output("loss", g.mean(g.mul(diff, diff)));
  g.output("pred", pred);
  auto grad = g.mul(g.matmul(g.permute(x, {1, 0}), diff), 2.0 / 20);
  auto new_m = g.add(g.mul(m, 0.9), grad);
  g.state_update(m, new_m);
  g.state_update(w, g.sub(w, g.mul(new_m, 0.1)));
  return g;
}

lowering::CompileOptions streaming(std::vector<std::string> in, std::vector<std::string> out) {
  lowering::CompileOptions o;
  o.streamed_inputs = std::move(in);
  o.streamed_outputs = std::move(out);
  return o;
}

std::string compile_error(const graph::Graph& g, rt::Device& dev, const lowering::CompileOptions& opt) {
  try {
    lowering::compile(g, dev, opt);
  } catch (const graph::GraphError& e) {
    return e.what();
  }
  return "(no error)";
}

testing::AssertionResult has(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (message.find(p) == std::string::npos) return testing::AssertionFailure() << "'" << p << "' not in: " << message;
  return testing::AssertionSuccess();
}

TEST_P(Streamed, GivesTheResultsOfTheGraphWithoutStreaming) {
  const graph::Graph g = pointwise_graph();
  auto plain = lowering::compile(g, *dev_);
  auto streamed = lowering::compile(g, *dev_, streaming({"a", "labels"}, {"y", "s"}));
  auto bias = Tensor::from(DType::F32, {40}, std::vector<double>(40, 0.25));
  plain->set("bias", bias);
  streamed->set("bias", bias);
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto a = random_floats(6 * 40, 100 + uint64_t(step));
    auto labels = random_labels(6, 200 + uint64_t(step));
    for (auto* exe : {plain.get(), streamed.get()}) {
      exe->set_raw("a", a.data(), a.size() * 4);
      if (step % 2 == 0) {
        exe->set_raw("labels", labels.data(), labels.size() * 4);
      } else {  // set() converts i64 to the device's i32 on the way
        exe->set("labels", Tensor::from(DType::I64, {6}, std::vector<double>(labels.begin(), labels.end())));
      }
      exe->step();
    }
    auto y = get_raw<float>(*streamed, "y", 6 * 40);
    EXPECT_TRUE(same_bits(y, get_raw<float>(*plain, "y", 6 * 40)));
    EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "s", 1), get_raw<float>(*plain, "s", 1)));
    EXPECT_EQ(streamed->get("y").data, plain->get("y").data);
    EXPECT_EQ(streamed->get("labels").data, plain->get("labels").data);
    for (float v : y) ASSERT_FALSE(std::isnan(v)) << "a readback the step did not write";
  }
}

TEST_P(Streamed, StateUpdatesCarryOverLikeWithoutStreaming) {
  const graph::Graph g = sgd_graph();
  auto plain = lowering::compile(g, *dev_);
  auto streamed = lowering::compile(g, *dev_, streaming({"x", "t"}, {"loss", "pred"}));
  auto w0 = random_floats(8 * 5, 7);
  for (auto* exe : {plain.get(), streamed.get()}) exe->set_raw("w", w0.data(), w0.size() * 4);
  float first_loss = 0, loss = 0;
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    // The same x and t every other step, so the loss must fall if the updates persist.
    auto x = random_floats(4 * 8, 300 + uint64_t(step % 2));
    auto t = random_floats(4 * 5, 400 + uint64_t(step % 2));
    for (auto* exe : {plain.get(), streamed.get()}) {
      exe->set_raw("x", x.data(), x.size() * 4);
      exe->set_raw("t", t.data(), t.size() * 4);
      exe->step();
    }
    EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "loss", 1), get_raw<float>(*plain, "loss", 1)));
    EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "pred", 20), get_raw<float>(*plain, "pred", 20)));
    EXPECT_EQ(streamed->get("w").data, plain->get("w").data);
    EXPECT_EQ(streamed->get("m").data, plain->get("m").data);
    loss = streamed->get("loss").data[0];
    if (step == 0) first_loss = loss;
  }
  EXPECT_LT(loss, first_loss) << "six SGD steps on two batches did not lower the loss: are the updates kept?";
}

TEST_P(Streamed, TheStepSeesTheLastValueSetAndGetReadsItBack) {
  const graph::Graph g = pointwise_graph();
  auto plain = lowering::compile(g, *dev_);
  auto streamed = lowering::compile(g, *dev_, streaming({"a", "labels"}, {"y", "s"}));
  auto bias = Tensor(DType::F32, {40}, -0.5);
  auto first = random_floats(240, 11), last = random_floats(240, 12);
  auto labels = random_labels(6, 13);
  for (auto* exe : {plain.get(), streamed.get()}) {
    exe->set("bias", bias);
    exe->set_raw("labels", labels.data(), labels.size() * 4);
  }
  streamed->set_raw("a", first.data(), first.size() * 4);
  streamed->set_raw("a", last.data(), last.size() * 4);
  EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "a", 240), last)) << "get() of a streamed input before a step";
  plain->set_raw("a", last.data(), last.size() * 4);
  plain->step();
  streamed->step();
  EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "y", 240), get_raw<float>(*plain, "y", 240)));
  EXPECT_TRUE(same_bits(get_raw<float>(*streamed, "a", 240), last)) << "get() of a streamed input after a step";
}

TEST_P(Streamed, AStreamedOutputHasNoValueBeforeTheFirstStep) {
  auto exe = lowering::compile(pointwise_graph(), *dev_, streaming({"a"}, {"y"}));
  std::string message;
  try {
    exe->get("y");
  } catch (const graph::GraphError& e) {
    message = e.what();
  }
  EXPECT_TRUE(has(message, {"'y'", "streamed output", "step()"}));
  float y[240];
  EXPECT_THROW(exe->get_raw("y", y, sizeof y), graph::GraphError);
  EXPECT_NO_THROW(exe->get("s")) << "an output that is not streamed is downloaded as before";
}

TEST_P(Streamed, UnknownOrWrongNamesAreRefusedAtCompileTime) {
  const graph::Graph g = sgd_graph();
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({"nope"}, {})), {"streamed_inputs", "'nope'", "t, x"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({}, {"nada"})), {"streamed_outputs", "'nada'", "loss, pred"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({"w"}, {})), {"'w'", "parameter", "t, x"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({"m"}, {})), {"'m'", "state", "t, x"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({"loss"}, {})), {"'loss'", "output", "streamed_outputs"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({}, {"x"})), {"'x'", "not an output", "loss, pred"}));
  EXPECT_TRUE(has(compile_error(g, *dev_, streaming({"x", "x"}, {})), {"'x'", "twice"}));
}

TEST_P(Streamed, AStepFedAndReadThroughStreamedValuesIsOneSubmitAndOneWait) {
  const graph::Graph g = sgd_graph();
  auto plain = lowering::compile(g, *dev_);
  auto streamed = lowering::compile(g, *dev_, streaming({"x", "t"}, {"loss", "pred"}));
  auto w0 = random_floats(40, 21);
  for (auto* exe : {plain.get(), streamed.get()}) exe->set_raw("w", w0.data(), w0.size() * 4);
  auto run_step = [&](lowering::Executable& exe, int step) {
    auto x = random_floats(32, 500 + uint64_t(step)), t = random_floats(20, 600 + uint64_t(step));
    const rt::SyncCounts before = dev_->sync_counts();
    exe.set_raw("x", x.data(), x.size() * 4);
    exe.set_raw("t", t.data(), t.size() * 4);
    exe.step();
    float loss = 0, pred[20];
    exe.get_raw("loss", &loss, sizeof loss);
    exe.get_raw("pred", pred, sizeof pred);
    const rt::SyncCounts after = dev_->sync_counts();
    return rt::SyncCounts{after.submits - before.submits, after.waits - before.waits};
  };
  for (int step = 0; step < 3; ++step) {
    rt::SyncCounts c = run_step(*streamed, step);
    EXPECT_EQ(c.submits, 1u) << "step " << step;
    EXPECT_EQ(c.waits, 1u) << "step " << step;
  }
  // The same step with transfers of its own: each of the two sets and two gets waits for the device too.
  rt::SyncCounts c = run_step(*plain, 0);
  EXPECT_GE(c.waits, 5u);
}

TEST_P(Streamed, StartAndFinishStepGiveWhatStepGivesAndGuardTheStepInFlight) {
  // The trainer's loop: start a step, prepare the next minibatch on the host while it runs, finish it.
  const graph::Graph g = sgd_graph();
  auto whole = lowering::compile(g, *dev_, streaming({"x", "t"}, {"loss", "pred"}));
  auto halves = lowering::compile(g, *dev_, streaming({"x", "t"}, {"loss", "pred"}));
  auto w0 = random_floats(40, 31);
  for (auto* exe : {whole.get(), halves.get()}) exe->set_raw("w", w0.data(), w0.size() * 4);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto x = random_floats(32, 700 + uint64_t(step)), t = random_floats(20, 800 + uint64_t(step));
    for (auto* exe : {whole.get(), halves.get()}) {
      exe->set_raw("x", x.data(), x.size() * 4);
      exe->set_raw("t", t.data(), t.size() * 4);
    }
    whole->step();
    const rt::SyncCounts before = dev_->sync_counts();
    halves->start_step();
    // In flight: the device may still read the inputs and write the outputs.
    float loss = 0;
    EXPECT_THROW(halves->set_raw("x", x.data(), x.size() * 4), rt::Error);
    EXPECT_THROW(halves->set("t", Tensor(DType::F32, {4, 5}, 0.0)), rt::Error);
    EXPECT_THROW(halves->get_raw("loss", &loss, sizeof loss), rt::Error);
    EXPECT_THROW(halves->get("w"), rt::Error);
    EXPECT_THROW(halves->start_step(), rt::Error);
    halves->finish_step();
    const rt::SyncCounts after = dev_->sync_counts();
    EXPECT_EQ(after.submits - before.submits, 1u);
    EXPECT_EQ(after.waits - before.waits, 1u);
    EXPECT_THROW(halves->finish_step(), rt::Error) << "no step is in flight any more";
    EXPECT_TRUE(same_bits(get_raw<float>(*halves, "loss", 1), get_raw<float>(*whole, "loss", 1)));
    EXPECT_TRUE(same_bits(get_raw<float>(*halves, "pred", 20), get_raw<float>(*whole, "pred", 20)));
    EXPECT_EQ(halves->get("w").data, whole->get("w").data);
  }
}

TEST_P(Streamed, TwoStepsInFlightGiveWhatOneStepAtATimeGives) {
  // The trainer's loop with CompileOptions::steps_in_flight = 2: step k + 1 fed and started before the wait for step
  // k. The weights carry over between the steps in flight, so a step that started before the one ahead of it ended
  // would read stale weights and change every later loss.
  const graph::Graph g = sgd_graph();
  auto serial = lowering::compile(g, *dev_, streaming({"x", "t"}, {"loss", "pred"}));
  lowering::CompileOptions two = streaming({"x", "t"}, {"loss", "pred"});
  two.steps_in_flight = 2;
  auto pipelined = lowering::compile(g, *dev_, two);
  auto w0 = random_floats(40, 41);
  for (auto* exe : {serial.get(), pipelined.get()}) exe->set_raw("w", w0.data(), w0.size() * 4);
  constexpr int kSteps = 7;
  std::vector<float> serial_losses, serial_preds;
  for (int step = 0; step < kSteps; ++step) {
    auto x = random_floats(32, 900 + uint64_t(step)), t = random_floats(20, 1000 + uint64_t(step));
    serial->set_raw("x", x.data(), x.size() * 4);
    if (step != 3) serial->set_raw("t", t.data(), t.size() * 4);  // step 3 sees step 2's targets
    serial->step();
    serial_losses.push_back(get_raw<float>(*serial, "loss", 1)[0]);
    for (float p : get_raw<float>(*serial, "pred", 20)) serial_preds.push_back(p);
  }
  const rt::SyncCounts before = dev_->sync_counts();
  const auto start = [&](int step) {
    auto x = random_floats(32, 900 + uint64_t(step)), t = random_floats(20, 1000 + uint64_t(step));
    pipelined->set_raw("x", x.data(), x.size() * 4);
    if (step != 3) pipelined->set_raw("t", t.data(), t.size() * 4);
    pipelined->start_step();
  };
  start(0);
  for (int step = 0; step < kSteps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    if (step + 1 < kSteps) {
      start(step + 1);
      // Two in flight: no slot is free for a third step's input, and the older one may still write the loss.
      float x[32] = {}, loss = 0;
      EXPECT_THROW(pipelined->set_raw("x", x, sizeof x), rt::Error);
      EXPECT_THROW(pipelined->start_step(), rt::Error);
      EXPECT_THROW(pipelined->get_raw("loss", &loss, sizeof loss), rt::Error);
    }
    pipelined->finish_step();
    // One in flight (step + 1): its own slot's copies are separate from the finished step's, which read as that step.
    EXPECT_TRUE(same_bits(get_raw<float>(*pipelined, "loss", 1), {serial_losses[size_t(step)]}));
    const std::vector<float> pred(serial_preds.begin() + step * 20, serial_preds.begin() + (step + 1) * 20);
    EXPECT_TRUE(same_bits(get_raw<float>(*pipelined, "pred", 20), pred));
    // Not streamed: the device may still update it.
    if (step + 1 < kSteps) {
      EXPECT_THROW(pipelined->get("w"), rt::Error);
    }
  }
  const rt::SyncCounts after = dev_->sync_counts();
  EXPECT_EQ(after.submits - before.submits, uint64_t(kSteps));
  EXPECT_EQ(after.waits - before.waits, uint64_t(kSteps));
  EXPECT_EQ(pipelined->get("w").data, serial->get("w").data);
  EXPECT_EQ(pipelined->get("m").data, serial->get("m").data);
}

// Inputs written in place where the device maps its memory (lavapipe: all of it; a GPU through its resizable BAR),
// copied in by the step elsewhere (CUDA; SPIRE_VULKAN_FORCE_STAGING=1 forces it on Vulkan): both give the same steps,
// two in flight, a step reusing an input set two steps before included.
TEST_P(Streamed, InputsWrittenInPlaceOrCopiedInGiveTheSameSteps) {
  const graph::Graph g = sgd_graph();
  const lowering::Plan plan = lowering::lower(g, dev_->info());
  const rt::DevicePlan device_plan = lowering::to_device_plan(plan, dev_->info());
  const uint32_t x_buffer = uint32_t(plan.leaves.at("x").buffer), t_buffer = uint32_t(plan.leaves.at("t").buffer);
  rt::ExecutorOptions streamed_xt_loss;
  streamed_xt_loss.steps_in_flight = 2;
  streamed_xt_loss.streamed_inputs = {x_buffer, t_buffer};
  streamed_xt_loss.streamed_outputs = {uint32_t(plan.outputs.at("loss").buffer)};
  const bool mapped = dev_->alloc(32 * 4, rt::Memory::DeviceMapped)->mapped() != nullptr;
  {
    rt::PlanExecutor here(*dev_, device_plan, streamed_xt_loss);
    EXPECT_EQ(here.written_in_place(x_buffer), mapped);
    EXPECT_EQ(here.written_in_place(t_buffer), mapped);
    if (dev_->info().type == rt::DeviceType::Cpu && !std::getenv("SPIRE_VULKAN_FORCE_STAGING")) {
      EXPECT_TRUE(here.written_in_place(x_buffer)) << "a CPU device's memory is mapped";
    }
    if (dev_->info().backend == rt::Backend::Cuda) {
      EXPECT_FALSE(here.written_in_place(x_buffer)) << "CUDA maps no device memory";
    }
  }
  std::unique_ptr<rt::Device> staged;
  if (dev_->info().backend == rt::Backend::Vulkan) {
    setenv("SPIRE_VULKAN_FORCE_STAGING", "1", 1);
    staged = rt::open_device(GetParam());
    unsetenv("SPIRE_VULKAN_FORCE_STAGING");
    // Debian's validation layer predates structures NVIDIA's device creation chains (it says so when a device opens
    // there): count only what this test does with the devices.
    messages_before_ = rt::vulkan::validation_message_count();
    rt::PlanExecutor there(*staged, device_plan, streamed_xt_loss);
    EXPECT_FALSE(there.written_in_place(x_buffer)) << "forced staging maps no device memory";
  }
  lowering::CompileOptions two = streaming({"x", "t"}, {"loss", "pred"});
  two.steps_in_flight = 2;
  auto exe = lowering::compile(g, *dev_, two);
  auto reference = lowering::compile(g, *dev_);  // nothing streamed: uploads and downloads
  std::unique_ptr<lowering::Executable> copied = staged ? lowering::compile(g, *staged, two) : nullptr;
  auto w0 = random_floats(40, 51);
  for (auto* e : {exe.get(), reference.get(), copied.get()})
    if (e) e->set_raw("w", w0.data(), w0.size() * 4);
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto x = random_floats(32, 1100 + uint64_t(step)), t = random_floats(20, 1200 + uint64_t(step));
    for (auto* e : {exe.get(), reference.get(), copied.get()}) {
      if (!e) continue;
      e->set_raw("x", x.data(), x.size() * 4);
      if (step != 2) e->set_raw("t", t.data(), t.size() * 4);  // step 2 trains on step 1's targets
      e->step();
    }
    const auto loss = get_raw<float>(*reference, "loss", 1), pred = get_raw<float>(*reference, "pred", 20);
    EXPECT_TRUE(same_bits(get_raw<float>(*exe, "loss", 1), loss));
    EXPECT_TRUE(same_bits(get_raw<float>(*exe, "pred", 20), pred));
    if (copied) {
      EXPECT_TRUE(same_bits(get_raw<float>(*copied, "loss", 1), loss));
      EXPECT_TRUE(same_bits(get_raw<float>(*copied, "pred", 20), pred));
    }
    // A streamed input reads back as set, from the host's copy of it.
    if (step == 2) {
      EXPECT_TRUE(same_bits(exe->get("t").data, reference->get("t").data));
    }
  }
}

TEST_P(Streamed, StepsInFlightOutsideOneToFourAreRefused) {
  for (int n : {0, -1, 5}) {
    lowering::CompileOptions o = streaming({"x"}, {"loss"});
    o.steps_in_flight = n;
    try {
      lowering::compile(sgd_graph(), *dev_, o);
      ADD_FAILURE() << "steps_in_flight " << n << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(has(e.what(), {"steps_in_flight", std::to_string(n).c_str(), "1 to 4"}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Streamed, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Streamed);

}  // namespace
