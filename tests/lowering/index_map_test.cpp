// Index maps against a direct computation of numpy broadcasting and permutation, on every element.
#include <gtest/gtest.h>

#include "lowering/index_map.h"

using namespace spire;
using lowering::IndexMap;

namespace {

// Evaluates a map on the host, the way the kernel arithmetic does.
int64_t apply(const IndexMap& m, int64_t i) {
  int64_t s = 0;
  for (const auto& t : m.terms) {
    int64_t v = i / t.divisor;
    if (t.modulus) v %= t.modulus;
    s += v * t.stride;
  }
  return s;
}

// The reference: unravel the output index, drop broadcast dims, ravel in the input.
int64_t broadcast_reference(const graph::Shape& out, const graph::Shape& in, int64_t i) {
  std::vector<int64_t> coord(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coord[d] = i % out[d];
    i /= out[d];
  }
  int64_t idx = 0;
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) idx = idx * in[d] + (in[d] == 1 ? 0 : coord[lead + d]);
  return idx;
}

TEST(IndexMap, BroadcastMatchesNumpyOnEveryElement) {
  struct Case { graph::Shape out, in; };
  std::vector<Case> cases = {
      {{7, 33}, {7, 33}}, {{7, 33}, {33}}, {{7, 33}, {7, 1}}, {{7, 33}, {}},  {{2, 3, 5, 7}, {3, 1, 7}},
      {{2, 3, 5, 7}, {2, 1, 5, 1}}, {{4, 1, 6}, {1, 1, 6}}, {{1}, {}}, {{3, 4, 5}, {4, 1}}, {{257}, {1}},
  };
  for (const auto& c : cases) {
    IndexMap m = IndexMap::broadcast(c.out, c.in);
    for (int64_t i = 0; i < graph::num_elements(c.out); ++i)
      ASSERT_EQ(apply(m, i), broadcast_reference(c.out, c.in, i))
          << graph::shape_to_string(c.in) << " -> " << graph::shape_to_string(c.out) << " at " << i << " map "
          << m.to_string();
  }
}

TEST(IndexMap, CommonCasesCollapse) {
  EXPECT_TRUE(IndexMap::broadcast({7, 33}, {7, 33}).is_identity());
  EXPECT_TRUE(IndexMap::broadcast({7, 33}, {}).terms.empty());
  EXPECT_TRUE(IndexMap::broadcast({7, 33}, {1, 1}).terms.empty());
  auto bias = IndexMap::broadcast({8, 6, 5}, {6, 5});  // merged to one term: i % 30
  ASSERT_EQ(bias.terms.size(), 1u);
  EXPECT_EQ(bias.terms[0].modulus, 30);
  EXPECT_TRUE(IndexMap::permuted({1, 5, 1}, {2, 1, 0}).is_identity());
}

TEST(IndexMap, PermuteMatchesTranspose) {
  graph::Shape in = {3, 4, 5};
  std::vector<int64_t> perm = {2, 0, 1};
  IndexMap m = IndexMap::permuted(in, perm);
  // out[c][a][b] = in[a][b][c]
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 4; ++b) {
        int64_t out_linear = (c * 3 + a) * 4 + b;
        EXPECT_EQ(apply(m, out_linear), (a * 4 + b) * 5 + c);
      }
}

}  // namespace
