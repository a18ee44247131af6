// Attention at a few queries in one launch (fuse.h's absorbed attention, lower_decode_attention.cpp): a decoder step's
// scores' product, their scale and mask, the softmax and the product with the values become one launch. The plan on an
// H100-like target, and the results on every device present against the float64 evaluator (outputs poisoned by the
// executor): the decoder's form (scaled, masked with the f32 minimum through a broadcast mask), the bare form, a bf16
// cache cast up, two queries, and the forms that keep their three launches (the softmax or the scores read elsewhere,
// eight queries, too many keys for the kernel's workgroup memory). And the step's cache writes in the same launch: key
// and value caches as states written in place at a slot (passes/cache_in_place.h's form), f32 and bf16, over several
// steps, the caches after each against the evaluator's; a cache that is also an output keeps its write's launch; the
// query and the new key rotated (a rotary embedding) in the same launch, unless the rotated query is also an output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "lowering/tunable_ops.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/float64_step_check.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace decode_attention_fusion_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

constexpr int64_t kHeads = 4, kDepth = 32;

struct Form {
  const char* name;
  int64_t queries = 1;
  int64_t keys = 40;
  bool scaled_and_masked = true;
  bool bf16_cache = false;      // k and v stored in bf16, cast up (a half policy's cache)
  bool softmax_output = false;  // the softmax is also an output: stored, so three launches
  bool scores_output = false;   // so are the scaled scores
  bool absorbed() const { return !softmax_output && !scores_output && queries <= 4 && keys <= 3000; }
};

graph::Graph graph_of(const Form& f) {
  graph::Graph g;
  const Value q = g.input("q", DType::F32, {1, kHeads, f.queries, kDepth});
  Value k = g.input("k", f.bf16_cache ? DType::BF16 : DType::F32, {1, kHeads, f.keys, kDepth});
  Value v = g.input("v", f.bf16_cache ? DType::BF16 : DType::F32, {1, kHeads, f.keys, kDepth});
  if (f.bf16_cache) {
    k = g.cast(k, DType::F32);
    v = g.cast(v, DType::F32);
  }
  Value scores = g.matmul(q, g.transpose(k));
  if (f.scaled_and_masked) {
    const Value allowed = g.input("allowed", DType::Bool, {1, 1, 1, f.keys});
    scores = g.where(allowed, g.div(scores, std::sqrt(double(kDepth))), g.scalar(-3.4028234663852886e38, DType::F32));
  }
  const Value p = g.op("softmax", {scores}, {{"axis", 3}});
  g.output("out", g.matmul(p, v));
  if (f.softmax_output) g.output("p", p);
  if (f.scores_output) g.output("scores", scores);
  return g;
}

std::vector<Form> forms() {
  return {{"a decoder's step"},
          {"bare", 1, 40, false},
          {"a bf16 cache", 1, 40, true, true},
          {"two queries, 300 keys", 2, 300},
          {"the softmax an output", 1, 40, true, false, true},
          {"the scores an output", 1, 40, true, false, false, true},
          {"eight queries", 8, 40},
          {"5000 keys", 1, 5000}};
}

TEST(DecodeAttentionFusionPlan, OneLaunchWhereItFits) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const lowering::Plan plan = lowering::lower(graph_of(f), testing_support::h100_like_target());
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    using lowering::testing_support::count_prefix;
    EXPECT_EQ(count_prefix(kernels, "decode_attention_"), f.absorbed() ? 1 : 0) << lowering::plan_text(plan);
    EXPECT_EQ(count_prefix(kernels, "softmax"), f.absorbed() ? 0 : 1) << lowering::plan_text(plan);
    EXPECT_EQ(count_prefix(kernels, "matvec_") + count_prefix(kernels, "matmul"), f.absorbed() ? 0 : 2)
        << lowering::plan_text(plan);
    if (f.absorbed()) {
      EXPECT_EQ(plan.launches.size(), 1u) << lowering::plan_text(plan);
    }
  }
}

// The tuner times what runs: the absorbed attention's products and softmax have no launch to time (and its one kernel
// has no configs), where the unabsorbed forms keep both products and the softmax.
TEST(DecodeAttentionFusionPlan, TheTunerTimesOnlyWhatRuns) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    int products = 0, softmaxes = 0;
    for (const lowering::TunableOp& op : lowering::tunable_ops(graph_of(f), testing_support::h100_like_target())) {
      products += op.key.op == "matmul";
      softmaxes += op.key.op == "softmax";
    }
    EXPECT_EQ(products, f.absorbed() ? 0 : 2);
    EXPECT_EQ(softmaxes, f.absorbed() ? 0 : 1);
  }
}

