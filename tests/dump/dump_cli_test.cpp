// `spire graph eval --device default --dump DIR --stats` on LeNet's training step at batch 2, as a user runs
// it: the stage files, every kernel's modules through spirv-val and ptxas, and the printed flop counts.
#include <unistd.h>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "io/tensor_file.h"
#include "tests/dump/dump_files.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

using namespace dump_testing;

class DumpCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("spire_dump_cli_{}_{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // LeNet's training-step graph at batch 2 and a file with its inputs and initial parameters.
  void write_lenet() {
    const auto r = spire("lenet export --batch 2 -o " + path("lenet.graph"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    io::NamedTensors feeds = nn::lenet_initial_parameters(0);
    graph::Tensor x(graph::DType::F32, {2, 1, 28, 28}, 0.0);
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = double(i % 17) / 17.0 - 0.5;
    graph::Tensor y(graph::DType::I64, {2}, 0.0);
    y.data = {3, 7};
    feeds.emplace_back("x", x);
    feeds.emplace_back("y", y);
    io::save_tensors(path("in.safetensors"), feeds);
  }

  fs::path dir_;
};

TEST_F(DumpCli, GraphEvalOnADeviceWritesEveryStageAndValidModules) {
  write_lenet();
  const auto r = spire(fmt::format("graph eval {} --inputs {} --outputs {} --device default --dump {} --stats",
                                   path("lenet.graph"), path("in.safetensors"), path("out.safetensors"), path("dump")));
  if (r.exit_code != 0 && r.out.find("no device") != std::string::npos) GTEST_SKIP() << "no device: " << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("dump: wrote"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("refused"), std::string::npos) << r.out;

  const fs::path dump = dir_ / "dump";
  const size_t kernels = check_dump_folder(dump, /*joint=*/false);
  EXPECT_GE(kernels, 10u);  // two convolutions, pools, three linear layers, the loss, and their gradients
  // The graph as given, not something re-created: 01-graph is the exported text.
  EXPECT_EQ(slurp(dump / "01-graph.txt"), slurp(dir_ / "lenet.graph"));
  // Each layer's bias add runs inside its ReLU's kernel.
  EXPECT_NE(slurp(dump / "04-fused.txt").find("convnet.1 = relu f32[2,6,28,28]\n    folds convnet.0 = add"),
            std::string::npos);
  // Each convolution's launch also stores the pooling of its ReLU's output (fuse.h's pooled side outputs).
  EXPECT_NE(slurp(dump / "04-fused.txt").find("also stores convnet.2 = max_pool2d f32[2,6,14,14]"), std::string::npos);
  // And its positions, which the gradients read instead of the ReLU's output, then not stored at all.
  EXPECT_NE(slurp(dump / "04-fused.txt").find("also stores convnet.2.argmax = max_pool2d_argmax i32[2,6,14,14]"),
            std::string::npos);
  EXPECT_NE(slurp(dump / "04-fused.txt").find("(not stored: only its side outputs read it)"), std::string::npos);
  // The conv2d row by hand: conv1 [2,6,28,28] x 1*5*5 and conv2 [2,16,14,14] x 6*5*5 multiply-adds, 2 flops each.
  const int64_t conv_flops = 2 * (2 * 6 * 28 * 28 * 25) + 2 * (2 * 16 * 14 * 14 * 150);
  EXPECT_NE(r.out.find(fmt::format("{:<22} {:>6} {:>16}", "conv2d", 2, conv_flops)), std::string::npos) << r.out;
  EXPECT_NE(slurp(dump / "06-stats.txt").find("total"), std::string::npos);
  EXPECT_NE(slurp(dump / "06-stats.txt").find("launches bind"), std::string::npos);
  check_modules_with_tools(dump);
}

// spire run on a graph file: one dump per device with --device all, refused for the reference evaluator.
TEST_F(DumpCli, RunDumpsPerDevice) {
  if (spire("run --help").exit_code != 0) GTEST_SKIP() << "spire run is built only with the ONNX importer";
  write_lenet();
  const std::string common = fmt::format("run {} --weights {} --inputs {} --outputs {}", path("lenet.graph"),
                                         path("in.safetensors"), path("in.safetensors"), path("out.safetensors"));
  const auto all = spire(common + " --device all --stats --dump " + path("all"));
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("total"), std::string::npos) << all.out;
  size_t devices = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "all")) {
    check_dump_folder(e.path(), /*joint=*/false);
    ++devices;
  }
  if (devices == 0) GTEST_SKIP() << "no device present: " << all.out;
  const auto ref = spire(common + " --device reference --dump " + path("ref"));
  EXPECT_EQ(ref.exit_code, 1) << ref.out;
  EXPECT_NE(ref.out.find("reference evaluator compiles nothing"), std::string::npos) << ref.out;
}

// spire train lenet --dump: 01-graph is the forward pass and the loss, 02-joint the whole training step.
TEST_F(DumpCli, TrainLenetDumpsTheJointGraph) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "Fashion-MNIST is not installed";
  const auto r = spire("train lenet --batch 2 --limit 8 --epochs 1 --eval-batch 1000 --quiet --dump " + path("train"));
  if (r.exit_code != 0 && r.out.find("no device") != std::string::npos) GTEST_SKIP() << "no device: " << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const fs::path dump = dir_ / "train";
  check_dump_folder(dump, /*joint=*/true);
  const std::string built = slurp(dump / "01-graph.txt"), joint = slurp(dump / "02-joint.txt");
  EXPECT_EQ(built.find("conv2d_grad_weight"), std::string::npos);
  EXPECT_NE(joint.find("conv2d_grad_weight"), std::string::npos);
  EXPECT_NE(joint.find("momentum.fc.5.bias"), std::string::npos);
  EXPECT_NE(slurp(dump / "05-plan.txt").find("state updates"), std::string::npos);
}

TEST_F(DumpCli, DumpNeedsADevice) {
  write_lenet();
  const auto r = spire(fmt::format("graph eval {} --inputs {} --outputs {} --dump {}", path("lenet.graph"),
                                   path("in.safetensors"), path("out.safetensors"), path("dump")));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--device"), std::string::npos) << r.out;
}

TEST_F(DumpCli, StatsOnTheReferenceEvaluator) {
  write_lenet();
  const auto r = spire(fmt::format("graph eval {} --inputs {} --outputs {} --stats", path("lenet.graph"),
                                   path("in.safetensors"), path("out.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // fc.1 at batch 2: [2,784] x [784,120].
  EXPECT_NE(r.out.find("matmul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace spire
