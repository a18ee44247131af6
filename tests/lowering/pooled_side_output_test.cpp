// Pooled side outputs (lowering/fuse.h): a max pooling over 2x2-style windows of a convolution's result, or of its
// epilogue's root, is stored by the convolution's launch and gets no launch of its own (lower_conv2d.cpp: rows and
// staged-image kernels pool the values they store, the epilogue's included through kir's epilogue taps; other configs
// run the pooling in a second launch of the same program). Checked: where the plan takes it and where not, LeNet's
// launches on an H100-like target, and every candidate config's convolution and pooling against the float64 evaluator
// on every device present, under epilogues that are not monotone or vary within a window (the executor poisons buffers
// with NaN first, so an element left unwritten fails).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "passes/canonical.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "lowering/tuning_choices.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/forced_config.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"
#include "tests/support/sweep_sample.h"

namespace pooled_side_output_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Tensor;
using graph::Value;

namespace {

enum class Epilogue { BiasRelu, None, MinusBias, Negated, PerElementAdd };

// What the convolution's launch stores: y and its pooling; also the pooling's positions; those two only (y is no
// output, so nothing else reads it: fuse.h's result_unread).
enum class Stores { ResultAndPooling, AlsoPositions, PoolingAndPositionsOnly };

struct PoolCase {
  Epilogue epilogue = Epilogue::BiasRelu;
  graph::Pool2dOptions pool{{2, 2}, {2, 2}, {0, 0}};
  int64_t size = 12;  // input rows and columns (3x3 window, padding 1: the result's too)
  Stores stores = Stores::ResultAndPooling;
};

// y = epilogue(conv2d(x, w)), p = max_pool2d(y), a = max_pool2d_argmax(y): the outputs c.stores names.
Graph conv_then_pool(const PoolCase& c) {
  Graph g;
  const graph::Conv2dOptions conv{.padding = {1, 1}};
  Value x = g.input("x", DType::F32, {3, 2, c.size, c.size});
  Value w = g.input("w", DType::F32, {6, 2, 3, 3});
  Value y = g.conv2d(x, w, conv);
  Value b = g.reshape(g.input("b", DType::F32, {6}), {1, 6, 1, 1});
  switch (c.epilogue) {
    case Epilogue::BiasRelu: y = g.relu(g.add(y, b)); break;
    case Epilogue::None: break;
    case Epilogue::MinusBias: y = g.relu(g.sub(y, b)); break;
    case Epilogue::Negated: y = g.neg(g.add(y, b)); break;
    case Epilogue::PerElementAdd: y = g.add(y, g.input("r", DType::F32, {3, 6, c.size, c.size})); break;
  }
  if (c.stores != Stores::PoolingAndPositionsOnly) g.output("y", y);
  g.output("p", g.max_pool2d(y, c.pool));
  if (c.stores != Stores::ResultAndPooling) g.output("a", g.max_pool2d_argmax(y, c.pool));
  return g;
}

std::vector<std::string> outputs_of(Stores stores) {
  switch (stores) {
    case Stores::ResultAndPooling: return {"y", "p"};
    case Stores::AlsoPositions: return {"y", "p", "a"};
    case Stores::PoolingAndPositionsOnly: return {"p", "a"};
  }
  return {};
}

struct Planned {
  Graph g;
  lowering::Fusion f;
  Value conv, pool, argmax;
};

Planned plan_of(const Graph& original) {
  Planned p{passes::canonicalize(original), {}, {}, {}, {}};
  p.f = lowering::plan_fusion(p.g);
  for (Value v : p.g.values()) {
    if (p.g.node(v).op == OpKind::Conv2d) p.conv = v;
    if (p.g.node(v).op == OpKind::MaxPool2d) p.pool = v;
    if (p.g.node(v).op == OpKind::MaxPool2dArgmax) p.argmax = v;
  }
  return p;
}

// Whether some launch of the plan binds the buffer holding graph value `name`.
bool bound_by_a_launch(const lowering::Plan& plan, const std::string& name) {
  for (const lowering::Launch& l : plan.launches)
    for (int32_t b : l.buffers) {
      const auto& values = plan.buffers.at(size_t(b)).values;
      if (std::find(values.begin(), values.end(), name) != values.end()) return true;
    }
  return false;
}

using lowering::testing_support::count_prefix;
using lowering::testing_support::kernels_of;
using lowering::testing_support::node_launched;

// Every epilogue: the kernels pool the values they store.
TEST(PooledSideOutputPlan, TakenUnderAnyEpilogue) {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::None, Epilogue::MinusBias, Epilogue::Negated,
                     Epilogue::PerElementAdd}) {
    const Planned p = plan_of(conv_then_pool({.epilogue = e}));
    EXPECT_EQ(p.f.side_pool[size_t(p.conv.id)], p.pool.id) << int(e);
    EXPECT_TRUE(p.f.is_side_output[size_t(p.pool.id)]) << int(e);
    // The pooling node has no launch: the convolution's program stores it (at this size its heuristic keeps the
    // weights in workgroup memory, a kernel that runs the pooling as its program's second launch).
    const lowering::Plan plan = lowering::lower(conv_then_pool({.epilogue = e}), testing_support::h100_like_target());
    EXPECT_FALSE(node_launched(plan, p.g.node(p.pool).name)) << int(e);
    EXPECT_TRUE(node_launched(plan, p.g.node(p.conv).name)) << int(e);
  }
}

