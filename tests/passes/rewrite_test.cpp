// apply_rules(): replacements that are existing values, several sweeps to a fixed point, declined matches,
// what survives a rewrite (leaves, outputs, state updates), and the errors a broken rule gets.
#include <gtest/gtest.h>

#include "ir/graph/text_form.h"
#include "ir/graph/verify.h"
#include "passes/interface.h"
#include "passes/rewrite.h"

namespace spire::passes {
namespace rewrite_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::GraphError;
using graph::Value;

// A message check: `fragment` is in what `f` throws.
template <class F>
void expect_error(F f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Rewrite, AReplacementMayBeAnExistingValue) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  g.output("y", g.neg(g.neg(x)));
  const Rule cancel("double_neg", op("neg", {op("neg", {any("v")})}), [](Graph&, const Match& m) { return m["v"]; });
  const RewriteResult r = apply_rules(g, {cancel});
  EXPECT_EQ(graph::print(r.graph), "x = input() : f32[3]\noutput y = x\n");
  EXPECT_EQ(graph::verify(r.graph), "");
}

TEST(Rewrite, SweepsRepeatUntilNothingMatches) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  Value r1 = g.name(g.relu(x), "r1");
  Value r2 = g.name(g.relu(r1), "r2");
  g.output("y", g.name(g.relu(r2), "r3"));
  // relu(relu(v)) -> relu(v): the first sweep leaves r3 = relu(r1), itself a match for the second.
  const Rule idem("relu_idempotent", op("relu", {op("relu", {any("v")})}),
                  [](Graph& out, const Match& m) { return out.relu(m["v"]); });
  const RewriteResult r = apply_rules(g, {idem});
  EXPECT_EQ(graph::print(r.graph), "x = input() : f32[3]\nr3 = relu(x) : f32[3]\noutput y = r3\n");
  EXPECT_EQ(r.sweeps, 2);
  EXPECT_EQ(r.rewrites, std::vector<int>{3});
}

TEST(Rewrite, RulesAreTriedInOrderAndMayDecline) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  Value d = g.input("d", DType::F64, {3});
  g.output("a", g.name(g.neg(x), "a"));
  g.output("b", g.name(g.neg(d), "b"));
  // The first rule takes f64 only: it declines f32 after building something, which must vanish. The second
  // takes what the first declined.
  const Rule f64_only("f64_only", op("neg", {any("v")}), [](Graph& out, const Match& m) -> Value {
    out.relu(m["v"]);
    if (m.node("v").type.dtype != DType::F64) return {};
    return out.mul(m["v"], -1.0);
  });
  const Rule rest("rest", op("neg", {any("v")}), [](Graph& out, const Match& m) {
    return out.sub(out.scalar(0.0, m.root().type.dtype), m["v"]);
  });
  const RewriteResult r = apply_rules(g, {f64_only, rest});
  EXPECT_EQ(r.rewrites, (std::vector<int>{1, 1}));
  EXPECT_EQ(graph::print(r.graph),
            "x = input() : f32[3]\n"
            "d = input() : f64[3]\n"
            "a.constant = constant() {value=0.0} : f32[]\n"
            "a = sub(a.constant, x) : f32[3]\n"
            "b.constant = constant() {value=-1.0} : f64[]\n"
            "b = mul(d, b.constant) : f64[3]\n"
            "output a = a\n"
            "output b = b\n");
}

TEST(Rewrite, ARuleThatMatchesItsOwnResultIsStopped) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  g.output("y", g.exp(x));
  const Rule loop("loop", op("exp", {any("v")}), [](Graph& out, const Match& m) { return out.exp(m["v"]); });
  expect_error([&] { apply_rules(g, {loop}, {.max_sweeps = 5}); },
               "no fixed point after 5 sweeps (still matching: 'loop')");
}

