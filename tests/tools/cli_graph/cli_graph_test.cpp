// `spire graph print|eval|grad` and `spire lenet export|init`, run as a user runs them, with their exit codes
// (0 success, 1 a failed run, 2 an argument error).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "io/tensor_file.h"
#include "ir/graph/text_form.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

namespace fs = std::filesystem;
using graph::DType;
using graph::Tensor;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }

  fs::path dir_;
};

TEST_F(CliGraph, LenetExportPrintsCanonicalTextThatGraphPrintReproduces) {
  const auto r = spire("lenet export --batch 4 -o " + path("lenet.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = slurp(dir_ / "lenet.graph");
  EXPECT_EQ(text, graph::print(nn::build_lenet_graph({.batch = 4, .dtype = DType::F32})));
  EXPECT_NE(text.find("x = input() : f32[4,1,28,28]"), std::string::npos);
  EXPECT_NE(text.find("output grad.fc.5.bias = "), std::string::npos);
  const auto printed = spire("graph print " + path("lenet.graph"));
  ASSERT_EQ(printed.exit_code, 0) << printed.out;
  EXPECT_EQ(printed.out, text);

  const auto sgd = spire("lenet export --batch 2 --dtype f64 --sgd --lr 0.1 -o -");
  ASSERT_EQ(sgd.exit_code, 0) << sgd.out;
  EXPECT_NE(sgd.out.find("update convnet.0.weight <- "), std::string::npos);
  EXPECT_NE(sgd.out.find("momentum.fc.5.bias = state()"), std::string::npos);
  EXPECT_NE(sgd.out.find(": f64[2,1,28,28]"), std::string::npos);
  EXPECT_NE(spire("lenet export --batch 2 --lr 0.1 -o -").exit_code, 0) << "--lr without --sgd must be refused";
  EXPECT_NE(spire("lenet export --batch 0 -o -").exit_code, 0);
}

TEST_F(CliGraph, LenetInitThenEvalGivesLossNearLn10) {
  auto r = spire("lenet init --seed 3 -o " + path("w.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto weights = io::load_tensors_ordered(path("w.safetensors"));
  const auto expected = nn::lenet_initial_parameters(3);
  ASSERT_EQ(weights.size(), expected.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_EQ(weights[i].first, expected[i].first);
    EXPECT_EQ(weights[i].second.data, expected[i].second.data);
  }

  // Inputs file = the weights plus a batch.
  std::mt19937 rng(4);
  Tensor x(DType::F32, {2, 1, 28, 28}), y(DType::I64, {2});
  for (double& v : x.data) v = double(float(double(rng() % 256) / 255.0));
  y.data = {3, 7};
  weights.emplace_back("x", x);
  weights.emplace_back("y", y);
  io::save_tensors(path("in.safetensors"), weights);
  ASSERT_EQ(spire("lenet export --batch 2 -o " + path("lenet.graph")).exit_code, 0);

  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("lenet.graph"), path("in.safetensors"),
                        path("out.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out = io::load_tensors_ordered(path("out.safetensors"));
  ASSERT_EQ(out.size(), 12u);  // logits, loss, 10 gradients, in the graph's output order
  EXPECT_EQ(out[0].first, "logits");
  EXPECT_EQ(out[0].second.type(), (graph::TensorType{DType::F32, {2, 10}}));
  EXPECT_EQ(out[1].first, "loss");
  EXPECT_NEAR(out[1].second.data[0], std::log(10.0), 0.1);
  EXPECT_EQ(out[2].first, "grad.convnet.0.weight");

  // --dtype f64 writes float results as F64.
  r = spire(fmt::format("graph eval {} --inputs {} --outputs {} --dtype f64", path("lenet.graph"),
                        path("in.safetensors"), path("out64.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out64 = io::load_tensors(path("out64.safetensors"));
  EXPECT_EQ(out64.at("loss").dtype, DType::F64);
  EXPECT_NEAR(out64.at("loss").data[0], out[1].second.data[0], 1e-6);
}

TEST_F(CliGraph, EvalNamesMissingAndMismatchedInputs) {
  write("g.graph",
        "x = input() : f32[3]\n"
        "w = parameter() : f32[3]\n"
        "p = mul(x, w) : f32[3]\n"
        "s = sum(p) {axes=[0], keepdim=false} : f32[]\n"
        "output s = s\n");
  ASSERT_EQ(spire("graph print " + path("g.graph")).exit_code, 0) << spire("graph print " + path("g.graph")).out;
  io::save_tensors(path("only_x.safetensors"), io::NamedTensors{{"x", Tensor(DType::F32, {3}, 1.0)}});
  auto r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("only_x.safetensors"),
                             path("o.safetensors")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("spire: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("has no tensor 'w' (the graph's parameter of type f32[3]); it has: x f32[3]"),
            std::string::npos)
      << r.out;

  io::save_tensors(path("bad.safetensors"),
                   io::NamedTensors{{"x", Tensor(DType::F64, {3}, 1.0)}, {"w", Tensor(DType::F32, {3}, 2.0)}});
  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("bad.safetensors"),
                        path("o.safetensors")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("input 'x' is f32[3] in the graph but f64[3] in"), std::string::npos) << r.out;

  // Extra tensors are ignored, even of dtypes the graph IR lacks; a needed one of such a dtype is named.
  io::SafetensorsFile raw;
  raw.tensors.push_back({"pixels", io::StDtype::U8, {2}, {1, 2}});
  raw.tensors.push_back(io::to_st_tensor("x", Tensor(DType::F32, {3}, 1.0)));
  raw.tensors.push_back(io::to_st_tensor("w", Tensor::from(DType::F32, {3}, {1, 2, 3})));
  io::write_safetensors(path("extra.safetensors"), raw);
  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("extra.safetensors"),
                        path("o.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(io::load_tensors(path("o.safetensors")).at("s").data, (std::vector<double>{6}));
  raw.tensors[1] = {"x", io::StDtype::U8, {3}, {1, 2, 3}};
  io::write_safetensors(path("u8.safetensors"), raw);
  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("u8.safetensors"),
                        path("o.safetensors")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("input 'x' is f32[3] in the graph but u8[3] in"), std::string::npos) << r.out;

  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("absent.safetensors"),
                        path("o.safetensors")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("absent.safetensors"), std::string::npos) << r.out;
}

// --bench times replays with the device's timestamps after a warm-up; on a GPU the warm-up lasts at least half a
// second (its clocks rise from idle meanwhile; tuning/warm_up.h), on a CPU device it is 5 runs alone.
TEST_F(CliGraph, BenchWarmsUpAGpuForHalfASecondThenPrintsTheMedian) {
  write("g.graph",
        "x = input() : f32[3]\n"
        "y = relu(x) : f32[3]\n"
        "output y = y\n");
  io::save_tensors(path("x.safetensors"), io::NamedTensors{{"x", Tensor::from(DType::F32, {3}, {-1, 2, 3})}});
  const std::string eval = fmt::format("graph eval {} --inputs {} --outputs {} --bench 3", path("g.graph"),
                                       path("x.safetensors"), path("y.safetensors"));
  auto r = spire(eval + " --device vulkan:0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("median ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vulkan:0            3"), std::string::npos) << r.out;
  EXPECT_EQ(io::load_tensors(path("y.safetensors")).at("y").data, (std::vector<double>{0, 2, 3}));
#ifdef MOCK_CUDA_DRIVER_DIR
  // cuda:0 through the mock driver is a GPU to the runtime.
  const auto start = std::chrono::steady_clock::now();
  r = spire(eval + " --device cuda:0", std::string("LD_LIBRARY_PATH=") + MOCK_CUDA_DRIVER_DIR);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cuda:0              3"), std::string::npos) << r.out;
  EXPECT_GE(ms, 500) << r.out;
  EXPECT_EQ(io::load_tensors(path("y.safetensors")).at("y").data, (std::vector<double>{0, 2, 3}));
#endif
}

TEST_F(CliGraph, GradAppendsTheBackwardGraph) {
  write("g.graph",
        "x = input() : f64[3]\n"
        "w = parameter() : f64[3]\n"
        "p = mul(x, w) : f64[3]\n"
        "s = sum(p) {axes=[0], keepdim=false} : f64[]\n"
        "output loss = s\n");
  auto r = spire(fmt::format("graph grad {} --loss loss --wrt w,x -o {}", path("g.graph"), path("joint.graph")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string joint = slurp(dir_ / "joint.graph");
  EXPECT_NE(joint.find("output grad.w = "), std::string::npos) << joint;
  EXPECT_NE(joint.find("output grad.x = "), std::string::npos) << joint;

  io::save_tensors(path("in.safetensors"), io::NamedTensors{{"x", Tensor::from(DType::F64, {3}, {1, 2, 3})},
                                                            {"w", Tensor::from(DType::F64, {3}, {4, 5, 6})}});
  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("joint.graph"), path("in.safetensors"),
                        path("out.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out = io::load_tensors(path("out.safetensors"));
  EXPECT_EQ(out.at("loss").data, (std::vector<double>{32}));
  EXPECT_EQ(out.at("grad.w").data, (std::vector<double>{1, 2, 3}));  // d/dw sum(x*w) = x
  EXPECT_EQ(out.at("grad.x").data, (std::vector<double>{4, 5, 6}));

  r = spire(fmt::format("graph grad {} --loss nope --wrt w -o -", path("g.graph")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--loss 'nope' is neither an output nor a value"), std::string::npos) << r.out;
}

TEST_F(CliGraph, PrintReportsFileLineAndColumn) {
  write("bad.graph", "x = input() : f32[3]\ny = relu(x : f32[3]\n");
  const auto r = spire("graph print " + path("bad.graph"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("spire: error: " + path("bad.graph") + ":2:"), std::string::npos) << r.out;
  const auto missing = spire("graph print " + path("missing.graph"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("missing.graph: cannot open"), std::string::npos) << missing.out;
}

// Argument errors exit 2 (not CLI11's internal codes such as 106) and name the offending option, so a script
// can tell a usage mistake (2) from a failed run (1).
TEST_F(CliGraph, ArgumentErrorsExitWith2AndNameTheOption) {
  write("g.graph", "x = input() : f32[3]\noutput x = x\n");
  auto r = spire("graph eval " + path("g.graph"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--inputs"), std::string::npos) << r.out;
  r = spire("graph eval " + path("g.graph") + " --inputs " + path("in.safetensors"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--outputs"), std::string::npos) << r.out;
  r = spire("graph grad " + path("g.graph") + " --loss x -o -");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--wrt"), std::string::npos) << r.out;
  r = spire("graph print " + path("g.graph") + " --no-such-option");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--no-such-option"), std::string::npos) << r.out;
  r = spire("lenet export --batch 0 -o -");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--batch"), std::string::npos) << r.out;
  r = spire("train lenet --epochs 0");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--epochs"), std::string::npos) << r.out;
  EXPECT_EQ(spire("").exit_code, 2);  // no subcommand
  EXPECT_EQ(spire("--help").exit_code, 0);
}

// --precision: a wrong policy is an argument error that lists the choices; tf32 on vulkan:0 (lavapipe: no TF32
// matrices) gives fp32's result and says so on stderr; on cuda:0 (the mock driver's tensor cores) the TF32 one, without
// a note. A = 1 + 2^-11 (a tie between TF32's 1 and 1 + 2^-10), B ones, K = 16: fp32 16 + 2^-7, TF32 16 + 2^-6.
TEST_F(CliGraph, PrecisionPolicyIsCheckedAndTf32RunsAsFp32OnVulkanSayingSo) {
  write("g.graph",
        "a = input() : f32[16,16]\n"
        "b = input() : f32[16,16]\n"
        "c = matmul(a, b) : f32[16,16]\n"
        "output c = c\n");
  io::save_tensors(path("in.safetensors"),
                   io::NamedTensors{{"a", Tensor::from(DType::F32, {16, 16}, std::vector<double>(256, 1 + std::ldexp(1.0, -11)))},
                                    {"b", Tensor::from(DType::F32, {16, 16}, std::vector<double>(256, 1.0))}});
  const std::string eval =
      fmt::format("graph eval {} --inputs {} --outputs {}", path("g.graph"), path("in.safetensors"), path("c.safetensors"));
  auto r = spire(eval + " --device vulkan:0 --precision tf33");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown precision 'tf33': the choices are fp32|tf32|bf16|f16"), std::string::npos) << r.out;
  r = spire(eval + " --precision tf32");  // the reference evaluator computes in float64: --precision needs a device
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = spire(eval + " --device vulkan:0 --precision tf32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vulkan:0 has no TF32 cooperative matrices; tf32 runs as fp32"), std::string::npos) << r.out;
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").data, std::vector<double>(256, 16 + std::ldexp(1.0, -7)));
  // bf16 stores a = 1 + 2^-11 as 1 (8 significant bits), sums in f32 and hands back f32: 16, where fp32 gives
  // 16 + 2^-7. (A device without bf16 storage would say it runs fp32.)
  r = spire(eval + " --device vulkan:0 --precision bf16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").dtype, DType::F32);
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").data, std::vector<double>(256, 16));
  r = spire(eval + " --device vulkan:0 --precision bf16", "SPIRE_MASK_FEATURES=bfloat16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vulkan:0 has no bfloat16 storage; bf16 runs as fp32"), std::string::npos) << r.out;
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").data, std::vector<double>(256, 16 + std::ldexp(1.0, -7)));
#ifdef MOCK_CUDA_DRIVER_DIR
  const std::string mock = std::string("LD_LIBRARY_PATH=") + MOCK_CUDA_DRIVER_DIR;
  r = spire(eval + " --device cuda:0 --precision tf32", mock);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").data, std::vector<double>(256, 16 + std::ldexp(1.0, -6)));
  r = spire(eval + " --device cuda:0", mock);  // fp32, the default
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(io::load_tensors(path("c.safetensors")).at("c").data, std::vector<double>(256, 16 + std::ldexp(1.0, -7)));
#endif
}

// Weights of another architecture (here the earlier 400-feature LeNet) are refused before any data or device
// is touched, naming the parameter and both shapes.
TEST_F(CliGraph, EvalLenetRefusesWeightsOfTheOldArchitecture) {
  io::NamedTensors old;
  for (auto& [name, t] : nn::lenet_initial_parameters(1))
    old.emplace_back(name, name == "fc.1.weight" ? Tensor(DType::F32, {120, 400}, 0.0) : t);
  io::save_tensors(path("old.safetensors"), old);
  const auto r = spire("eval lenet --load " + path("old.safetensors") + " --data " + path("no_data_here"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("parameter 'fc.1.weight' has shape [120,400] but LeNet expects [120,784]"), std::string::npos)
      << r.out;
}

TEST_F(CliGraph, HelpTextDescribesTheCommands) {
  auto r = spire("graph eval --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--inputs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference evaluator"), std::string::npos) << r.out;
  r = spire("lenet init --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("not torch.manual_seed's values"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace spire