class DecodeAttentionFusionOnDevice : public testing_support::OnDevice {};

TEST_P(DecodeAttentionFusionOnDevice, EveryFormMatchesTheReference) {
  uint32_t seed = 120;
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    if (f.bf16_cache && !dev_->info().features.has(kir::Feature::BFloat16)) continue;
    const graph::Graph g = graph_of(f);
    std::map<std::string, Tensor> in;
    for (const char* name : {"q", "k", "v"}) {
      const graph::Node& n = g.node(g.at(name));
      in[name] = testing_support::uniform_tensor(n.type.shape, seed++, n.type.dtype);
      // Inputs of the bf16 form hold bf16 values: the float64 evaluator rounds only outputs, so the cast is exact.
      for (double& e : in[name].data) e = graph::round_to(n.type.dtype, 3 * e);
    }
    if (f.scaled_and_masked) {
      Tensor allowed(DType::Bool, {1, 1, 1, f.keys}, 1.0);
      for (int64_t j = 0; j < f.keys; j += 3) allowed.data[size_t(j)] = 0;  // every third key masked
      in["allowed"] = allowed;
    }
    lowering::testing_support::expect_step_matches_float64(*dev_, g, in, 2e-5);
  }
}

// A decoder's step over caches of kSlots positions: k and v states, the step's new rows written at `slot` (write_at in
// place, the states' updates), the scores scaled and masked by `allowed`.
constexpr int64_t kSlots = 24;

struct CacheForm {
  const char* name;
  DType cache = DType::F32;
  bool cache_output = false;  // the written key cache is also an output: its write keeps a launch of its own
  int64_t group = 1;          // grouped-query attention: kHeads query heads over kHeads / group cached ones, each
                              // broadcast to its group's heads (reshape, broadcast_to, reshape) as Llama's export does
  bool rotary = false;        // the query and the new key rotated (x cos + concat(-x[h:], x[:h]) sin, Llama's export),
                              // computed by the attention's launch
  bool rotated_query_output = false;  // the rotated query is also an output: stored, so a launch of its own
};

// A rotary embedding's form: x * cos + concat(-x[..., h:], x[..., :h]) * sin along the last axis (of kDepth).
Value rotated(graph::Graph& g, Value x, Value cos, Value sin) {
  const graph::Shape& shape = g.type(x).shape;
  graph::Shape half = shape;
  half.back() = kDepth / 2;
  auto piece = [&](int64_t start) {
    std::vector<int64_t> starts(shape.size(), 0);
    starts.back() = start;
    return g.op("slice", {x}, {{"starts", starts}, {"steps", std::vector<int64_t>(shape.size(), 1)}, {"shape", half}});
  };
  const Value turned = g.op("concat", {g.neg(piece(kDepth / 2)), piece(0)}, {{"axis", int64_t(shape.size() - 1)}});
  return g.add(g.mul(x, cos), g.mul(turned, sin));
}

graph::Graph cache_graph_of(const CacheForm& f) {
  graph::Graph g;
  Value q = g.input("q", DType::F32, {1, kHeads, 1, kDepth});
  Value cos, sin;
  if (f.rotary) {
    cos = g.input("cos", DType::F32, {1, 1, 1, kDepth});
    sin = g.input("sin", DType::F32, {1, 1, 1, kDepth});
    q = rotated(g, q, cos, sin);
    if (f.rotated_query_output) g.output("q_rotated", q);
  }
  const Value slot = g.input("slot", DType::I64, {1});
  const Value allowed = g.input("allowed", DType::Bool, {1, 1, 1, kSlots});
  Value cached[2];
  const char* names[2] = {"k", "v"};
  const int64_t cached_heads = kHeads / f.group;
  for (int i = 0; i < 2; ++i) {
    const Value state = g.state(names[i], f.cache, {1, cached_heads, kSlots, kDepth});
    // (A rotated key is computed in f32 and rounded to the cache's type.)
    const bool rotate = f.rotary && i == 0;
    Value fresh = g.input(std::string(names[i]) + "_new", rotate ? DType::F32 : f.cache, {1, cached_heads, 1, kDepth});
    if (rotate) fresh = rotated(g, fresh, cos, sin);
    if (rotate && f.cache != DType::F32) fresh = g.cast(fresh, f.cache);
    const Value written = g.op("write_at", {state, fresh, slot}, {{"axis", int64_t(2)}});
    g.state_update(state, written);
    Value heads = written;
    if (f.group > 1) {
      const Value lifted = g.reshape(written, {1, cached_heads, 1, kSlots, kDepth});
      heads = g.reshape(g.broadcast_to(lifted, {1, cached_heads, f.group, kSlots, kDepth}), {1, kHeads, kSlots, kDepth});
    }
    cached[i] = f.cache == DType::F32 ? heads : g.cast(heads, DType::F32);
  }
  const Value scores = g.where(allowed, g.div(g.matmul(q, g.transpose(cached[0])), std::sqrt(double(kDepth))),
                               g.scalar(-3.4028234663852886e38, DType::F32));
  g.output("out", g.matmul(g.op("softmax", {scores}, {{"axis", 3}}), cached[1]));
  if (f.cache_output) g.output("k_out", g.node(cached[0]).op == graph::OpKind::Cast ? g.node(cached[0]).inputs[0] : cached[0]);
  return g;
}

