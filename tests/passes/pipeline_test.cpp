// PassPipeline: passes run at their point in the order added, an observer sees each result, and a pass that
// breaks the graph (the verifier) or its interface is stopped with a message naming the pass and its point.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ir/graph/text_form.h"
#include "passes/builtin.h"
#include "passes/pipeline.h"
#include "tests/support/graph_surgery.h"

namespace spire::passes {
namespace pipeline_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::GraphError;
using graph::Value;

Graph small() {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  g.output("y", g.name(g.mul(x, g.sigmoid(x)), "y"));
  return g;
}

std::string error_of(const PassPipeline& p, PassPoint point, const Graph& g) {
  try {
    p.run(point, g);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

// A pass that adds a node at the end: easy to count in the result.
Pass appending(std::string name) {
  return Pass{name, [name](const Graph& g) {
                Graph out = g;
                out.name(out.neg(g.outputs()[0].value), name);
                return out;
              }};
}

TEST(PassPipeline, PointsHaveNames) {
  for (PassPoint p : kPassPoints) EXPECT_EQ(pass_point_from_name(pass_point_name(p)), p);
  EXPECT_EQ(pass_point_name(PassPoint::AfterImport), "after_import");
  EXPECT_EQ(pass_point_name(PassPoint::AfterAutograd), "after_autograd");
  EXPECT_EQ(pass_point_name(PassPoint::BeforeFusion), "before_fusion");
  EXPECT_FALSE(pass_point_from_name("after_fusion").has_value());
}

TEST(PassPipeline, RunsThePassesOfOnePointInOrderAndShowsEach) {
  PassPipeline p;
  p.verify = true;
  p.add(PassPoint::AfterImport, appending("first")).add(PassPoint::AfterImport, appending("second"));
  p.add(PassPoint::BeforeFusion, appending("later"));
  std::vector<std::string> seen;
  const Graph out = p.run(PassPoint::AfterImport, small(), [&](PassPoint point, const Pass& pass, const Graph& after) {
    EXPECT_EQ(point, PassPoint::AfterImport);
    seen.push_back(pass.name + ":" + after.node(after.size() - 1).name);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"first:first", "second:second"}));
  EXPECT_TRUE(out.find("first") && out.find("second"));
  EXPECT_FALSE(out.find("later").has_value());
  EXPECT_EQ(graph::print(p.run(PassPoint::AfterAutograd, small())), graph::print(small()));  // none there
  EXPECT_FALSE(p.empty());
  EXPECT_TRUE(PassPipeline{}.empty());
}

TEST(PassPipeline, VerifiesByDefaultInDebugBuildsOnly) {
#ifdef NDEBUG
  EXPECT_FALSE(PassPipeline{}.verify);
#else
  EXPECT_TRUE(PassPipeline{}.verify);
#endif
}

// A pass whose result breaks an invariant no builder call can break (an inner node's type, so the interface
// is intact): the verifier names the pass.
Pass corrupting() {
  return Pass{"corrupting", [](const Graph& g) {
                Graph out = g;
                graph::GraphTestAccess::node(out, out.at("sigmoid_0")).type = graph::TensorType{DType::F32, {4}};
                return out;
              }};
}

TEST(PassPipeline, TheVerifierCatchesAPassThatBreaksTheGraph) {
  PassPipeline p;
  p.verify = true;
  p.add(PassPoint::AfterAutograd, corrupting());
  EXPECT_EQ(error_of(p, PassPoint::AfterAutograd, small()),
            "pass 'corrupting' (after_autograd) produced an invalid graph: node 1 'sigmoid_0' (sigmoid): type f32[4] "
            "differs from its shape rule's f32[3]");
  // Without the verifier the pass gets through (what a release build does unless asked).
  p.verify = false;
  EXPECT_EQ(error_of(p, PassPoint::AfterAutograd, small()), "");
}

TEST(PassPipeline, TheInputIsVerifiedToo) {
  PassPipeline p;
  p.verify = true;
  p.add(PassPoint::AfterImport, appending("a"));
  Graph broken = small();
  graph::GraphTestAccess::outputs(broken)[0].value = Value{77};
  EXPECT_EQ(error_of(p, PassPoint::AfterImport, broken).rfind("the graph given to the after_import passes is invalid: "
                                                              "output 'y': value 77 is not in the graph", 0),
            0u);
}

TEST(PassPipeline, APassMustKeepTheInterfaceVerifierOrNot) {
  PassPipeline p;
  p.verify = false;
  p.add(PassPoint::BeforeFusion, Pass{"drops_output", [](const Graph& g) {
                                        Graph out;
                                        Value x = out.input("x", DType::F32, {3});
                                        out.output("z", out.neg(x));
                                        return out;
                                      }});
  EXPECT_EQ(error_of(p, PassPoint::BeforeFusion, small()),
            "pass 'drops_output' (before_fusion) changed the graph's interface: output 0 is 'z' (was 'y')");

  PassPipeline q;
  q.add(PassPoint::AfterImport, Pass{"retypes", [](const Graph&) {
                                       Graph out;
                                       Value x = out.input("x", DType::F32, {3});
                                       out.output("y", out.sum(x));
                                       return out;
                                     }});
  EXPECT_EQ(error_of(q, PassPoint::AfterImport, small()),
            "pass 'retypes' (after_import) changed the graph's interface: output 'y' is f32[] (was f32[3])");
}

TEST(PassPipeline, ErrorsInsideAPassNameIt) {
  PassPipeline p;
  p.add(PassPoint::AfterImport,
        rewrite_pass("widen", {Rule("to_sum", op("sigmoid", {any("v")}),
                                    [](Graph& out, const Match& m) { return out.sum(m["v"]); })}));
  EXPECT_EQ(error_of(p, PassPoint::AfterImport, small()).rfind("pass 'widen' (after_import): rule 'to_sum' at 'sigmoid_0'", 0),
            0u);
  EXPECT_THROW(p.add(PassPoint::AfterImport, Pass{"", [](const Graph& g) { return g; }}), GraphError);
  EXPECT_THROW(p.add(PassPoint::AfterImport, Pass{"nothing", nullptr}), GraphError);
}

TEST(BuiltinPasses, ByNameAndPoint) {
  EXPECT_EQ(builtin_pass_names(), std::vector<std::string>{"silu"});
  PassPipeline p;
  p.verify = true;
  add_builtin_passes(p, "silu,silu@before_fusion");
  ASSERT_EQ(p.at(PassPoint::AfterImport).size(), 1u);
  EXPECT_EQ(p.at(PassPoint::AfterImport)[0].name, "silu");
  EXPECT_EQ(p.at(PassPoint::BeforeFusion).size(), 1u);
  EXPECT_TRUE(p.empty(PassPoint::AfterAutograd));
  EXPECT_EQ(graph::print(p.run(PassPoint::AfterImport, small())),
            "x = input() : f32[3]\ny = silu(x) : f32[3]\noutput y = y\n");

  auto message = [](std::string_view spec) -> std::string {
    PassPipeline q;
    try {
      add_builtin_passes(q, spec);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("swish"), "unknown pass 'swish' (built-in passes: silu)");
  EXPECT_EQ(message("silu@after_fusion"),
            "unknown pass point 'after_fusion' in 'silu@after_fusion' (points: after_import, after_autograd, before_fusion)");
  EXPECT_EQ(message("silu,"), "empty pass name in 'silu,'");
}

}  // namespace pipeline_test
}  // namespace spire::passes
