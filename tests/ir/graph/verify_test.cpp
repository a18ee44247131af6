// The graph verifier: valid graphs pass, and each invariant broken by hand (tests/support/graph_surgery.h)
// is reported with a message naming the problem and where it is.
#include <gtest/gtest.h>

#include "ir/graph/op_table.h"
#include "ir/graph/verify.h"
#include "tests/ir/graph/every_op_graph.h"
#include "tests/support/graph_surgery.h"

namespace spire::graph {
namespace {

using Surgery = GraphTestAccess;

// x, w: a little training step with an output and a state update, all of it valid.
struct Step {
  Graph g;
  Value x, w, s, y, w2;
};

Step step() {
  Step t;
  t.x = t.g.input("x", DType::F32, {2, 3});
  t.w = t.g.parameter("w", DType::F32, {3});
  t.s = t.g.state("momentum.w", DType::F32, {3});
  t.y = t.g.name(t.g.relu(t.g.add(t.x, t.w)), "y");
  t.g.output("y", t.y);
  t.w2 = t.g.name(t.g.sub(t.w, t.g.sum_to(t.y, {3})), "w2");
  t.g.state_update(t.w, t.w2);
  return t;
}

// The message names the problem: every expected fragment is in it.
void expect_problem(const Graph& g, std::initializer_list<std::string_view> fragments) {
  const std::string m = verify(g);
  ASSERT_FALSE(m.empty()) << "the verifier found nothing";
  for (std::string_view f : fragments) EXPECT_NE(m.find(f), std::string::npos) << "'" << f << "' not in: " << m;
}

TEST(Verify, ValidGraphsPass) {
  EXPECT_EQ(verify(Graph{}), "");
  EXPECT_EQ(verify(step().g), "");
  EXPECT_EQ(verify(testing::every_op_graph()), "");
  EXPECT_NO_THROW(verify_or_throw(step().g, "here"));
}

TEST(Verify, OpNotInTheTable) {
  Step t = step();
  Surgery::node(t.g, t.y).op = OpKind(op_count() + 3);
  expect_problem(t.g, {"node 4 'y'", "not in the op table"});
}

TEST(Verify, WrongNumberOfInputs) {
  Step t = step();
  Surgery::node(t.g, t.y).inputs.push_back(t.x);
  expect_problem(t.g, {"'y' (relu)", "has 2 input(s), its op takes 1"});
  Step u = step();
  Surgery::node(u.g, u.x).inputs.push_back(u.w);
  expect_problem(u.g, {"'x' (input)", "has 1 input(s), its op takes 0"});
}

TEST(Verify, TopologicalOrder) {
  Step t = step();
  const Value add = t.g.node(t.y).inputs[0];
  Surgery::node(t.g, add).inputs[1] = t.y;  // add now reads the relu that reads it
  expect_problem(t.g, {"(add)", "input 1 is 'y'", "not defined before its use"});
  Step u = step();
  Surgery::node(u.g, u.y).inputs[0] = Value{99};
  expect_problem(u.g, {"'y' (relu)", "input 0 is value 99, which is not in the graph"});
}

TEST(Verify, AttributesAreExactlyTheEntrys) {
  Step t = step();
  const Value sum_to = t.g.node(t.w2).inputs[1];
  Surgery::node(t.g, sum_to).attrs = Attrs{};
  expect_problem(t.g, {"(sum_to)", "lacks attribute 'shape'"});

  Step u = step();
  Surgery::node(u.g, u.g.node(u.w2).inputs[1]).attrs = Attrs{{"shape", int64_t(3)}};
  expect_problem(u.g, {"attribute 'shape' is a int, its op takes a int list"});

  Step v = step();
  Surgery::node(v.g, v.y).attrs.set("alpha", 0.5);
  expect_problem(v.g, {"'y' (relu)", "has attribute 'alpha', which its op does not take"});

  Graph g;
  Value x = g.input("x", DType::F32, {2, 3, 4});
  Value s = g.sum(x, {1}, true);
  Surgery::node(g, s).attrs = Attrs{{"keepdim", true}, {"axes", std::vector<int64_t>{1}}};
  expect_problem(g, {"has attribute 'keepdim' where its op has 'axes'"});
}

TEST(Verify, NamesAreValidUniqueAndIndexed) {
  Step t = step();
  Surgery::rename_in_storage(t.g, t.y, "not a name");
  expect_problem(t.g, {"'not a name' is not a valid value name"});

  Step u = step();
  Surgery::rename_in_storage(u.g, u.y, "x");  // two nodes named x; the index still says node 0
  expect_problem(u.g, {"node 4 'x' (relu)", "the name 'x' is also node 0's"});

  Step v = step();
  Surgery::rename_in_storage(v.g, v.y, "y2");
  expect_problem(v.g, {"'y2'", "not in the graph's name index"});
}

TEST(Verify, TypesFollowTheShapeRules) {
  Step t = step();
  Surgery::node(t.g, t.y).type = TensorType{DType::F32, {3}};
  expect_problem(t.g, {"node 4 'y' (relu)", "type f32[3] differs from its shape rule's f32[2,3]"});

  Step u = step();
  Surgery::node(u.g, u.w).type = TensorType{DType::F32, {4}};  // add(x [2,3], w [4]) no longer broadcasts
  expect_problem(u.g, {"(add)", "its inputs do not fit its op", "f32[4]"});

  Step v = step();
  Surgery::node(v.g, v.x).type = TensorType{DType::F32, {2, -3}};
  expect_problem(v.g, {"'x' (input)", "negative dimension"});

  Step d = step();
  Surgery::node(d.g, d.y).type.dtype = DType::F64;
  expect_problem(d.g, {"type f64[2,3] differs from its shape rule's f32[2,3]"});
}

TEST(Verify, Outputs) {
  Step t = step();
  Surgery::outputs(t.g).push_back({"y", t.x});
  expect_problem(t.g, {"output 'y': the name is used twice"});

  Step u = step();
  Surgery::outputs(u.g)[0].value = Value{42};
  expect_problem(u.g, {"output 'y': value 42 is not in the graph"});

  Step v = step();
  Surgery::outputs(v.g).push_back({"w", v.y});
  expect_problem(v.g, {"output 'w': the name of a state-update target"});

  Step n = step();
  Surgery::outputs(n.g)[0].name = "";
  expect_problem(n.g, {"not a valid output name"});
}

TEST(Verify, StateUpdates) {
  Step t = step();
  Surgery::updates(t.g)[0].target = t.x;
  expect_problem(t.g, {"state update of 'x'", "the target is a input, not a parameter or state"});

  Step u = step();
  Surgery::updates(u.g).push_back({u.s, u.y});
  expect_problem(u.g, {"state update of 'momentum.w' (f32[3]) with 'y' of another type (f32[2,3])"});

  Step v = step();
  Surgery::updates(v.g).push_back({v.w, v.w2});
  expect_problem(v.g, {"state update of 'w': updated twice"});

  Step d = step();
  Surgery::updates(d.g)[0].value = Value{-1};
  expect_problem(d.g, {"state update 0: new value -1 is not in the graph"});
}

TEST(Verify, TheFirstProblemIsReportedAndThrowNamesTheContext) {
  Step t = step();
  Surgery::node(t.g, t.y).type = TensorType{DType::F32, {3}};
  Surgery::outputs(t.g)[0].value = Value{42};
  expect_problem(t.g, {"'y' (relu)"});  // nodes before outputs
  try {
    verify_or_throw(t.g, "after pass 'p'");
    FAIL() << "no throw";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("after pass 'p': node 4 'y' (relu)", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace spire::graph