TEST(PooledSideOutputPlan, NotTakenWhereWindowsDoNotTileTheResult) {
  const PoolCase refused[] = {{.pool = {{3, 3}, {2, 2}, {1, 1}}},
                              {.pool = {{2, 2}, {1, 1}, {0, 0}}},
                              {.size = 7}};  // a 7x7 result: the last row and column lie in no window
  for (const PoolCase& c : refused) {
    const Planned p = plan_of(conv_then_pool(c));
    EXPECT_EQ(p.f.side_pool[size_t(p.conv.id)], -1) << int(c.epilogue) << " " << c.size;
    EXPECT_FALSE(p.f.is_side_output[size_t(p.pool.id)]);
    EXPECT_TRUE(node_launched(lowering::lower(conv_then_pool(c), testing_support::h100_like_target()),
                              p.g.node(p.pool).name));
  }
}

// The positions of the pooling's maxima are stored by the same launch; where only the two read the result, a kernel
// that pools does not store it: no launch binds its buffer (the kernel declares it, bound to a single element). A
// config whose pooling is a second launch stores it for that launch to read (this size's heuristic).
TEST(PooledSideOutputPlan, PositionsTooAndTheResultOnlyWhereRead) {
  const rt::DeviceInfo target = testing_support::h100_like_target();
  for (Stores stores : {Stores::AlsoPositions, Stores::PoolingAndPositionsOnly}) {
    const Graph g = conv_then_pool({.stores = stores});
    const Planned p = plan_of(g);
    ASSERT_TRUE(p.argmax.valid());
    EXPECT_EQ(p.f.side_argmax[size_t(p.conv.id)], p.argmax.id);
    EXPECT_TRUE(p.f.is_side_output[size_t(p.argmax.id)]);
    const bool unread = stores == Stores::PoolingAndPositionsOnly;
    EXPECT_EQ(bool(p.f.result_unread[size_t(p.conv.id)]), unread);
    const Value y = p.g.node(p.pool).inputs[0];  // the epilogue's root
    const lowering::TunableOp op =
        lowering::tunable_conv2d(p.g, p.conv, lowering::limits_of(target), p.f.side_outputs(p.conv));
    bool in_kernel = false, second_launch = false;
    for (const lowering::heavy::Config& config : op.candidates) {
      lowering::MapTuningChoices choices;
      choices.configs[op.key] = config;
      const lowering::Plan plan = lowering::lower(g, target, nullptr, &choices);
      EXPECT_FALSE(node_launched(plan, p.g.node(p.argmax).name));
      EXPECT_TRUE(bound_by_a_launch(plan, p.g.node(p.argmax).name));
      const bool pools = count_prefix(kernels_of(plan), "max_pool2d_n3") == 0;
      (pools ? in_kernel : second_launch) = true;
      EXPECT_EQ(bound_by_a_launch(plan, p.g.node(y).name), !unread || !pools) << config.text();
    }
    EXPECT_TRUE(in_kernel && second_launch);
  }
}

// LeNet's step at batch 8192 on an H100-like target: both convolutions store their poolings and the poolings'
// positions (the first's strips of two rows, the second's staged images through ptxas), and not their ReLU's outputs,
// which only the poolings read (the gradients read the positions, passes/pool_grad_by_argmax.h): 24 launches (the
// bias sums are side outputs too, bias_side_output_test.cpp and linear_bias_side_output_test.cpp).
TEST(PooledSideOutputPlan, LeNetsConvolutionsStoreTheirPoolings) {
  nn::LeNetGraphOptions o;
  o.batch = 8192;
  const lowering::Plan plan = lowering::lower(nn::build_lenet_graph(o), testing_support::h100_like_target());
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_n8192"), 0);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad_n8192"), 0);
  EXPECT_EQ(count_prefix(kernels, "conv2d_n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1_f32_strips_wg392_px2_pc4_pooled_argmax_only"), 1);
  EXPECT_EQ(count_prefix(kernels, "conv2d_n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1_f32_images_wg224_c1_pooled_argmax_only"), 1);
  EXPECT_FALSE(bound_by_a_launch(plan, "convnet.1"));
  EXPECT_FALSE(bound_by_a_launch(plan, "convnet.4"));
  EXPECT_EQ(plan.launches.size(), 24u);
}

