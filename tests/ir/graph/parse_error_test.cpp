// Parse errors: each malformed input fails with the right line, column and a message that says what was
// expected or what is wrong.
#include <gtest/gtest.h>

#include "ir/graph/text_form.h"

namespace spire::graph {
namespace {

struct BadInput {
  const char* label;
  std::string text;
  int line;
  int column;
  std::string message_part;
};

const std::string kHeader =
    "x = input() : f32[8,1,28,28]\n"
    "w = parameter() : f32[6,1,5,5]\n";

class ParseErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(ParseErrors, ReportLineColumnAndWhatWasExpected) {
  const BadInput& in = GetParam();
  try {
    parse(in.text);
    ADD_FAILURE() << in.label << ": parsed without error";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), in.line) << in.label << ": " << e.what();
    EXPECT_EQ(e.column(), in.column) << in.label << ": " << e.what();
    EXPECT_NE(e.message().find(in.message_part), std::string::npos)
        << in.label << ": '" << in.message_part << "' not in: " << e.what();
    std::string prefix = "line " + std::to_string(in.line) + ", column " + std::to_string(in.column) + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ParseErrors,
    ::testing::Values(
        BadInput{"missing close paren", kHeader + "c = conv2d(x, w {stride=[1,1]} : f32[8,6,24,24]\n", 3, 17,
                 "expected ',' or ')' after arguments of conv2d"},
        BadInput{"unknown op", kHeader + "c = conv3d(x, w) : f32[1]\n", 3, 5, "unknown op 'conv3d'"},
        BadInput{"unknown value", kHeader + "y = relu(z) : f32[8,1,28,28]\n", 3, 10,
                 "unknown value 'z' (argument 0 of relu)"},
        BadInput{"unknown attribute", kHeader +
                     "c = conv2d(x, w) {strides=[1,1], padding=[0,0], dilation=[1,1], groups=1} : f32[8,6,24,24]\n",
                 3, 19, "conv2d has no attribute 'strides' (it takes: stride, padding, dilation, groups)"},
        BadInput{"attribute of wrong kind", kHeader +
                     "c = conv2d(x, w) {stride=1, padding=[0,0], dilation=[1,1], groups=1} : f32[8,6,24,24]\n",
                 3, 26, "expected '[' to start attribute stride of conv2d"},
        BadInput{"missing attribute", kHeader + "c = conv2d(x, w) {stride=[1,1], padding=[0,0]} : f32[8,6,24,24]\n", 3,
                 5, "missing attribute 'dilation'"},
        BadInput{"declared shape mismatch", kHeader +
                     "c = conv2d(x, w) {stride=[1,1], padding=[0,0], dilation=[1,1], groups=1} : f32[8,6,28,28]\n",
                 3, 76, "'c' is declared f32[8,6,28,28], but conv2d of its arguments gives f32[8,6,24,24]"},
        BadInput{"shape rule failure", kHeader + "y = add(x, w) : f32[1]\n", 3, 5, "cannot broadcast"},
        BadInput{"missing equals", "x input() : f32[2]\n", 1, 3, "expected '=' after value name 'x'"},
        BadInput{"missing type", "x = input()\n", 1, 12, "expected ':' and the type of 'x'"},
        BadInput{"unknown dtype", "x = input() : f8[2]\n", 1, 15, "unknown dtype 'f8'"},
        BadInput{"bad dimension", "x = input() : f32[2,x]\n", 1, 21, "expected an integer in the shape of 'x'"},
        BadInput{"duplicate name", "x = input() : f32[2]\nx = input() : f32[2]\n", 2, 1,
                 "duplicate value name 'x' (first defined on line 1)"},
        BadInput{"junk after type", "x = input() : f32[2] extra\n", 1, 22, "expected the end of the line, found 'extra'"},
        BadInput{"bad bool", "x = input() : f32[2,3]\ns = sum(x) {axes=[0], keepdim=yes} : f32[3]\n", 2, 31,
                 "expected true or false for attribute keepdim of sum, found 'yes'"},
        BadInput{"output of unknown value", "x = input() : f32[2]\noutput y = nothing\n", 2, 12,
                 "unknown value 'nothing' (output 'y')"},
        BadInput{"update arrow", "w = parameter() : f32[2]\nupdate w = w\n", 2, 10, "expected '<-'"},
        BadInput{"update of an input", "x = input() : f32[2]\ny = neg(x) : f32[2]\nupdate x <- y\n", 3, 8,
                 "not a parameter or state"},
        BadInput{"bad float", "c = constant() {value=1.2.3} : f32[]\n", 1, 23, "expected a number for attribute value"},
        BadInput{"wrong arity", "x = input() : f32[2]\ny = add(x) : f32[2]\n", 2, 5, "add takes 2 input(s), got 1"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = info.param.label;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace spire::graph
