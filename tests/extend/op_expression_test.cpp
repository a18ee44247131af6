// Op expressions (extend/op_expression.h): what they parse to, what they build, and where they fail.
#include <gtest/gtest.h>

#include "extend/op_expression.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"

using namespace spire;
using graph::DType;

namespace {

// Evaluates `text` on x = [-2, -0.5, 0, 3] (and b = [1, 1, 1, 1]) in float64.
std::vector<double> eval(const std::string& text) {
  graph::Graph g;
  graph::Value x = g.input("x", DType::F64, {4});
  graph::Value b = g.input("b", DType::F64, {4});
  g.output("r", ext::OpExpression::parse(text).build(g, {{"x", x}, {"b", b}}));
  auto out = graph::evaluate(g, {{"x", graph::Tensor::from(DType::F64, {4}, {-2, -0.5, 0, 3})},
                                 {"b", graph::Tensor::from(DType::F64, {4}, {1, 1, 1, 1})}},
                             DType::F64);
  return out.at("r").data;
}

TEST(OpExpression, CallsOpsByNameWithNumbersAsScalarsOfTheOperandsDtype) {
  EXPECT_EQ(eval("maximum(x, 0)"), (std::vector<double>{0, 0, 0, 3}));
  EXPECT_EQ(eval("where(compare(x, 0, mode=gt), b, 0)"), (std::vector<double>{0, 0, 0, 1}));
}

TEST(OpExpression, InfixOperatorsFollowTheUsualPrecedence) {
  EXPECT_EQ(eval("1 + x * 2"), (std::vector<double>{-3, 0, 1, 7}));
  EXPECT_EQ(eval("(1 + x) * 2"), (std::vector<double>{-2, 1, 2, 8}));
  EXPECT_EQ(eval("x - b - b"), (std::vector<double>{-4, -2.5, -2, 1}));  // left-associative
  EXPECT_EQ(eval("-x / 2"), (std::vector<double>{1, 0.25, 0, -1.5}));
}

TEST(OpExpression, AttributesFollowTheOperands) {
  graph::Graph g;
  graph::Value x = g.input("x", DType::F32, {3, 5});
  graph::Value s = ext::OpExpression::parse("sum(x, axes=[1], keepdim=true)").build(g, {{"x", x}});
  EXPECT_EQ(g.type(s), (graph::TensorType{DType::F32, {3, 1}}));
}

TEST(OpExpression, ListsTheNamesItReads) {
  EXPECT_EQ(ext::OpExpression::parse("relu_grad(grad, x) * y + x").names(), (std::vector<std::string>{"grad", "x", "y"}));
}

TEST(OpExpression, SyntaxErrorsNameTheColumn) {
  auto message = [](const std::string& text) {
    try {
      ext::OpExpression::parse(text);
    } catch (const ext::ExpressionError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("maximum(x, 0"), "column 13: expected ')' after the arguments of maximum");
  EXPECT_EQ(message("x +"), "column 4: expected a name, a number or '('");
  EXPECT_EQ(message("x y"), "column 3: unexpected 'y' after the expression");
  EXPECT_EQ(message("compare(mode=gt, x)"), "column 18: an operand after the attributes: write the operands first");
}

TEST(OpExpression, UnknownNamesAndOpsAreRefusedByName) {
  graph::Graph g;
  graph::Value x = g.input("x", DType::F32, {3});
  try {
    ext::OpExpression::parse("maximum(z, 0)").build(g, {{"x", x}});
    FAIL() << "no error";
  } catch (const ext::ExpressionError& e) {
    EXPECT_STREQ(e.what(), "column 9: unknown name 'z' (known here: x)");
  }
  try {
    ext::OpExpression::parse("frobnicate(x)").build(g, {{"x", x}});
    FAIL() << "no error";
  } catch (const ext::ExpressionError& e) {
    EXPECT_STREQ(e.what(), "column 1: unknown op 'frobnicate'");
  }
  EXPECT_THROW(ext::OpExpression::parse("add(1, 2)").build(g, {{"x", x}}), ext::ExpressionError);  // no dtype
}

}  // namespace
