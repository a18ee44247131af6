// write_at written in place into a state (lower_indexing.cpp): a decoder's cache updated by one row a step. The plan
// (no state copy, one launch, the slice of the newest row read in place) and the cache after several steps against the
// float64 evaluator's, on every device present; and the copying form where the state has a reader after the write.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace write_at_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

// A cache [1, 2, 6, 3] (heads 2, 6 slots, 3 wide) as state; the step's row [1, 2, 1, 3] goes into slot `slot`.
// decoder_like: as spire generate builds it, the row is the last position of present = concat(cache, new), which the
// step also reads (its sum is an output); else the row is an input and nothing else reads the cache.
struct CacheGraph {
  graph::Graph g;
  Value cache;
};
CacheGraph cache_graph(bool decoder_like, bool reader_after = false) {
  CacheGraph c;
  graph::Graph& g = c.g;
  c.cache = g.state("cache", DType::F32, {1, 2, 6, 3});
  const Value fresh = g.input("new", DType::F32, {1, 2, 1, 3});
  const Value slot = g.input("slot", DType::I64, {1});
  Value row = fresh;
  if (decoder_like) {
    const Value present = g.op("concat", {c.cache, fresh}, {{"axis", int64_t(2)}});
    g.output("total", g.sum(present, {2}));
    row = g.op("slice", {present}, {{"starts", std::vector<int64_t>{0, 0, 6, 0}}, {"steps", std::vector<int64_t>{1, 1, 1, 1}},
                                    {"shape", graph::Shape{1, 2, 1, 3}}});
  }
  const Value written = g.op("write_at", {c.cache, row, slot}, {{"axis", int64_t(2)}});
  g.state_update(c.cache, written);
  // A reader of the old cache that nothing orders before the write: the write must not happen in place.
  if (reader_after) g.output("doubled", g.mul(c.cache, 2.0));
  return c;
}

int count_named(const std::vector<std::string>& names, const std::string& part) {
  int n = 0;
  for (const auto& k : names) n += k.find(part) != std::string::npos;
  return n;
}

TEST(WriteAtPlan, AStateIsWrittenInPlaceOneRowAStep) {
  for (bool decoder_like : {false, true}) {
    SCOPED_TRACE(decoder_like ? "row sliced from the concatenated cache" : "row an input");
    const CacheGraph c = cache_graph(decoder_like);
    const lowering::Plan plan = lowering::lower(c.g, testing_support::h100_like_target());
    EXPECT_TRUE(plan.copies.empty()) << "the update already lives in the state: " << lowering::plan_text(plan);
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    EXPECT_EQ(count_named(kernels, "write_at_"), 1);
    EXPECT_EQ(count_named(kernels, "copy_"), 0) << "the cache is not copied";
    EXPECT_EQ(count_named(kernels, "slice_"), 0) << "the newest row is read from the concat in place";
  }
}

TEST(WriteAtPlan, AStateReadAfterTheWriteIsCopiedFirst) {
  const CacheGraph c = cache_graph(false, /*reader_after=*/true);
  const lowering::Plan plan = lowering::lower(c.g, testing_support::h100_like_target());
  EXPECT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(count_named(lowering::testing_support::kernels_of(plan), "copy_"), 1);
}

class WriteAtOnDevice : public testing_support::OnDevice {};

// Four steps into slots 0, 4, 2 and 4 again; the cache and the outputs after each against the evaluator's (the state
// carried from step to step as the executor carries it).
TEST_P(WriteAtOnDevice, TheCacheAfterEachStepMatchesTheReference) {
  for (int form = 0; form < 3; ++form) {
    SCOPED_TRACE(form == 0 ? "row an input" : form == 1 ? "decoder-like" : "a reader after the write");
    const CacheGraph c = cache_graph(form == 1, form == 2);
    auto exe = lowering::compile(c.g, *dev_);
    std::map<std::string, Tensor> feeds{{"cache", Tensor(DType::F32, {1, 2, 6, 3}, 0.0)}};
    uint32_t seed = 40;
    for (int64_t slot : {0, 4, 2, 4}) {
      feeds["new"] = testing_support::uniform_tensor({1, 2, 1, 3}, seed++, DType::F32);
      feeds["slot"] = Tensor(DType::I64, {1}, double(slot));
      exe->set("new", feeds["new"]);
      exe->set("slot", feeds["slot"]);
      exe->step();
      const auto want = graph::evaluate(c.g, feeds, DType::F64);
      for (const auto& o : c.g.outputs()) {  // (the sums within f32's rounding of 7 terms)
        const Tensor got = exe->get(o.name);
        ASSERT_EQ(got.numel(), want.at(o.name).numel()) << o.name;
        for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got[i], want.at(o.name)[i], 1e-5) << o.name << " " << i;
      }
      feeds["cache"] = want.at("cache");  // the state update's new value
      EXPECT_EQ(exe->get("cache").data, feeds["cache"].data) << "after writing slot " << slot;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, WriteAtOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WriteAtOnDevice);

}  // namespace
}  // namespace write_at_test
