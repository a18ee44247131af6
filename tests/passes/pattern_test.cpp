// Pattern matching: what matches and what does not (wrong op, wrong attribute, too many uses), captures of
// the same value twice, commutative operand orders, and patterns refused before they are used.
#include <gtest/gtest.h>

#include "passes/pattern.h"

namespace spire::passes {
namespace pattern_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::Value;

// relu(add(a, b)) with the add used once, and named values to look at.
struct AddRelu {
  Graph g;
  Value a, b, sum, y;
};

AddRelu add_relu() {
  AddRelu t;
  t.a = t.g.input("a", DType::F32, {4});
  t.b = t.g.input("b", DType::F32, {4});
  t.sum = t.g.name(t.g.add(t.a, t.b), "sum");
  t.y = t.g.name(t.g.relu(t.sum), "y");
  t.g.output("y", t.y);
  return t;
}

const Pattern kAddRelu = op("relu", {op("add", {any("a"), any("b")}).uses(1)});

TEST(Pattern, MatchesAndCapturesByName) {
  AddRelu t = add_relu();
  auto m = match(kAddRelu, t.g, t.y);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->at("a"), t.a);
  EXPECT_EQ(m->at("b"), t.b);
  EXPECT_EQ(m->size(), 2u);
  // .as() captures an op node too.
  auto n = match(op("relu", {op("add", {any(), any()}).as("inner")}).as("outer"), t.g, t.y);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->at("inner"), t.sum);
  EXPECT_EQ(n->at("outer"), t.y);
}

TEST(Pattern, WrongOpDoesNotMatch) {
  AddRelu t = add_relu();
  EXPECT_FALSE(match(kAddRelu, t.g, t.sum));  // the root is an add, not a relu
  EXPECT_FALSE(match(op("relu", {op("mul", {any(), any()})}), t.g, t.y));
  EXPECT_FALSE(match(op("sigmoid", {any()}), t.g, t.y));
  EXPECT_FALSE(match(op("relu", {any()}), t.g, t.a));  // a leaf is no relu
}

TEST(Pattern, UseCountTooHighDoesNotMatch) {
  AddRelu t = add_relu();
  t.g.output("sum", t.sum);  // the add is also an output: two uses
  EXPECT_FALSE(match(kAddRelu, t.g, t.y));
  EXPECT_TRUE(match(op("relu", {op("add", {any(), any()}).uses(2)}), t.g, t.y));
  EXPECT_TRUE(match(op("relu", {op("add", {any(), any()}).max_uses(2)}), t.g, t.y));
  EXPECT_FALSE(match(op("relu", {op("add", {any(), any()}).max_uses(1)}), t.g, t.y));

  AddRelu u = add_relu();
  u.g.output("z", u.g.neg(u.sum));  // another node reads the add
  EXPECT_FALSE(match(kAddRelu, u.g, u.y));
}

TEST(Pattern, UsesCountEveryReadingSlotOutputAndStateUpdate) {
  Graph g;
  Value w = g.parameter("w", DType::F32, {3});
  Value x = g.input("x", DType::F32, {3});
  Value sq = g.mul(x, x);         // x read twice by one node
  Value w2 = g.sub(w, sq);
  g.output("sq", sq);
  g.state_update(w, w2);
  const std::vector<int> uses = use_counts(g);
  EXPECT_EQ(uses[size_t(x.id)], 2);
  EXPECT_EQ(uses[size_t(sq.id)], 2);  // sub and the output
  EXPECT_EQ(uses[size_t(w2.id)], 1);  // the state update
  EXPECT_EQ(uses[size_t(w.id)], 1);   // sub reads it; being a target is no use
  EXPECT_TRUE(match(op("mul", {any("v").uses(2), same("v")}), g, sq));
  EXPECT_FALSE(match(op("mul", {any("v").uses(1), same("v")}), g, sq));
}

