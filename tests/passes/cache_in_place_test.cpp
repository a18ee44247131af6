// A decoder's concat-grown cache made a fixed cache written in place (passes/cache_in_place.h): the graph's form after
// the rewrite (the state as long as the concat, write_at as its update, the present outputs gone) and what it computes
// (the float64 evaluator: attention-like reads of the cache with the new key at its slot equal the original's with the
// key appended last, under the matching masks), for an f32 and a half cache; and the graphs it must leave alone.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ir/graph/evaluator.h"
#include "passes/cache_in_place.h"
#include "tests/support/random_tensor.h"

namespace spire::passes {
namespace cache_in_place_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::Value;

constexpr int64_t kSlots = 5;  // the past's positions; the concat has kSlots + 1

// One layer's cache read as attention reads it: present = concat(past, new; axis 2) [1, 2, 6, 3], then
// out = sum over positions of present * mask (mask [1, 1, 6, 1] keeps the positions attended to). `half`: the past is a
// bf16 state cast up where it is read, as the importer stores a half cache. `second_reader`: the past is also read by
// another op, which the rewrite cannot keep.
Graph layer(bool half, bool second_reader = false) {
  Graph g;
  const Value past = g.state("past", half ? DType::BF16 : DType::F32, {1, 2, kSlots, 3});
  const Value fresh = g.input("new", DType::F32, {1, 2, 1, 3});
  g.input("slot", DType::I64, {1});
  const Value mask = g.input("mask", DType::F32, {1, 1, kSlots + 1, 1});
  const Value read = half ? g.cast(past, DType::F32) : past;
  const Value present = g.op("concat", {read, fresh}, {{"axis", int64_t(2)}});
  g.output("out", g.sum(g.mul(present, mask), {2}));
  g.output("present", present);
  if (second_reader) g.output("past_sum", g.sum(read, {2}));
  return g;
}

int count_op(const Graph& g, const std::string& name) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += graph::op_name(node.op) == name;
  return n;
}

TEST(CacheInPlace, TheConcatBecomesAWriteAtThatUpdatesALongerState) {
  for (const bool half : {false, true}) {
    SCOPED_TRACE(half ? "bf16 cache" : "f32 cache");
    const InPlaceCache r = write_cache_in_place(layer(half), {"past"}, "slot", {"present"});
    ASSERT_EQ(r.not_applied, "");
    const Graph& g = r.graph;
    EXPECT_EQ(g.type(g.at("past")).shape, (graph::Shape{1, 2, kSlots + 1, 3}));
    EXPECT_EQ(g.type(g.at("past")).dtype, half ? DType::BF16 : DType::F32);
    EXPECT_EQ(count_op(g, "concat"), 0);
    EXPECT_EQ(count_op(g, "write_at"), 1);
    EXPECT_FALSE(g.find_output("present").has_value());
    EXPECT_TRUE(g.find_output("out").has_value());
    ASSERT_EQ(g.state_updates().size(), 1u);
    EXPECT_EQ(g.state_updates()[0].target, g.at("past"));
    EXPECT_EQ(graph::op_name(g.node(g.state_updates()[0].value).op), "write_at");
    EXPECT_EQ(g.type(g.state_updates()[0].value).dtype, half ? DType::BF16 : DType::F32);
  }
}