TEST(Rewrite, TheInterfaceSurvives) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  g.input("unused", DType::F32, {7});
  Value w = g.parameter("w", DType::F32, {3});
  Value m = g.state("m", DType::F32, {3}, 0.5);
  g.parameter("frozen", DType::F32, {2});
  Value grad = g.name(g.neg(g.neg(g.mul(x, w))), "grad");
  Value m2 = g.name(g.add(m, grad), "m2");
  g.output("grad", grad);
  g.state_update(m, m2);
  g.state_update(w, g.name(g.sub(w, m2), "w2"));
  g.scalar(3.0, DType::F32);  // dead from the start
  const Rule cancel("double_neg", op("neg", {op("neg", {any("v")})}), [](Graph&, const Match& mm) { return mm["v"]; });
  const RewriteResult r = apply_rules(g, {cancel});
  EXPECT_EQ(interface_change(g, r.graph), "");
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(graph::print(r.graph),
            "x = input() : f32[3]\n"
            "unused = input() : f32[7]\n"
            "w = parameter() : f32[3]\n"
            "m = state() {init=0.5} : f32[3]\n"
            "frozen = parameter() : f32[2]\n"
            "mul_0 = mul(x, w) : f32[3]\n"
            "m2 = add(m, mul_0) : f32[3]\n"
            "w2 = sub(w, m2) : f32[3]\n"
            "output grad = mul_0\n"
            "update m <- m2\n"
            "update w <- w2\n");
}

TEST(Rewrite, NothingMatchedLeavesTheGraphAsItWas) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  g.scalar(3.0, DType::F32);  // dead, but no rewrite happened: kept
  g.output("y", g.neg(x));
  const Rule never("never", op("exp", {any()}), [](Graph&, const Match&) { return Value{}; });
  const RewriteResult r = apply_rules(g, {never});
  EXPECT_EQ(r.total(), 0);
  EXPECT_EQ(r.sweeps, 0);
  EXPECT_EQ(graph::print(r.graph), graph::print(g));
}

TEST(Rewrite, BrokenRulesAreNamed) {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 3});
  g.output("y", g.name(g.relu(x), "y"));
  const Rule wrong_type("to_scalar", op("relu", {any("v")}), [](Graph& out, const Match& m) { return out.sum(m["v"]); });
  expect_error([&] { apply_rules(g, {wrong_type}); },
               "rule 'to_scalar' at 'y': the replacement (a sum) is f32[], the root is f32[2,3]");
  const Rule foreign("foreign", op("relu", {any("v")}), [](Graph&, const Match&) { return Value{1000}; });
  expect_error([&] { apply_rules(g, {foreign}); }, "rule 'foreign' at 'y': the replacement (value 1000) is not a value");
  const Rule bad_op("bad_op", op("relu", {any("v")}),
                    [](Graph& out, const Match& m) { return out.op("matmul", {m["v"], m["v"]}); });
  expect_error([&] { apply_rules(g, {bad_op}); }, "rule 'bad_op' at 'y': matmul");
  expect_error([] { Rule("leaf", op("input"), [](Graph&, const Match&) { return Value{}; }); },
               "rule 'leaf': the pattern's root must be an op() of a non-leaf op");
  expect_error([] { Rule("any", any("x"), [](Graph&, const Match&) { return Value{}; }); },
               "rule 'any': the pattern's root must be an op()");
  expect_error([] { Rule("none", op("relu", {any()}), nullptr); }, "rule 'none' has no replacement");
}

TEST(Rewrite, MatchGivesCapturedNodesOfTheSourceAndValuesOfTheNewGraph) {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 3});
  g.output("y", g.name(g.sum(x, {1}, true), "y"));
  const Rule keepdim("sum_keepdim", op("sum", {any("v")}).attr("keepdim", true).as("s"),
                     [](Graph& out, const Match& m) {
                       // Read the matched node's attributes from the source: sum without keepdim, then reshape.
                       const graph::Node& s = m.node("s");
                       EXPECT_EQ(&m.root(), &s);
                       return out.reshape(out.sum(m["v"], s.attrs.get_ints("axes"), false), s.type.shape);
                     });
  const RewriteResult r = apply_rules(g, {keepdim});
  EXPECT_EQ(graph::print(r.graph),
            "x = input() : f32[2,3]\n"
            "y.sum = sum(x) {axes=[1], keepdim=false} : f32[2]\n"
            "y = reshape(y.sum) {shape=[2,1]} : f32[2,1]\n"
            "output y = y\n");
  expect_error([&] {
    apply_rules(g, {Rule("missing", op("sum", {any("v")}), [](Graph&, const Match& m) { return m["nope"]; })});
  }, "no capture named 'nope'");
}

}  // namespace rewrite_test
}  // namespace spire::passes
