// The op table's cost rules (OpInfo::cost and the category defaults) against counts worked out by hand.
#include <gtest/gtest.h>

#include "ir/graph/op_table.h"
#include "tests/ir/graph/every_op_graph.h"

namespace spire::graph {
namespace {

TEST(OpCost, MatmulIsTwoMKN) {
  Graph g;
  const int64_t M = 3, K = 5, N = 7;
  Value c = g.matmul(g.input("a", DType::F32, {M, K}), g.input("b", DType::F32, {K, N}));
  // 2MKN = 210; bytes: a (15 floats), b (35), c (21) once each = 71 * 4.
  EXPECT_EQ(op_cost(g, c), (OpCost{2 * M * K * N, (M * K + K * N + M * N) * 4}));
}

TEST(OpCost, BatchedMatmulCountsEveryMatrix) {
  Graph g;
  Value c = g.matmul(g.input("a", DType::F64, {4, 2, 3}), g.input("b", DType::F64, {4, 3, 5}));
  EXPECT_EQ(op_cost(g, c).flops, 4 * 2 * 2 * 3 * 5);
  EXPECT_EQ(op_cost(g, c).bytes, (24 + 60 + 40) * 8);
}

TEST(OpCost, Conv2dIsTwoMacsPerOutputPerWeightOfItsChannel) {
  Graph g;
  // x [2,3,8,8], w [4,3,3,3], padding 1: out [2,4,8,8] = 512 elements, each 3*3*3 = 27 multiply-adds.
  Value y = g.conv2d(g.input("x", DType::F32, {2, 3, 8, 8}), g.parameter("w", DType::F32, {4, 3, 3, 3}),
                     {.padding = {1, 1}});
  ASSERT_EQ(g.type(y).shape, (Shape{2, 4, 8, 8}));
  EXPECT_EQ(op_cost(g, y), (OpCost{2 * 512 * 27, (384 + 108 + 512) * 4}));
}

TEST(OpCost, GroupedConv2dCountsOnlyItsGroup) {
  Graph g;
  // groups 2: w [4, 1, 3, 3]; out [1,4,6,6] = 144 elements, 9 multiply-adds each.
  Value y = g.conv2d(g.input("x", DType::F32, {1, 2, 8, 8}), g.parameter("w", DType::F32, {4, 1, 3, 3}),
                     {.groups = 2});
  EXPECT_EQ(op_cost(g, y).flops, 2 * 144 * 9);
}

TEST(OpCost, ConvGradientsRepeatTheForwardsMultiplyAdds) {
  Graph g;
  const Conv2dOptions opt{.padding = {1, 1}};
  Value x = g.input("x", DType::F32, {2, 3, 8, 8});
  Value w = g.parameter("w", DType::F32, {4, 3, 3, 3});
  Value y = g.conv2d(x, w, opt);
  Value gy = g.input("gy", DType::F32, {2, 4, 8, 8});
  EXPECT_EQ(op_cost(g, g.conv2d_grad_input(gy, w, opt, {2, 3, 8, 8})).flops, op_cost(g, y).flops);
  EXPECT_EQ(op_cost(g, g.conv2d_grad_weight(gy, x, opt, {4, 3, 3, 3})).flops, op_cost(g, y).flops);
}

TEST(OpCost, PointwiseDefaultIsOneFlopPerElementAndEachInputOnce) {
  Graph g;
  // A broadcast add: [4,5] + [5] -> [4,5]: 20 flops; the [5] operand is read once, not once per row.
  Value s = g.add(g.input("a", DType::F32, {4, 5}), g.input("b", DType::F32, {5}));
  EXPECT_EQ(op_cost(g, s), (OpCost{20, (20 + 5 + 20) * 4}));
  Value r = g.relu(s);
  EXPECT_EQ(op_cost(g, r), (OpCost{20, 40 * 4}));
}

TEST(OpCost, ReshapeIsFreeAndReductionsCountTheirInput) {
  Graph g;
  Value x = g.input("x", DType::F32, {6, 10});
  EXPECT_EQ(op_cost(g, g.reshape(x, {60})), OpCost{});
  EXPECT_EQ(op_cost(g, g.sum(x, {1})), (OpCost{60, (60 + 6) * 4}));
  EXPECT_EQ(op_cost(g, g.max_pool2d(g.input("p", DType::F32, {1, 1, 4, 4}))), (OpCost{4 * 4, (16 + 4) * 4}));
}

// Every op of the table has a cost (a rule of its own or its category's), and none is negative.
TEST(OpCost, EveryOpHasACost) {
  const Graph g = testing::every_op_graph();
  for (Value v : g.values()) {
    const OpCost c = op_cost(g, v);
    EXPECT_GE(c.flops, 0) << g.node(v).name;
    EXPECT_GE(c.bytes, 0) << g.node(v).name;
  }
  for (const OpInfo& info : op_table())
    if (info.category == OpCategory::Heavy) {
      EXPECT_NE(info.cost, nullptr) << info.name;
    }
}

}  // namespace
}  // namespace spire::graph