// Past positions 0..pos-1 hold the same keys in both forms. The original attends to them and to the new key appended
// last; the rewritten one to slots 0..pos, the new key written at slot pos. Their outputs agree, and the rewritten
// state holds the new key at pos and the old keys elsewhere.
TEST(CacheInPlace, ComputesWhatTheConcatComputed) {
  for (const bool half : {false, true}) {
    SCOPED_TRACE(half ? "bf16 cache" : "f32 cache");
    const Graph original = layer(half);
    const InPlaceCache r = write_cache_in_place(original, {"past"}, "slot", {"present"});
    ASSERT_EQ(r.not_applied, "");
    const DType cache = half ? DType::BF16 : DType::F32;
    for (int64_t pos = 0; pos <= kSlots; ++pos) {
      const Tensor old = testing_support::uniform_tensor({1, 2, kSlots, 3}, uint32_t(10 + pos), cache).round_to_dtype();
      const Tensor fresh = testing_support::uniform_tensor({1, 2, 1, 3}, uint32_t(30 + pos), DType::F32);
      // The original reads a past of pos positions: the rest of its slots masked out.
      Tensor mask_before(DType::F32, {1, 1, kSlots + 1, 1}, 0.0), mask_after(DType::F32, {1, 1, kSlots + 1, 1}, 0.0);
      for (int64_t s = 0; s < pos; ++s) mask_before[s] = mask_after[s] = 1;
      mask_before[kSlots] = 1;
      mask_after[pos] = 1;
      // The rewritten cache: slots 0..kSlots-1 as the original's, its extra slot holding garbage until written.
      Tensor longer(cache, {1, 2, kSlots + 1, 3}, 7.0);
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < kSlots; ++s)
          for (int64_t e = 0; e < 3; ++e) longer[(h * (kSlots + 1) + s) * 3 + e] = old[(h * kSlots + s) * 3 + e];
      const auto want = graph::evaluate(original, {{"past", old}, {"new", fresh}, {"slot", Tensor(DType::I64, {1}, 0.0)},
                                                   {"mask", mask_before}}, DType::F64);
      const auto got = graph::evaluate(r.graph, {{"past", longer}, {"new", fresh},
                                                 {"slot", Tensor(DType::I64, {1}, double(pos))}, {"mask", mask_after}},
                                       DType::F64);
      const Tensor& out = got.at("out");
      ASSERT_EQ(out.numel(), want.at("out").numel());
      for (int64_t i = 0; i < out.numel(); ++i) {
        // A bf16 cache rounds the new key where it is stored; the original adds it unrounded.
        const double tolerance = half ? 1e-2 * (1 + std::abs(want.at("out")[i])) : 1e-12;
        EXPECT_NEAR(out[i], want.at("out")[i], tolerance) << "pos " << pos << " element " << i;
      }
      const Tensor& written = got.at("past");
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s <= kSlots; ++s)
          for (int64_t e = 0; e < 3; ++e) {
            const double expected = s == pos ? Tensor::from(cache, {1}, {fresh[h * 3 + e]}).round_to_dtype()[0]
                                             : longer[(h * (kSlots + 1) + s) * 3 + e];
            EXPECT_EQ(written[(h * (kSlots + 1) + s) * 3 + e], expected) << "pos " << pos << " slot " << s;
          }
    }
  }
}

TEST(CacheInPlace, LeavesAGraphItCannotRewriteAsItIs) {
  const Graph read_twice = layer(false, /*second_reader=*/true);
  InPlaceCache r = write_cache_in_place(read_twice, {"past"}, "slot", {"present"});
  EXPECT_NE(r.not_applied.find("'past' has 2 readers"), std::string::npos) << r.not_applied;
  EXPECT_EQ(r.graph.size(), read_twice.size());
  EXPECT_EQ(count_op(r.graph, "concat"), 1);

  r = write_cache_in_place(layer(false), {"nowhere"}, "slot", {"present"});
  EXPECT_NE(r.not_applied.find("no state 'nowhere'"), std::string::npos) << r.not_applied;
  r = write_cache_in_place(layer(false), {"past"}, "no_slot", {"present"});
  EXPECT_NE(r.not_applied.find("no input 'no_slot'"), std::string::npos) << r.not_applied;

  // The cache appended to the new key (concat(new, past)) is not the convention's growth.
  Graph reversed;
  const Value past = reversed.state("past", DType::F32, {1, 2, kSlots, 3});
  reversed.input("slot", DType::I64, {1});
  reversed.output("present", reversed.op("concat", {reversed.input("new", DType::F32, {1, 2, 1, 3}), past},
                                         {{"axis", int64_t(2)}}));
  r = write_cache_in_place(reversed, {"past"}, "slot", {"present"});
  EXPECT_NE(r.not_applied.find("first of two inputs of a concat"), std::string::npos) << r.not_applied;
}

}  // namespace cache_in_place_test
}  // namespace spire::passes