class PooledSideOutput : public testing_support::OnDevice {};

// Every candidate of the pooled form under a bias and ReLU (whose zeros tie within windows: the first one's position
// wins), for each of what the launch stores; the first of each kind under the other epilogues (a negated result, whose
// window maximum is not the negated maximum; an add that varies within each window): the convolution's result (through
// its epilogue), the pooling and its positions, against float64. A 12x12 result makes the strips of 8 rows reach past
// it.
TEST_P(PooledSideOutput, EveryConfigMatchesTheReference) {
  const lowering::heavy::Limits limits = lowering::limits_of(dev_->info());
  int in_kernel = 0, second_launch = 0;
  struct Form {
    Epilogue epilogue;
    Stores stores;
  };
  std::vector<Form> forms;
  for (Stores stores : {Stores::ResultAndPooling, Stores::AlsoPositions, Stores::PoolingAndPositionsOnly})
    forms.push_back({Epilogue::BiasRelu, stores});
  for (Epilogue e : {Epilogue::None, Epilogue::MinusBias, Epilogue::Negated, Epilogue::PerElementAdd})
    forms.push_back({e, e == Epilogue::Negated ? Stores::PoolingAndPositionsOnly : Stores::AlsoPositions});
  for (const Form& form : forms) {
    const Graph g = conv_then_pool({.epilogue = form.epilogue, .stores = form.stores});
    const Planned p = plan_of(g);
    ASSERT_EQ(p.f.side_pool[size_t(p.conv.id)], p.pool.id);
    const lowering::TunableOp op = lowering::tunable_conv2d(p.g, p.conv, limits, p.f.side_outputs(p.conv));
    std::map<std::string, Tensor> in{{"x", testing_support::uniform_tensor({3, 2, 12, 12}, 21, DType::F32)},
                                     {"w", testing_support::uniform_tensor({6, 2, 3, 3}, 22, DType::F32)},
                                     {"b", testing_support::uniform_tensor({6}, 23, DType::F32)}};
    if (form.epilogue == Epilogue::PerElementAdd)
      in["r"] = testing_support::uniform_tensor({3, 6, 12, 12}, 24, DType::F32);
    const auto want = graph::evaluate(g, in, DType::F64);
    // Every candidate under the bias and ReLU; under the other epilogues the first of each kind.
    bool seen_in_kernel = false, seen_second_launch = false;
    for (const lowering::heavy::Config& config : testing_support::sampled(op.candidates)) {
      auto exe = lowering::testing_support::compile_forced(g, *dev_, op.key, config, in);
      const bool pooled = exe->plan_text().find("_pooled") != std::string::npos;
      if (form.epilogue != Epilogue::BiasRelu && (pooled ? seen_in_kernel : seen_second_launch)) continue;
      (pooled ? seen_in_kernel : seen_second_launch) = true;
      in_kernel += pooled;
      second_launch += !pooled;
      // Either the convolution's kernel stores the pooling or a pooling kernel follows it in the same program.
      ASSERT_NE(exe->plan_text().find(pooled ? "_pooled" : "max_pool2d_n3"), std::string::npos) << config.text();
      exe->step();
      for (const std::string& out : outputs_of(form.stores)) {
        const Tensor got = exe->get(out);
        const Tensor& ref = want.at(out);
        ASSERT_EQ(got.data.size(), ref.data.size());
        for (size_t i = 0; i < ref.data.size(); ++i) {
          const std::string where = fmt::format("epilogue {}, stores {}, config {}, output {}, element {}",
                                                int(form.epilogue), int(form.stores), config.text(), out, i);
          if (out == "a") {
            ASSERT_EQ(got.data[i], ref.data[i]) << where;  // a position: exact
          } else {
            ASSERT_NEAR(got.data[i], ref.data[i], 1e-5 * (1 + std::abs(ref.data[i]))) << where;
          }
        }
      }
    }
  }
  EXPECT_GT(in_kernel, 0) << "no config stored the pooling in the convolution's kernel";
  EXPECT_GT(second_launch, 0) << "no config ran the pooling in a second launch";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, PooledSideOutput, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PooledSideOutput);

}  // namespace
}  // namespace pooled_side_output_test
