// graph_stats: the op table's costs summed per op kind over what the plan runs (decomposed, dead nodes out).
#include <gtest/gtest.h>

#include "lowering/stats.h"

namespace spire::lowering {
namespace {

using graph::DType;

const OpKindStats* find(const GraphStats& s, const std::string& op) {
  for (const auto& k : s.by_op)
    if (k.op == op) return &k;
  return nullptr;
}

TEST(GraphStats, SumsPerOpKindOverThePlannedNodes) {
  graph::Graph g;
  graph::Value x = g.input("x", DType::F32, {4, 8});
  graph::Value w = g.parameter("w", DType::F32, {8, 3});
  graph::Value h = g.relu(g.matmul(x, w));  // [4,3]
  g.exp(h);                                  // needed by nothing: not planned, not counted
  g.output("m", g.mean(h));                  // decomposed: sum, then a multiply by 1/12
  const GraphStats s = graph_stats(g);

  ASSERT_NE(find(s, "matmul"), nullptr);
  EXPECT_EQ(find(s, "matmul")->cost.flops, 2 * 4 * 8 * 3);
  EXPECT_EQ(find(s, "matmul")->cost.bytes, (32 + 24 + 12) * 4);
  EXPECT_EQ(find(s, "exp"), nullptr);
  EXPECT_EQ(find(s, "mean"), nullptr);
  ASSERT_NE(find(s, "sum"), nullptr);
  EXPECT_EQ(find(s, "sum")->cost.flops, 12);
  ASSERT_NE(find(s, "mul"), nullptr);
  EXPECT_EQ(find(s, "relu")->cost, (graph::OpCost{12, 24 * 4}));
  EXPECT_EQ(s.by_op.front().op, "matmul");  // most flops first

  graph::OpCost total;
  for (const auto& k : s.by_op) {
    total.flops += k.cost.flops;
    total.bytes += k.cost.bytes;
  }
  EXPECT_EQ(s.total, total);
  const std::string text = stats_text(s);
  EXPECT_NE(text.find("matmul"), std::string::npos);
  EXPECT_NE(text.find("total"), std::string::npos);
}

}  // namespace
}  // namespace spire::lowering
