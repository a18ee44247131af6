// Op files (extend/op_file.h): the example files parse to what they say, and every malformed file is refused
// naming the file, the line and the problem, before anything is registered.
#include <gtest/gtest.h>

#include <fstream>

#include "extend/op_file.h"
#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"

using namespace spire;

namespace {

const std::filesystem::path kExamples = SPIRE_SOURCE_DIR "/examples/custom_ops";

std::string error_of(const std::string& text, const ext::ReadFile& read = {}) {
  try {
    ext::parse_op_file(text, "/tmp/t.op", read ? read : [](const std::filesystem::path&) { return std::string("x"); });
  } catch (const graph::GraphError& e) {
    return e.what();
  }
  return "no error";
}

TEST(OpFile, TheSeedReluFileSaysWhatItMeans) {
  std::ifstream f(kExamples / "seed_relu.op");
  std::stringstream text;
  text << f.rdbuf();
  auto ops = ext::parse_op_file(text.str(), kExamples / "seed_relu.op");
  ASSERT_EQ(ops.size(), 1u);
  const ext::CustomOp& op = ops[0];
  EXPECT_EQ(op.name, "seed_relu");
  EXPECT_EQ(op.inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(op.reference_expression, "maximum(x, 0)");
  EXPECT_EQ(op.gradient_expressions.at("x"), "relu_grad(grad, x)");
  EXPECT_NE(op.glsl.find("const uint kBlock = 1024;"), std::string::npos);  // read from seed_relu.comp
  EXPECT_EQ(op.elements_per_workgroup, 1024u);
  EXPECT_EQ(op.dtype, graph::DType::F32);
  EXPECT_EQ(op.tolerance, 0);
  ASSERT_EQ(op.test_cases.size(), 4u);
  EXPECT_EQ(op.test_cases[2][0], (graph::TensorType{graph::DType::F32, {4, 6, 28, 28}}));
}

TEST(OpFile, SeveralOpsInOneFile) {
  auto ops = ext::parse_op_file("op a(x)\nreference: x\nglsl: k.comp\n\nop b(p, q)  # two inputs\nreference: p + q\n"
                                "glsl: k.comp\ntest: f32[2], f32[2]; f64[3,1], f64[3,1]\n",
                                "/tmp/t.op", [](const std::filesystem::path&) { return std::string("src"); });
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].inputs, (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(ops[1].test_cases[1][1], (graph::TensorType{graph::DType::F64, {3, 1}}));
  EXPECT_EQ(ops[1].glsl, "src");
}

TEST(OpFile, ConfigsAreReadInOrder) {
  auto ops = ext::parse_op_file("op a(x)\nreference: x\nglsl: k.comp\nconfigs: wg=64,unroll=2; wg=128,unroll=1\n",
                                "/tmp/t.op", [](const std::filesystem::path&) { return std::string("src"); });
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_EQ(ops[0].configs.size(), 2u);
  EXPECT_EQ(ops[0].configs[0].text(), "wg=64,unroll=2");
  EXPECT_EQ(ops[0].configs[1].get("wg"), 128);
}

TEST(OpFile, MalformedFilesNameTheLine) {
  EXPECT_EQ(error_of("reference: x\n"), "/tmp/t.op:1: a description before the first `op NAME(INPUT, ...)` line");
  EXPECT_EQ(error_of("op a(x)\nreference x\n"), "/tmp/t.op:2: expected `key: value`, got `reference x`");
  EXPECT_EQ(error_of("op a(x\n"), "/tmp/t.op:1: expected `op NAME(INPUT, ...)`");
  EXPECT_EQ(error_of("op a()\n"), "/tmp/t.op:1: op a takes no inputs");
  EXPECT_EQ(error_of("op a(x)\ncolour: red\n"),
            "/tmp/t.op:2: unknown key `colour` (reference, gradient INPUT, glsl, elements_per_workgroup, configs, "
            "dtype, elementwise, tolerance, gradient_tolerance, test, test_range)");
  EXPECT_EQ(
      error_of("op a(x)\nconfigs: wg=64; wg=big\n").rfind("/tmp/t.op:2: configs: `wg=big` is not NAME=INT,...: ", 0),
      0u);
  EXPECT_EQ(error_of("op a(x)\nelements_per_workgroup: 0\n"),
            "/tmp/t.op:2: elements_per_workgroup 0 is not a positive integer");
  EXPECT_EQ(error_of("op a(x)\ntest: f32[2], f32[2]\n"), "/tmp/t.op:2: a test case of 2 types; a takes 1 inputs");
  EXPECT_EQ(error_of("op a(x)\ntest: q32[2]\n"), "/tmp/t.op:2: 'q32' names no dtype");
  EXPECT_EQ(error_of("op a(x)\ngradient x: x\ngradient x: x\n"), "/tmp/t.op:3: a second gradient for x");
  EXPECT_EQ(error_of("op a(x)\nglsl: k.comp\n"), "/tmp/t.op: op a has no `reference:`");
  EXPECT_EQ(error_of("op a(x)\nreference: x\n"), "/tmp/t.op: op a has no kernel (`glsl: FILE`)");
  EXPECT_EQ(error_of("# nothing\n"), "/tmp/t.op: no `op NAME(INPUT, ...)` line");
}

TEST(OpFile, AMissingShaderOrOpFileIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / "spire_op_file_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.op") << "op nofile_a(x)\nreference: x\nglsl: missing.comp\n";
  try {
    ext::load_ops(dir / "a.op");
    FAIL() << "no error";
  } catch (const graph::GraphError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read the GLSL kernel " + (dir / "missing.comp").string());
  }
  EXPECT_FALSE(graph::op_from_name("nofile_a"));
  try {
    ext::load_ops(dir / "nowhere.op");
    FAIL() << "no error";
  } catch (const graph::GraphError& e) {
    EXPECT_EQ(std::string(e.what()), "--ops " + (dir / "nowhere.op").string() + ": no such file or directory");
  }
  std::filesystem::remove_all(dir);
}

TEST(OpFile, AGlslCompileErrorCarriesShadercsFileAndLine) {
  const auto dir = std::filesystem::temp_directory_path() / "spire_op_file_glsl";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.comp") << "#version 450\nlayout(local_size_x = 64) in;\nvoid main() { undefined_thing = 1; }\n";
  std::ofstream(dir / "bad.op") << "op glsl_broken(x)\nreference: x\nglsl: bad.comp\n";
  try {
    ext::load_ops(dir);  // a directory: every .op file in it
    FAIL() << "no error";
  } catch (const graph::GraphError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("GLSL kernel " + (dir / "bad.comp").string() + " does not compile"), std::string::npos) << m;
    EXPECT_NE(m.find("bad.comp:3: error"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  }
  EXPECT_FALSE(graph::op_from_name("glsl_broken"));  // nothing half-registered
  std::filesystem::remove_all(dir);
}

}  // namespace