std::vector<CacheForm> cache_forms() {
  return {{"f32 caches"},
          {"bf16 caches", DType::BF16},
          {"the key cache an output", DType::F32, true},
          {"grouped-query: 4 heads over 2", DType::F32, false, 2},
          {"grouped-query: 4 heads over 1, bf16", DType::BF16, false, 4},
          {"rotary query and key", DType::F32, false, 1, true},
          {"rotary query and key, bf16, grouped-query: 4 heads over 2", DType::BF16, false, 2, true},
          {"rotary, the rotated query an output", DType::F32, false, 1, true, true}};
}

TEST(DecodeAttentionFusionPlan, TheStepsCacheWritesAreInTheSameLaunch) {
  for (const CacheForm& f : cache_forms()) {
    SCOPED_TRACE(f.name);
    const lowering::Plan plan = lowering::lower(cache_graph_of(f), testing_support::h100_like_target());
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    using lowering::testing_support::count_prefix;
    EXPECT_EQ(count_prefix(kernels, "decode_attention_"), 1) << lowering::plan_text(plan);
    EXPECT_EQ(count_prefix(kernels, "write_at_"), f.cache_output ? 1 : 0) << lowering::plan_text(plan);
    EXPECT_EQ(count_prefix(kernels, "broadcast"), 0) << "a group's heads read the cache itself: " << lowering::plan_text(plan);
    // (The rotated query stored as an output is a launch of its own, named for its root, the add.)
    EXPECT_EQ(count_prefix(kernels, "add_"), f.rotated_query_output ? 1 : 0) << lowering::plan_text(plan);
    if (!f.cache_output) {
      EXPECT_EQ(plan.launches.size(), f.rotated_query_output ? 2u : 1u) << lowering::plan_text(plan);
    }
    EXPECT_TRUE(plan.copies.empty() || f.cache_output) << "the caches are written in place: " << lowering::plan_text(plan);
  }
}

// Under the bf16 policy (passes/half_storage.h, then compute_in_f32, which moves a half value's moves after its cast
// up) the step is still one launch: the key's write too (no dead half move left reading the written cache), a group's
// heads read from the half cache itself (the cast up below the group's copy read as half), nothing cast up in a launch
// of its own.
TEST(DecodeAttentionFusionPlan, UnderTheBf16PolicyTheStepIsStillOneLaunch) {
  for (const CacheForm& f : cache_forms()) {
    if (f.cache_output || f.rotated_query_output) continue;
    SCOPED_TRACE(f.name);
    const lowering::Plan plan =
        lowering::lower(cache_graph_of(f), testing_support::h100_like_target(), nullptr, nullptr, true, Precision::Bf16);
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    using lowering::testing_support::count_prefix;
    size_t per_step = 0;
    for (const lowering::Launch& l : plan.launches) per_step += !l.parameters_only;
    EXPECT_EQ(per_step, 1u) << lowering::plan_text(plan);
    EXPECT_EQ(count_prefix(kernels, "write_at_"), 0) << lowering::plan_text(plan);
    ASSERT_EQ(count_prefix(kernels, "decode_attention_"), 1) << lowering::plan_text(plan);
    for (const std::string& k : kernels) {  // (an f32 state stays f32 under the policy: the caller's interface)
      if (k.rfind("decode_attention_", 0) == 0 && f.cache == DType::BF16) {
        EXPECT_NE(k.find("_kbf16_vbf16"), std::string::npos) << k;
      }
    }
  }
}

