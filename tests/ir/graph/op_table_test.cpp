// The op table: the named ops at their OpKind, every other op after them, each entry complete for its category.
#include <set>

#include <gtest/gtest.h>

#include "ir/graph/op_table.h"

namespace spire::graph {
namespace {

TEST(OpTable, HasOneEntryPerOpKindInOrder) {
  ASSERT_GE(op_table().size(), size_t(kNumNamedOps));
  ASSERT_EQ(op_table().size(), size_t(op_count()));
  for (int i = 0; i < op_count(); ++i) EXPECT_EQ(int(op_info(OpKind(i)).kind), i) << op_table()[size_t(i)].name;
  EXPECT_EQ(op_info(OpKind::Conv2d).name, "conv2d");
  EXPECT_THROW(op_info(OpKind(op_count())), GraphError);
}

// What each layer reads from an entry is there: pointwise ops have both formulas, every computed op a
// reference, every heavy op its cost, every tolerance a reason. (Lowering's side of each op, its entry in
// lowering's table, is held to the same by tests/lowering/op_lowering_table_test.cpp.)
TEST(OpTable, EntriesAreCompleteForTheirCategory) {
  for (const OpInfo& info : op_table()) {
    EXPECT_FALSE(info.forward.why.empty()) << info.name;
    EXPECT_FALSE(info.backward.why.empty()) << info.name;
    if (info.category == OpCategory::Pointwise) {
      EXPECT_NE(info.scalar, nullptr) << info.name;
      EXPECT_NE(info.formula, nullptr) << info.name;
    } else if (info.category != OpCategory::Leaf) {
      EXPECT_NE(info.reference, nullptr) << info.name;
    }
    if (info.category == OpCategory::Heavy) {
      EXPECT_NE(info.cost, nullptr) << info.name << ": a heavy op's flops are its own";
      EXPECT_EQ(info.scalar, nullptr) << info.name << ": a heavy op's reference is whole-op";
    }
  }
}

// Ops outside the enumerators are reached by name alone: the table numbers them after the named ops, and the
// graph builds them through op().
TEST(OpTable, OpsWithoutAnEnumeratorAreBuiltByName) {
  for (std::string_view name : {"softmax", "log_softmax", "cross_entropy", "cross_entropy_grad", "gather"}) {
    const std::optional<OpKind> op = op_from_name(name);
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_GE(int(*op), kNumNamedOps) << name;
  }
  Graph g;
  Value x = g.input("x", DType::F32, {2, 3});
  Value y = g.op("log_softmax", {x}, {{"axis", int64_t(1)}});
  EXPECT_EQ(op_name(g.node(y).op), "log_softmax");
  EXPECT_EQ(g.type(y), g.type(x));
}

TEST(OpTable, NamesAreUniqueAndRoundTrip) {
  std::set<std::string_view> names;
  for (const OpInfo& info : op_table()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate op name " << info.name;
    auto back = op_from_name(info.name);
    ASSERT_TRUE(back.has_value()) << info.name;
    EXPECT_EQ(*back, info.kind);
    EXPECT_EQ(op_name(info.kind), info.name);
  }
  EXPECT_FALSE(op_from_name("conv3d").has_value());
}

TEST(OpTable, LeavesHaveNoInputsAndNoRules) {
  for (const OpInfo& info : op_table()) {
    if (is_leaf(info.kind)) {
      EXPECT_EQ(info.arity, 0) << info.name;
      EXPECT_EQ(info.shape, nullptr) << info.name;
      EXPECT_EQ(info.vjp, nullptr) << info.name;
    } else {
      EXPECT_TRUE(info.arity > 0 || info.arity == -1) << info.name << ": a fixed count, or -1 for one or more";
      EXPECT_NE(info.shape, nullptr) << info.name << " has no shape rule";
    }
  }
}

TEST(OpTable, ForwardOpsAreDifferentiableExceptIntegerResults) {
  // Every forward op has a VJP except compare (a boolean result), max_pool2d_argmax and argmax (positions) and
  // matmul_int8_weight (inference only: its weights are integer levels, never trained); backward-only ops (named
  // *_grad*) have none (no double backward).
  for (const OpInfo& info : op_table()) {
    if (is_leaf(info.kind)) continue;
    bool backward_only = info.name.find("_grad") != std::string_view::npos;
    bool expect_vjp = !backward_only && info.kind != OpKind::Compare && info.kind != OpKind::MaxPool2dArgmax &&
                      info.name != "matmul_int8_weight" && info.name != "argmax";
    EXPECT_EQ(info.vjp != nullptr, expect_vjp) << info.name;
  }
}

TEST(OpTable, AttributeNamesAreUniquePerOp) {
  for (const OpInfo& info : op_table()) {
    std::set<std::string_view> names;
    for (const AttrSpec& a : info.attrs) EXPECT_TRUE(names.insert(a.name).second) << info.name << "." << a.name;
  }
}

TEST(Types, DTypeNamesRoundTrip) {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64, DType::F16, DType::BF16}) {
    auto back = dtype_from_name(dtype_name(t));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, t);
  }
  EXPECT_FALSE(dtype_from_name("f8").has_value());
  EXPECT_FALSE(dtype_from_name("float16").has_value());
  EXPECT_EQ(dtype_bytes(DType::F64), 8u);
  EXPECT_EQ(dtype_bytes(DType::I32), 4u);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2u);
  EXPECT_TRUE(is_half(DType::F16) && is_half(DType::BF16) && !is_half(DType::F32));
}

TEST(Types, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}), (Shape{8, 7, 6, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({3}, {2, 1}), (Shape{2, 3}));
  EXPECT_FALSE(broadcast_shapes({2, 3}, {3, 2}).has_value());
  EXPECT_EQ(TensorType({DType::F32, {8, 6, 28, 28}}).to_string(), "f32[8,6,28,28]");
  EXPECT_EQ(TensorType({DType::I64, {}}).to_string(), "i64[]");
}

}  // namespace
}  // namespace spire::graph
