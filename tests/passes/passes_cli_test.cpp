// --passes on `spire graph eval`, `spire graph grad` and `spire run`, run as a user runs them: the rewrite
// takes effect, gives the values the original graph gives, shows in --dump, and a wrong value is an argument
// error (exit 2) naming the option.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/tensor_file.h"
#include "tests/passes/values.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

namespace fs = std::filesystem;

const char* const kModel =
    "x = input() : f32[4,8]\n"
    "w = parameter() : f32[8,8]\n"
    "h = matmul(x, w) : f32[4,8]\n"
    "s = sigmoid(h) : f32[4,8]\n"
    "a = mul(s, h) : f32[4,8]\n"
    "loss = sum(a) {axes=[0,1], keepdim=false} : f32[]\n"
    "output a = a\n"
    "output loss = loss\n";

class PassesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_passes_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "m.graph") << kModel;
    io::NamedTensors in;
    in.emplace_back("x", graph::Tensor(graph::DType::F32, {4, 8}, 0.25));
    std::vector<double> w(64);
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i % 7) - 3) / 8;
    in.emplace_back("w", graph::Tensor::from(graph::DType::F32, {8, 8}, w));
    io::save_tensors(dir_ / "in.safetensors", in);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string slurp(const std::string& name) const {
    std::ifstream in(dir_ / name);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

TEST_F(PassesCli, GraphEvalGivesTheOriginalsValues) {
  const std::string common = path("m.graph") + " --inputs " + path("in.safetensors");
  auto r = spire("graph eval " + common + " --outputs " + path("plain.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = spire("graph eval " + common + " --outputs " + path("silu.safetensors") + " --passes silu");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto plain = io::load_tensors(path("plain.safetensors")), silu = io::load_tensors(path("silu.safetensors"));
  for (const auto& [name, t] : plain) EXPECT_LE(passes::testing::max_norm_error(silu.at(name), t), 1e-6) << name;
}

TEST_F(PassesCli, GraphGradDifferentiatesTheRewrittenGraph) {
  auto r = spire("graph grad " + path("m.graph") + " --loss loss --wrt w -o - --passes silu");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("a = silu(h) : f32[4,8]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("silu_grad("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sigmoid"), std::string::npos) << r.out;
  // After autograd: the forward product becomes silu, the backward keeps what it computed from the sigmoid.
  r = spire("graph grad " + path("m.graph") + " --loss loss --wrt w -o - --passes silu@after_autograd");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("a = silu(h) : f32[4,8]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s = sigmoid(h)"), std::string::npos) << r.out;
}

TEST_F(PassesCli, DumpShowsEachPass) {
  const auto r = spire("graph eval " + path("m.graph") + " --inputs " + path("in.safetensors") + " --outputs " +
                       path("o.safetensors") + " --device default --passes silu,silu@before_fusion --dump " + path("d"));
  if (r.exit_code != 0 && r.out.find("no device") != std::string::npos) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(slurp("d/01-graph.txt"), kModel);
  EXPECT_NE(slurp("d/01.01-silu.txt").find("a = silu(h)"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "d" / "03.01-silu.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "d" / "02-joint.txt"));
}

TEST_F(PassesCli, WrongValuesAreArgumentErrors) {
  const std::string eval = "graph eval " + path("m.graph") + " --inputs " + path("in.safetensors") + " --outputs " +
                           path("o.safetensors");
  auto r = spire(eval + " --passes swish");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--passes: unknown pass 'swish' (built-in passes: silu)"), std::string::npos) << r.out;
  r = spire(eval + " --passes silu@after_autograd");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("this command has no after_autograd point (it has after_import, before_fusion)"),
            std::string::npos) << r.out;
  r = spire(eval + " --passes silu@before_fusion");  // the reference evaluator compiles nothing
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("before_fusion passes run inside lowering, for a device: add --device"), std::string::npos) << r.out;
  r = spire("graph grad " + path("m.graph") + " --loss loss --wrt w -o - --passes silu@before_fusion");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no before_fusion point"), std::string::npos) << r.out;
  r = spire("graph eval --help");
  EXPECT_NE(r.out.find("--passes"), std::string::npos);
  EXPECT_NE(r.out.find("silu (x * sigmoid(x) -> silu(x))"), std::string::npos) << r.out;
}

#ifdef SPIRE_HAVE_ONNX
TEST_F(PassesCli, RunRewritesForTheReferenceAndEveryDevice) {
  const std::string run = "run " + path("m.graph") + " --weights " + path("in.safetensors") + " --inputs " +
                          path("in.safetensors");
  auto r = spire(run + " --device reference --outputs " + path("plain.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = spire(run + " --device all --passes silu --outputs " + path("silu.safetensors") + " --dump " + path("d"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto plain = io::load_tensors(path("plain.safetensors")), silu = io::load_tensors(path("silu.safetensors"));
  for (const auto& [name, t] : plain) EXPECT_LE(passes::testing::max_norm_error(silu.at(name), t), 1e-5) << name;
  if (fs::exists(dir_ / "d")) {  // one folder per device present
    for (const auto& e : fs::directory_iterator(dir_ / "d")) {
      EXPECT_NE(slurp("d/" + e.path().filename().string() + "/01.01-silu.txt").find("a = silu(h)"), std::string::npos);
    }
  }
  r = spire(run + " --device reference --passes silu@before_fusion --outputs " + path("o.safetensors"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not on the reference"), std::string::npos) << r.out;
}
#endif

}  // namespace
}  // namespace spire
