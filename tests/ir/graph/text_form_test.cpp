// The text form: exact round trips on a graph that uses every op, and the printed layout.
#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"
#include "tests/ir/graph/every_op_graph.h"

namespace spire::graph {
namespace {

TEST(TextForm, EveryOpGraphUsesEveryOp) {
  Graph g = testing::every_op_graph();
  std::set<OpKind> used;
  for (const Node& n : g.nodes()) used.insert(n.op);
  for (const OpInfo& info : op_table()) EXPECT_TRUE(used.contains(info.kind)) << info.name << " is not covered";
}

TEST(TextForm, PrintParsePrintIsIdentical) {
  Graph g = testing::every_op_graph();
  std::string text = print(g);
  Graph back = parse(text);
  EXPECT_EQ(print(back), text);
  // Structure survives too, not only the text.
  ASSERT_EQ(back.size(), g.size());
  for (int32_t i = 0; i < g.size(); ++i) {
    const Node& a = g.node(i);
    const Node& b = back.node(i);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.attrs, b.attrs) << a.name;
    EXPECT_EQ(a.type, b.type);
  }
  ASSERT_EQ(back.outputs().size(), g.outputs().size());
  ASSERT_EQ(back.state_updates().size(), 1u);
  EXPECT_EQ(back.state_updates()[0].target, g.state_updates()[0].target);
  EXPECT_EQ(back.state_updates()[0].value, g.state_updates()[0].value);
}

TEST(TextForm, HalfDtypesParseAndPrint) {
  const std::string text =
      "x = input() : bf16[4,8]\n"
      "w = parameter() : f16[8,3]\n"
      "xh = cast(x) {to=f16} : f16[4,8]\n"
      "y = matmul(xh, w) : f16[4,3]\n"
      "output y = y\n";
  Graph g = parse(text);
  ASSERT_TRUE(g.find("x") && g.find("y"));
  EXPECT_EQ(g.type(*g.find("x")).dtype, DType::BF16);
  EXPECT_EQ(g.type(*g.find("y")), (TensorType{DType::F16, {4, 3}}));
  EXPECT_EQ(print(g), text);
}

TEST(TextForm, PrintsOneLinePerValueWithAttributesAndTypes) {
  Graph g;
  Value x = g.input("x", DType::F32, {8, 1, 28, 28});
  Value w = g.parameter("convnet.0.weight", DType::F32, {6, 1, 5, 5});
  Value y = g.name(g.conv2d(x, w, {.padding = {2, 2}}), "conv1");
  g.output("y", y);
  g.state_update(w, g.sub(w, g.scalar(0.5, DType::F32)));
  std::string expected =
      "x = input() : f32[8,1,28,28]\n"
      "convnet.0.weight = parameter() : f32[6,1,5,5]\n"
      "conv1 = conv2d(x, convnet.0.weight) {stride=[1,1], padding=[2,2], dilation=[1,1], groups=1} : f32[8,6,28,28]\n"
      "constant_1 = constant() {value=0.5} : f32[]\n"
      "sub_2 = sub(convnet.0.weight, constant_1) : f32[6,1,5,5]\n"
      "output y = conv1\n"
      "update convnet.0.weight <- sub_2\n";
  EXPECT_EQ(print(g), expected);
}

TEST(TextForm, FloatsRoundTripExactly) {
  Graph g;
  for (double v : {0.1, 1.0 / 3.0, -2.5e-300, 1e20, 123456789.0, 0.0, -0.0, 1e-8,
                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})
    g.constant(v, DType::F64, {});
  std::string text = print(g);
  Graph back = parse(text);
  EXPECT_EQ(print(back), text);
  for (int32_t i = 0; i < g.size(); ++i) {
    double a = g.node(i).attrs.get_float("value"), b = back.node(i).attrs.get_float("value");
    EXPECT_EQ(std::signbit(a), std::signbit(b));
    EXPECT_EQ(a, b);
  }
  EXPECT_NE(text.find("value=123456789.0}"), std::string::npos);  // a float always looks like one
  Graph n;
  n.constant(std::numeric_limits<double>::quiet_NaN(), DType::F32, {});
  EXPECT_TRUE(std::isnan(parse(print(n)).node(0).attrs.get_float("value")));
}

TEST(TextForm, ParserAcceptsCommentsBlankLinesAndSpacing) {
  std::string text =
      "# a comment\n"
      "\n"
      "  a =   input( )   :  f32[ 2 , 3 ]   # trailing comment\n"
      "b = relu(a) : f32[2,3]\n"
      "m = sum(b) {axes=[0], keepdim=true} : f32[1,3]\n"
      "output = exp(m) : f32[1,3]\n"  // a value may be called 'output'
      "output result = output";       // no final newline
  Graph g = parse(text);
  EXPECT_EQ(g.size(), 4);
  EXPECT_EQ(g.find_output("result"), g.find("output"));
  EXPECT_EQ(parse(print(g)).size(), 4);
}

}  // namespace
}  // namespace spire::graph