TEST_P(DecodeAttentionFusionOnDevice, CacheWritesMatchTheReferenceStepAfterStep) {
  for (const CacheForm& f : cache_forms()) {
    SCOPED_TRACE(f.name);
    if (f.cache == DType::BF16 && !dev_->info().features.has(kir::Feature::BFloat16)) continue;
    const graph::Graph g = cache_graph_of(f);
    auto exe = lowering::compile(g, *dev_);
    const int64_t cached_heads = kHeads / f.group;
    std::map<std::string, Tensor> feeds{{"k", Tensor(f.cache, {1, cached_heads, kSlots, kDepth}, 0.0)},
                                        {"v", Tensor(f.cache, {1, cached_heads, kSlots, kDepth}, 0.0)}};
    uint32_t seed = 140;
    int64_t step = 0;
    for (int64_t slot : {0, 1, 2, 7, 3}) {
      for (const char* name : {"q", "k_new", "v_new", "cos", "sin"}) {
        if (!g.find(name)) continue;
        const graph::Node& n = g.node(g.at(name));
        feeds[name] = testing_support::uniform_tensor(n.type.shape, seed++, n.type.dtype);
        for (double& e : feeds[name].data) e = graph::round_to(n.type.dtype, 3 * e);
        // Rotating a bf16 cache's key: the float64 evaluator rounds only outputs and states, where the device rounds
        // the rotated key to bf16 before the scores read it; so each element keeps one term, +-x[d] or +-x[d +- h]
        // (cos and sin 0 or +-1 by turns), with k_new's values bf16 ones: the rotation is exact in bf16.
        if (f.rotary && f.cache == DType::BF16) {
          const bool is_cos = std::string(name) == "cos", is_sin = std::string(name) == "sin";
          for (size_t i = 0; i < feeds[name].data.size(); ++i) {
            double& e = feeds[name].data[i];
            if (is_cos || is_sin) e = (i % 2 == (is_cos ? 0u : 1u)) ? (i % 4 < 2 ? 1 : -1) : 0;
            else if (std::string(name) == "k_new") e = graph::round_to(DType::BF16, e);
          }
        }
        exe->set(name, feeds[name]);
      }
      // The slots written so far (and the new one) are allowed, as a decoder's mask allows its past.
      Tensor allowed(DType::Bool, {1, 1, 1, kSlots}, 0.0);
      for (int64_t j = 0; j < kSlots; ++j) allowed.data[size_t(j)] = j <= std::max<int64_t>(step, 7) ? 1 : 0;
      feeds["allowed"] = allowed;
      feeds["slot"] = Tensor(DType::I64, {1}, double(slot));
      exe->set("allowed", allowed);
      exe->set("slot", feeds["slot"]);
      exe->step();
      ++step;
      const auto want = graph::evaluate(g, feeds, DType::F64);
      for (const auto& o : g.outputs()) {
        const Tensor got = exe->get(o.name);
        ASSERT_EQ(got.numel(), want.at(o.name).numel()) << o.name;
        for (int64_t i = 0; i < got.numel(); ++i)
          EXPECT_NEAR(got[i], want.at(o.name)[i], 2e-5 * (1 + std::abs(want.at(o.name)[i]))) << o.name << " " << i;
      }
      for (const char* name : {"k", "v"}) {
        feeds[name] = want.at(name);  // the state's new value
        if (!f.rotary) {
          EXPECT_EQ(exe->get(name).data, feeds[name].data) << name << " after writing slot " << slot;
          continue;
        }
        // A rotated key is computed in f32 on the device and in float64 by the reference, then rounded to the cache's
        // type: within f32's rounding of its two terms (each up to 9), or one step of bf16's.
        const Tensor got = exe->get(name);
        const double step = f.cache == DType::F32 ? 0 : 1.0 / 128;
        for (int64_t i = 0; i < got.numel(); ++i)
          EXPECT_NEAR(got[i], feeds[name][i], step * std::abs(feeds[name][i]) + 4e-6) << name << " " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DecodeAttentionFusionOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DecodeAttentionFusionOnDevice);

}  // namespace
}  // namespace decode_attention_fusion_test
