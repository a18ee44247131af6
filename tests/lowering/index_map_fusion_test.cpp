// Slices, concats and gathers computed inside a pointwise tree (fuse.h's fuse_index_maps, pointwise_tree.h's
// computes_by_index): a rotary embedding's x * cos + concat(-x[h:], x[:h]) * sin is one launch, and so are a decoder's
// two embedding gathers and their sum. The plan on an
// H100-like target and the results on every device present against the float64 evaluator (outputs poisoned by the
// executor): the rotary form in f32 and with a bf16 input (the concat of bf16 pieces), two pieces of different lengths
// along a middle axis, gathers (i32 and i64 indices, negative ones, bf16 data), and the forms that keep their launches
// (three pieces, a concat that is an output, a strided slice, a slice or a gather read twice).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/float64_step_check.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace index_map_fusion_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

// x[starts ...] of `shape`, the last dimension taken every `step` elements.
Value slice(graph::Graph& g, Value x, std::vector<int64_t> starts, graph::Shape shape, int64_t step = 1) {
  std::vector<int64_t> steps(shape.size(), 1);
  steps.back() = step;
  return g.op("slice", {x}, {{"starts", std::move(starts)}, {"steps", std::move(steps)}, {"shape", std::move(shape)}});
}

struct Form {
  const char* name;
  int launches;  // in the plan
  graph::Graph (*build)();
};

// Llama's rotary embedding of x [1, 4, 1, 8]: x * cos + rotate_half(x) * sin, cos and sin [1, 1, 1, 8].
graph::Graph rotary(DType x_type) {
  graph::Graph g;
  Value x = g.input("x", x_type, {1, 4, 1, 8});
  const Value cos = g.input("cos", DType::F32, {1, 1, 1, 8}), sin = g.input("sin", DType::F32, {1, 1, 1, 8});
  const Value rotated = g.op("concat", {g.neg(slice(g, x, {0, 0, 0, 4}, {1, 4, 1, 4})), slice(g, x, {0, 0, 0, 0}, {1, 4, 1, 4})},
                             {{"axis", int64_t(3)}});
  auto f32 = [&](Value v) { return x_type == DType::F32 ? v : g.cast(v, DType::F32); };
  g.output("y", g.add(g.mul(f32(x), cos), g.mul(f32(rotated), sin)));
  return g;
}

std::vector<Form> forms() {
  return {
      {"rotary", 1, [] { return rotary(DType::F32); }},
      {"rotary of a bf16 input", 1, [] { return rotary(DType::BF16); }},
      {"two pieces along a middle axis", 1,
       [] {
         graph::Graph g;
         const Value b = g.input("b", DType::F32, {2, 1, 5}), c = g.input("c", DType::F32, {2, 4, 5});
         const Value joined = g.op("concat", {g.mul(b, 2.0), slice(g, c, {0, 1, 0}, {2, 2, 5})}, {{"axis", int64_t(1)}});
         g.output("y", g.add(joined, g.input("d", DType::F32, {2, 3, 5})));
         return g;
       }},
      {"three pieces: a copy", 2,
       [] {
         graph::Graph g;
         const Value a = g.input("a", DType::F32, {2, 3, 5}), b = g.input("b", DType::F32, {2, 1, 5});
         const Value c = g.input("c", DType::F32, {2, 2, 5});
         const Value joined = g.op("concat", {a, b, c}, {{"axis", int64_t(1)}});
         g.output("y", g.add(joined, g.input("d", DType::F32, {2, 6, 5})));
         return g;
       }},
      {"the concat an output", 2,
       [] {
         graph::Graph g;
         const Value a = g.input("a", DType::F32, {3, 4}), b = g.input("b", DType::F32, {3, 2});
         const Value joined = g.op("concat", {a, b}, {{"axis", int64_t(1)}});
         g.output("joined", joined);
         g.output("y", g.mul(joined, 3.0));
         return g;
       }},
      {"a strided slice", 2,
       [] {
         graph::Graph g;
         const Value a = g.input("a", DType::F32, {4, 8});
         g.output("y", g.add(slice(g, a, {0, 0}, {4, 4}, 2), 1.0));
         return g;
       }},
      {"embeddings: two gathers and their sum", 1,
       [] {
         graph::Graph g;
         const Value tokens = g.input("tokens", DType::F32, {10, 6}), places = g.input("places", DType::F32, {8, 6});
         const Value ids = g.input("ids", DType::I32, {1, 3}), positions = g.input("positions", DType::I64, {1, 3});
         g.output("y", g.add(g.op("gather", {tokens, ids}, {{"axis", int64_t(0)}}),
                             g.op("gather", {places, positions}, {{"axis", int64_t(0)}})));
         return g;
       }},
      {"a gather of bf16 data along a middle axis", 1,
       [] {
         graph::Graph g;
         const Value data = g.input("data", DType::BF16, {2, 5, 3}), ids = g.input("ids", DType::I32, {4});
         g.output("y", g.mul(g.cast(g.op("gather", {data, ids}, {{"axis", int64_t(1)}}), DType::F32), 2.0));
         return g;
       }},
      {"a gather read twice", 2,
       [] {
         graph::Graph g;
         const Value data = g.input("data", DType::F32, {6, 4}), ids = g.input("ids", DType::I32, {3});
         const Value rows = g.op("gather", {data, ids}, {{"axis", int64_t(0)}});
         g.output("y", g.mul(rows, rows));
         return g;
       }},
      {"a slice read twice", 2,
       [] {
         graph::Graph g;
         const Value a = g.input("a", DType::F32, {4, 8});
         const Value s = slice(g, a, {0, 2}, {4, 4});
         g.output("y", g.mul(s, s));
         return g;
       }},
  };
}

TEST(IndexMapFusionPlan, SlicesAndConcatsLaunchNothingInAPointwiseTree) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const lowering::Plan plan = lowering::lower(f.build(), testing_support::h100_like_target());
    EXPECT_EQ(int(plan.launches.size()), f.launches) << lowering::plan_text(plan);
  }
}

class IndexMapFusionOnDevice : public testing_support::OnDevice {};

TEST_P(IndexMapFusionOnDevice, EveryFormMatchesTheReference) {
  uint32_t seed = 200;
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const graph::Graph g = f.build();
    bool half = false;
    std::map<std::string, Tensor> in;
    for (Value v : g.values()) {
      const graph::Node& n = g.node(v);
      if (n.op != graph::OpKind::Input) continue;
      half |= n.type.dtype == DType::BF16;
      in[n.name] = testing_support::uniform_tensor(n.type.shape, seed++, n.type.dtype);
      if (is_int(n.type.dtype)) {  // gather indices: every table has at least 4 rows; negative ones wrap
        std::mt19937 rng(seed++);
        for (double& x : in[n.name].data) x = double(std::uniform_int_distribution<int>(-4, 3)(rng));
      }
    }
    if (half && !dev_->info().features.has(kir::Feature::BFloat16)) continue;
    lowering::testing_support::expect_step_matches_float64(*dev_, g, in, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, IndexMapFusionOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(IndexMapFusionOnDevice);

}  // namespace
}  // namespace index_map_fusion_test
