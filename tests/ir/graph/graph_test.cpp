// Graph bookkeeping: names, lookups, outputs, state updates, users; and the Tensor type.
#include <gtest/gtest.h>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph {
namespace {

TEST(Graph, BuilderReadsLikePyTorchAndKeepsTopologicalOrder) {
  Graph g;
  Value x = g.input("x", DType::F32, {8, 1, 28, 28});
  Value w = g.parameter("convnet.0.weight", DType::F32, {6, 1, 5, 5});
  Value y = g.relu(g.conv2d(x, w, {.padding = {2, 2}}));
  g.output("y", y);
  EXPECT_EQ(g.type(y), (TensorType{DType::F32, {8, 6, 28, 28}}));
  EXPECT_EQ(g.node(y).op, OpKind::Relu);
  EXPECT_EQ(g.node(g.node(y).inputs[0]).op, OpKind::Conv2d);
  for (Value v : g.values())
    for (Value in : g.node(v).inputs) EXPECT_LT(in.id, v.id);
  EXPECT_EQ(g.inputs(), std::vector<Value>{x});
  EXPECT_EQ(g.parameters(), std::vector<Value>{w});
  EXPECT_EQ(g.find_output("y"), y);
  EXPECT_EQ(g.find("convnet.0.weight"), w);
  EXPECT_FALSE(g.find("nope").has_value());
  EXPECT_THROW(g.at("nope"), GraphError);
}

TEST(Graph, GeneratedNamesAreUniqueAndSkipUserNames) {
  Graph g;
  Value x = g.input("x", DType::F32, {2});
  Value a = g.name(g.neg(x), "neg_2");  // a user name that looks generated
  Value b = g.neg(x);
  Value c = g.neg(x);
  EXPECT_EQ(g.node(a).name, "neg_2");
  EXPECT_NE(g.node(b).name, g.node(c).name);
  EXPECT_NE(g.node(b).name, "neg_2");
  EXPECT_NE(g.node(c).name, "neg_2");
}

TEST(Graph, RejectsDuplicateAndInvalidNames) {
  Graph g;
  Value x = g.input("x", DType::F32, {2});
  EXPECT_THROW(g.input("x", DType::F32, {2}), GraphError);
  EXPECT_THROW(g.parameter("1abc", DType::F32, {2}), GraphError);
  EXPECT_THROW(g.parameter("has space", DType::F32, {2}), GraphError);
  EXPECT_THROW(g.parameter("", DType::F32, {2}), GraphError);
  Value y = g.neg(x);
  EXPECT_THROW(g.name(y, "x"), GraphError);
  g.name(y, "y.renamed");
  EXPECT_EQ(g.at("y.renamed"), y);
  EXPECT_FALSE(g.find("neg_0").has_value() && g.at("neg_0") == y);
}

TEST(Graph, AnOutputCanBeRemovedByName) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  Value y = g.neg(x);
  g.output("a", y);
  g.output("b", g.exp(y));
  g.remove_output("a");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0].name, "b");
  EXPECT_FALSE(g.find_output("a").has_value());
  EXPECT_EQ(g.node(y).op, OpKind::Neg) << "the value stays";
  EXPECT_THROW(g.remove_output("a"), GraphError);
  g.output("a", y);  // the name is free again
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(Graph, OutputsAndStateUpdatesAreChecked) {
  Graph g;
  Value w = g.parameter("w", DType::F32, {3});
  Value s = g.state("momentum.w", DType::F32, {3}, 0.0);
  Value x = g.input("x", DType::F32, {3});
  Value w2 = g.sub(w, x);
  g.output("out", w2);
  EXPECT_THROW(g.output("out", w2), GraphError);            // duplicate output name
  EXPECT_THROW(g.state_update(x, w2), GraphError);          // inputs are not persistent
  EXPECT_THROW(g.state_update(w, g.sum(w2)), GraphError);   // type mismatch
  g.state_update(w, w2);
  g.state_update(s, w2);
  EXPECT_THROW(g.state_update(w, w2), GraphError);          // twice
  EXPECT_THROW(g.output("w", w2), GraphError);              // clashes with an update target's key
  ASSERT_EQ(g.state_updates().size(), 2u);
  EXPECT_EQ(g.state_updates()[0].target, w);
  EXPECT_EQ(g.states(), std::vector<Value>{s});
  EXPECT_DOUBLE_EQ(g.node(s).attrs.get_float("init"), 0.0);
}

TEST(Graph, UsersListsEachConsumerOnce) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  Value sq = g.mul(x, x);
  Value e = g.exp(x);
  auto users = g.users();
  EXPECT_EQ(users[size_t(x.id)], (std::vector<Value>{sq, e}));
  EXPECT_TRUE(users[size_t(e.id)].empty());
}

TEST(Graph, LinearDecomposesToMatmulTransposeAdd) {
  Graph g;
  Value x = g.input("x", DType::F32, {4, 10});
  Value w = g.parameter("w", DType::F32, {3, 10});
  Value b = g.parameter("b", DType::F32, {3});
  Value y = g.linear(x, w, b);
  EXPECT_EQ(g.type(y).shape, (Shape{4, 3}));
  const Node& add = g.node(y);
  ASSERT_EQ(add.op, OpKind::Add);
  const Node& mm = g.node(add.inputs[0]);
  ASSERT_EQ(mm.op, OpKind::Matmul);
  const Node& tr = g.node(mm.inputs[1]);
  EXPECT_EQ(tr.op, OpKind::Permute);
  EXPECT_EQ(tr.attrs.get_ints("perm"), (std::vector<int64_t>{1, 0}));
}

TEST(Graph, TypedOptionsReadBack) {
  Graph g;
  Value x = g.input("x", DType::F32, {1, 4, 9, 9});
  Value w = g.parameter("w", DType::F32, {6, 2, 3, 3});
  Value y = g.conv2d(x, w, {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2});
  Conv2dOptions o = conv2d_options(g.node(y));
  EXPECT_EQ(o.stride, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(o.padding, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(o.dilation, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(o.groups, 2);
  Value p = g.max_pool2d(x, {.kernel = {3, 3}});
  EXPECT_EQ(pool2d_options(g.node(p)).stride, (std::vector<int64_t>{3, 3}));  // stride defaults to kernel
}

TEST(Tensor, RowMajorIndexingAndRounding) {
  Tensor t = Tensor::from(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 0.1});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.at({1, 1}), 5.0);
  EXPECT_EQ(t.at({1, 2}), double(0.1f));  // rounded to float
  EXPECT_THROW(t.at({2, 0}), std::out_of_range);
  EXPECT_THROW(Tensor::from(DType::F32, {2}, {1, 2, 3}), std::invalid_argument);
  Tensor i(DType::I64, {3}, -2.7);
  EXPECT_EQ(i[0], -2.0);
  Tensor s = Tensor::scalar(DType::F64, 0.1);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s[0], 0.1);
}

}  // namespace
}  // namespace spire::graph