TEST(Pattern, AttributesAndPredicates) {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 3});
  Value s = g.sum(x, {1}, true);
  Value c = g.scalar(0.0, DType::F32);
  Value m = g.maximum(x, c);
  const Pattern keep = op("sum", {any()}).attr("keepdim", true).attr("axes", std::vector<int64_t>{1});
  EXPECT_TRUE(match(keep, g, s));
  EXPECT_FALSE(match(op("sum", {any()}).attr("keepdim", false), g, s));  // wrong attribute
  EXPECT_FALSE(match(op("sum", {any()}).attr("axes", std::vector<int64_t>{0}), g, s));
  EXPECT_FALSE(match(op("sum", {any()}).attr("missing", true), g, s));
  EXPECT_TRUE(match(op("sum", {any()}).where([](const graph::Node& n) { return n.type.shape == graph::Shape{2, 1}; }), g, s));
  EXPECT_FALSE(match(op("sum", {any()}).where([](const graph::Node& n) { return n.type.dtype == DType::F64; }), g, s));
  // constant(v) matches the fill value; an int attribute value matches a float attribute of equal value.
  EXPECT_TRUE(match(op("maximum", {any("x"), constant(0.0)}), g, m));
  EXPECT_FALSE(match(op("maximum", {any("x"), constant(1.0)}), g, m));
  EXPECT_TRUE(match(op("maximum", {any(), op("constant").attr("value", int64_t(0))}), g, m));
}

// x * sigmoid(x): the same x twice, in both operand orders.
struct Swish {
  Graph g;
  Value x, y, sig, xs, sx, other;
};

Swish swish() {
  Swish t;
  t.x = t.g.input("x", DType::F32, {5});
  t.y = t.g.input("y", DType::F32, {5});
  t.sig = t.g.sigmoid(t.x);
  t.xs = t.g.mul(t.x, t.sig);   // x * sigmoid(x)
  t.sx = t.g.mul(t.sig, t.x);   // sigmoid(x) * x
  t.other = t.g.mul(t.y, t.sig);  // y * sigmoid(x): not the same value
  return t;
}

TEST(Pattern, SameValueCapturedTwice) {
  Swish t = swish();
  const Pattern p = op("mul", {any("x"), op("sigmoid", {same("x")})});
  auto m = match(p, t.g, t.xs);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->at("x"), t.x);
  EXPECT_FALSE(match(p, t.g, t.other));  // y is not sigmoid's input
  EXPECT_FALSE(match(p, t.g, t.sx));     // written order only
}

TEST(Pattern, CommutativeTriesBothOrders) {
  Swish t = swish();
  const Pattern p = op("mul", {any("x"), op("sigmoid", {same("x")})}).commutative();
  for (Value v : {t.xs, t.sx}) {
    auto m = match(p, t.g, v);
    ASSERT_TRUE(m.has_value()) << t.g.node(v).name;
    EXPECT_EQ(m->at("x"), t.x);
  }
  EXPECT_FALSE(match(p, t.g, t.other));
}

TEST(Pattern, BacktracksIntoAnInnerCommutativeChoice) {
  // add(mul(a, b), b): the inner mul must be read as mul(_, b) for same(b) to hold, whatever order it has.
  Graph g;
  Value a = g.input("a", DType::F32, {2});
  Value b = g.input("b", DType::F32, {2});
  Value r1 = g.add(g.mul(a, b), b);
  Value r2 = g.add(g.mul(b, a), b);
  const Pattern p = op("add", {op("mul", {any("other"), any("b")}).commutative(), same("b")});
  for (Value r : {r1, r2}) {
    auto m = match(p, g, r);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->at("b"), b);
    EXPECT_EQ(m->at("other"), a);
  }
}

TEST(Pattern, MalformedPatternsAreRefused) {
  EXPECT_THROW(op("no_such_op", {}), graph::GraphError);
  EXPECT_THROW(op("add", {any()}), graph::GraphError);          // add takes two
  EXPECT_THROW(same(""), graph::GraphError);
  Swish t = swish();
  auto refused = [&](const Pattern& p, const std::string& fragment) {
    try {
      check_pattern(p);
      ADD_FAILURE() << p.to_string() << " was accepted";
    } catch (const graph::GraphError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_THROW(match(p, t.g, t.xs), graph::GraphError);
  };
  refused(op("mul", {op("sigmoid", {same("x")}), any("x")}), "same(x) comes before any capture named 'x'");
  refused(op("mul", {any("x"), any("x")}), "the capture 'x' is made twice");
  refused(op("sigmoid", {any()}).commutative(), "commutative() belongs on an op() matcher of two inputs");
  refused(op("mul", {any("x"), same("x").uses(1)}), "same() takes no constraints");
}

TEST(Pattern, PrintsForMessages) {
  EXPECT_EQ(kAddRelu.to_string(), "relu(add(a, b){uses=1})");
  EXPECT_EQ(op("mul", {any("x"), op("sigmoid", {same("x")})}).commutative().to_string(),
            "mul(x, sigmoid(same(x))){commutative}");
}

}  // namespace pattern_test
}  // namespace spire::passes
