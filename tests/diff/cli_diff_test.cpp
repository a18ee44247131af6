// `spire diff` as a user runs it: a planted fault (a custom op whose GLSL kernel is wrong in a few elements while its
// reference is right) named as the first divergence with its downstream values as inheriting it, exit 0 on a right
// graph and on a small CNN PyTorch exported, the JSON report, --save then --against, and bad input refused clearly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "tests/support/spire_cli.h"

namespace {

namespace fs = std::filesystem;
using spire::graph::DType;
using spire::graph::Tensor;

const std::string kOps = SPIRE_SOURCE_DIR "/tests/diff/planted_relu.op";

// A two-layer MLP whose activation is `act` (planted_relu, or relu for the right model); every tensor an input.
std::string mlp_text(const std::string& act) {
  return "x = input() : f32[4,16]\n"
         "w1 = input() : f32[16,32]\n"
         "b1 = input() : f32[32]\n"
         "mm1 = matmul(x, w1) : f32[4,32]\n"
         "h1 = add(mm1, b1) : f32[4,32]\n"
         "act = " + act + "(h1) : f32[4,32]\n"
         "w2 = input() : f32[32,8]\n"
         "mm2 = matmul(act, w2) : f32[4,8]\n"
         "y = tanh(mm2) : f32[4,8]\n"
         "output y = y\n";
}

Tensor random_tensor(spire::graph::Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DType::F32, shape);
  for (double& v : t.data) v = u(rng);
  return t.round_to_dtype();
}

class CliDiff : public testing::Test {
 protected:
  void SetUp() override {
    // The process id too: another checkout's run of the same test at the same time must not remove this one's files.
    dir_ = fs::temp_directory_path() /
           ("spire_cli_diff_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "faulty.graph") << mlp_text("planted_relu");
    std::ofstream(dir_ / "right.graph") << mlp_text("relu");
    spire::io::save_tensors(dir_ / "in.safetensors", spire::io::NamedTensors{{"x", random_tensor({4, 16}, 1)},
                                                                             {"w1", random_tensor({16, 32}, 2)},
                                                                             {"b1", random_tensor({32}, 3)},
                                                                             {"w2", random_tensor({32, 8}, 4)}});
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  bool have_vulkan() {
    auto r = spire::spire("devices");
    return r.out.find("vulkan:0") != std::string::npos;
  }
  fs::path dir_;
};

TEST_F(CliDiff, NamesThePlantedFaultAsTheFirstDivergence) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  auto r = spire::spire("diff --ops " + kOps + " " + path("faulty.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 --json " + path("report.json"));
  ASSERT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("first divergence: act "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node:    act = planted_relu(h1) : f32[4,32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("none was off: the error starts here"), std::string::npos) << r.out;

  const auto bytes = spire::io::read_file_bytes(path("report.json"));
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
  EXPECT_FALSE(j.at("agree").get<bool>());
  ASSERT_EQ(j.at("comparisons").size(), 1u);
  const auto& c = j.at("comparisons")[0];
  EXPECT_EQ(c.at("device"), "vulkan:0");
  EXPECT_EQ(c.at("against"), "reference");
  const auto& first = c.at("first_divergence");
  EXPECT_EQ(first.at("name"), "act");
  EXPECT_EQ(first.at("op"), "planted_relu");
  EXPECT_EQ(first.at("inputs_off").size(), 0u);
  EXPECT_EQ(first.at("own_within"), false);  // the node alone, on this device's own inputs, is wrong
  EXPECT_NEAR(first.at("max_abs").get<double>(), 0.5, 1e-6);  // the planted error (added in float32)
  EXPECT_FALSE(first.at("kernel").get<std::string>().empty());
  // Every value is there with its fields; those before the fault agree, those after inherit it.
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : c.at("rows")) rows[row.at("name")] = row;
  ASSERT_EQ(rows.size(), 5u);
  for (const char* field : {"max_abs", "max_rel", "mean_abs", "ulp_at_worst", "nan", "inf", "error", "tolerance",
                            "within", "source", "launch", "kernel", "tuning", "status"})
    EXPECT_TRUE(rows.at("mm1").contains(field)) << field;
  EXPECT_TRUE(rows.at("mm1").at("within").get<bool>());
  EXPECT_TRUE(rows.at("h1").at("within").get<bool>());
  for (const char* after : {"mm2", "y"}) {
    EXPECT_FALSE(rows.at(after).at("within").get<bool>()) << after;
    EXPECT_EQ(rows.at(after).at("status"), "off: inputs already off") << after;
    EXPECT_EQ(rows.at(after).at("own_within"), true) << after;
  }
  EXPECT_EQ(rows.at("mm2").at("inputs_off"), nlohmann::json::array({"act"}));
}

TEST_F(CliDiff, NamesAPlantedNanAndCountsIt) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  std::ofstream(dir_ / "nan.graph") << mlp_text("planted_nan");
  auto r = spire::spire("diff --ops " + kOps + " " + path("nan.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 --json " + path("nan.json"));
  ASSERT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("first divergence: act "), std::string::npos) << r.out;
  const auto bytes = spire::io::read_file_bytes(path("nan.json"));
  const auto first = nlohmann::json::parse(bytes.begin(), bytes.end()).at("comparisons")[0].at("first_divergence");
  EXPECT_EQ(first.at("name"), "act");
  EXPECT_EQ(first.at("nan").get<int>(), 1);
  EXPECT_EQ(first.at("inf").get<int>(), 0);
  EXPECT_TRUE(first.at("error").is_null());  // infinite: a NaN where the reference has a number
}

TEST_F(CliDiff, ARightGraphAgrees) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  auto r = spire::spire("diff " + path("right.graph") + " --inputs " + path("in.safetensors") + " --every-value");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vulkan:0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all 5 values within tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" mm2 "), std::string::npos) << r.out;  // --every-value lists them
}

#ifdef MOCK_CUDA_DRIVER_DIR
TEST_F(CliDiff, ComparesEveryDeviceAndReportsOneThatCannotRunTheModel) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  const std::string env = std::string("LD_LIBRARY_PATH=") + MOCK_CUDA_DRIVER_DIR;
  auto right = spire::spire("diff " + path("right.graph") + " --inputs " + path("in.safetensors") + " --devices all", env);
  EXPECT_EQ(right.exit_code, 0) << right.out;
  EXPECT_NE(right.out.find("vulkan:0 ("), std::string::npos) << right.out;
  EXPECT_NE(right.out.find("cuda:0 ("), std::string::npos) << right.out;
  // The planted op's kernel is GLSL, which CUDA devices cannot run: cuda:0 is reported as such, vulkan:0 compared.
  auto faulty = spire::spire("diff --ops " + kOps + " " + path("faulty.graph") + " --inputs " + path("in.safetensors") +
                             " --devices cuda:0,vulkan:0", env);
  EXPECT_EQ(faulty.exit_code, 1) << faulty.out;
  EXPECT_NE(faulty.out.find(") against reference: could not run the model: custom op planted_relu (node 'act') has "
                            "only a GLSL kernel"),
            std::string::npos)
      << faulty.out;
  EXPECT_NE(faulty.out.find("first divergence: act "), std::string::npos) << faulty.out;
}

// A device that runs out of memory keeping every value at once (the mock driver given 1 MB: the 12 values of this
// chain take 1.5 MB) is read in segments, says so, and still compares every value; with its usual memory it is read in
// one run. A device too small for one value is reported as unable to run the model.
TEST_F(CliDiff, ReadsInSegmentsWhereKeepingEveryValueRunsOutOfMemory) {
  std::string text = "x = input() : f32[128,256]\n";
  for (int i = 1; i <= 12; ++i) {
    const std::string prev = i == 1 ? "x" : fmt::format("h{}", i - 1), before = i <= 2 ? "x" : fmt::format("h{}", i - 2);
    text += i % 2 ? fmt::format("h{} = tanh({}) : f32[128,256]\n", i, prev)
                  : fmt::format("h{} = add({}, {}) : f32[128,256]\n", i, prev, before);
  }
  std::ofstream(path("chain.graph")) << text << "output y = h12\n";
  spire::io::save_tensors(dir_ / "chain.in.safetensors", spire::io::NamedTensors{{"x", random_tensor({128, 256}, 5)}});
  const std::string args = "diff " + path("chain.graph") + " --inputs " + path("chain.in.safetensors") + " --devices cuda:0";
  const std::string driver = std::string("LD_LIBRARY_PATH=") + MOCK_CUDA_DRIVER_DIR;
  auto small = spire::spire(args, driver + " SPIRE_MOCK_CUDA_MEMORY=1000000");
  EXPECT_EQ(small.exit_code, 0) << small.out;
  EXPECT_NE(small.out.find("against reference: all 12 values within tolerance"), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("keeping all 12 values at once ran out of memory on cuda:0"), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("runs of the graph, each keeping a segment of them"), std::string::npos) << small.out;
  auto usual = spire::spire(args, driver);
  EXPECT_EQ(usual.exit_code, 0) << usual.out;
  EXPECT_NE(usual.out.find("all 12 values within tolerance"), std::string::npos) << usual.out;
  EXPECT_EQ(usual.out.find("ran out of memory"), std::string::npos) << usual.out;
  auto tiny = spire::spire(args, driver + " SPIRE_MOCK_CUDA_MEMORY=100000");
  EXPECT_EQ(tiny.exit_code, 1) << tiny.out;
  EXPECT_NE(tiny.out.find("cuda:0 (Mock GPU, CUDA driver"), std::string::npos) << tiny.out;
  EXPECT_NE(tiny.out.find("could not run the model: "), std::string::npos) << tiny.out;
}
#endif

TEST_F(CliDiff, AnExportedCnnAgrees) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  auto r = spire::spire("diff " + spire::model("cnn.onnx") + " --inputs " + spire::model("cnn.in.safetensors") +
                        " --json " + path("cnn.json"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("values within tolerance"), std::string::npos) << r.out;
  const auto bytes = spire::io::read_file_bytes(path("cnn.json"));
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
  EXPECT_TRUE(j.at("agree").get<bool>());
  EXPECT_GE(j.at("comparisons")[0].at("values").get<int>(), 5);  // conv, relu, pool, reshape, gemm at least
}

// A bundle is compared through the graph it was compiled from (format 7 keeps it) and its own kernels' outputs are
// judged too; inputs of another batch than the bundle's source graph are refused.
TEST_F(CliDiff, ABundleIsComparedThroughItsSourceGraphAndItsOwnKernels) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  auto compiled = spire::spire("compile " + spire::model("cnn.onnx") + " -o " + path("cnn.spire") + " --batch 2");
  ASSERT_EQ(compiled.exit_code, 0) << compiled.out;
  auto r = spire::spire("diff " + path("cnn.spire") + " --inputs " + spire::model("cnn.in.safetensors") +
                        " --devices vulkan:0 --every-value");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vulkan:0 (") , std::string::npos) << r.out;
  EXPECT_NE(r.out.find("values within tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a bundle: the values above are its source graph's"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the bundle's own kernels (its spirv plan): output 'y' within tolerance"), std::string::npos)
      << r.out;
  // Inputs of another batch than the bundle's are refused, naming both.
  spire::io::save_tensors(dir_ / "one.safetensors", spire::io::NamedTensors{{"x", random_tensor({1, 3, 16, 16}, 9)}});
  auto other = spire::spire("diff " + path("cnn.spire") + " --inputs " + path("one.safetensors") + " --devices vulkan:0");
  EXPECT_EQ(other.exit_code, 3) << other.out;
  EXPECT_NE(other.out.find("input 'x' is f32[2,3,16,16] in the model but f32[1,3,16,16]"), std::string::npos) << other.out;
}

// No false alarm at the default tolerances on the exported models of several kinds.
TEST_F(CliDiff, ExportedModelsAgree) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  for (const char* name : {"lenet", "attention13", "mixed13", "encoder13", "resnet18_small", "mlp_bf16"}) {
    auto r = spire::spire(std::string("diff ") + spire::model(std::string(name) + ".onnx") + " --inputs " +
                          spire::model(std::string(name) + ".in.safetensors"));
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.out;
  }
}

// The same on the suite's two large models at 224x224 (about 7 s and 19 s on lavapipe, 2 cores).
TEST_F(CliDiff, Resnet18AndMobilenetV2Agree) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  for (const char* name : {"mobilenet_v2", "resnet18"}) {
    auto r = spire::spire(std::string("diff ") + spire::model(std::string(name) + ".onnx") + " --inputs " +
                          spire::model(std::string(name) + ".in.safetensors"));
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.out;
  }
}

TEST_F(CliDiff, SaveThenAgainstRoundTripsAndRefusesOtherInputs) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  const std::string run = "diff --ops " + kOps + " " + path("faulty.graph") + " --devices vulkan:0 ";
  auto saved = spire::spire(run + "--inputs " + path("in.safetensors") + " --save " + path("saved"));
  ASSERT_EQ(saved.exit_code, 1) << saved.out;
  EXPECT_TRUE(fs::exists(dir_ / "saved" / "manifest.json"));
  EXPECT_TRUE(fs::exists(dir_ / "saved" / "reference.safetensors"));
  EXPECT_TRUE(fs::exists(dir_ / "saved" / "vulkan_0.safetensors"));
  EXPECT_EQ(spire::io::load_tensors(dir_ / "saved" / "vulkan_0.safetensors").size(), 5u);

  auto against = spire::spire(run + "--inputs " + path("in.safetensors") + " --against " + path("saved") + " --json " +
                              path("against.json"));
  EXPECT_EQ(against.exit_code, 1) << against.out;  // the saved device and this one both have the fault
  const auto bytes = spire::io::read_file_bytes(path("against.json"));
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
  std::map<std::pair<std::string, std::string>, nlohmann::json> by_pair;
  for (const auto& c : j.at("comparisons")) by_pair[{c.at("device"), c.at("against")}] = c;
  ASSERT_TRUE(by_pair.count({"saved:vulkan:0", "reference"})) << against.out;
  EXPECT_EQ(by_pair.at({"saved:vulkan:0", "reference"}).at("first_divergence").at("name"), "act");
  ASSERT_TRUE(by_pair.count({"vulkan:0", "saved:vulkan:0"})) << against.out;
  EXPECT_TRUE(by_pair.at({"vulkan:0", "saved:vulkan:0"}).at("agrees").get<bool>());  // the same device, same values

  // Other inputs: refused, naming the inputs hash.
  auto other = random_tensor({4, 16}, 9);
  spire::io::save_tensors(dir_ / "other.safetensors",
                          spire::io::NamedTensors{{"x", other}, {"w1", random_tensor({16, 32}, 2)},
                                                  {"b1", random_tensor({32}, 3)}, {"w2", random_tensor({32, 8}, 4)}});
  auto refused = spire::spire(run + "--inputs " + path("other.safetensors") + " --against " + path("saved"));
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.out.find("the saved run had other inputs: inputs hash"), std::string::npos) << refused.out;
  // Another model: refused, naming the model hash.
  auto model = spire::spire("diff " + path("right.graph") + " --devices vulkan:0 --inputs " + path("in.safetensors") +
                            " --against " + path("saved"));
  EXPECT_EQ(model.exit_code, 3) << model.out;
  EXPECT_NE(model.out.find("the saved run is of another model: model hash"), std::string::npos) << model.out;
}

TEST_F(CliDiff, PrecisionFindsWhereHalfPrecisionLosesMost) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  // a = x + 4 rounds x to f16's spacing at 4 (2^-8): an error small next to a. b = a - 4 is exact, but it cancels
  // the 4 and leaves that error next to values below 1: there the error grows past sub's f16 tolerance. y = 2b only
  // carries it. In f32 (spacing 2^-21) b stays within tolerance.
  std::ofstream(dir_ / "cancel.graph") << "x = input() : f32[64]\n"
                                          "big = constant() {value=4} : f32[]\n"
                                          "two = constant() {value=2} : f32[]\n"
                                          "a = add(x, big) : f32[64]\n"
                                          "b = sub(a, big) : f32[64]\n"
                                          "y = mul(b, two) : f32[64]\n"
                                          "output y = y\n";
  spire::io::save_tensors(dir_ / "x.safetensors", spire::io::NamedTensors{{"x", random_tensor({64}, 5)}});
  auto f32 = spire::spire("diff " + path("cancel.graph") + " --inputs " + path("x.safetensors") + " --devices vulkan:0");
  EXPECT_EQ(f32.exit_code, 0) << f32.out;
  auto r = spire::spire("diff " + path("cancel.graph") + " --inputs " + path("x.safetensors") +
                        " --devices vulkan:0 --precision f16 --json " + path("precision.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("first divergence: b "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OFF here (accumulated: node alone within)"), std::string::npos) << r.out;
  const size_t list = r.out.find("vulkan:0 in f16: the values whose error grows most");
  ASSERT_NE(list, std::string::npos) << r.out;
  const size_t header = r.out.find('\n', r.out.find('\n', list) + 1);  // past the column header
  EXPECT_EQ(r.out.substr(header + 1, 4), "  b ") << r.out;
  // b in f32 alone still reads a rounded in f16; with a in f32 too, only x's own rounding (2^-12) is left.
  EXPECT_NE(r.out.find("keeping these 2 values (those whose error grows most) in f32 brings every output within "
                       "tolerance (3 runs to find them): b, a"),
            std::string::npos)
      << r.out;
  const auto bytes = spire::io::read_file_bytes(path("precision.json"));
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
  EXPECT_EQ(j.at("precision"), "f16");
  const auto& growth = j.at("comparisons")[0].at("error_growth");
  ASSERT_EQ(growth.size(), 3u);
  EXPECT_EQ(growth[0].at("name"), "b");
  EXPECT_EQ(growth[0].at("alone").get<double>(), 0.0);  // exact given its inputs: the error came from a
  auto refused = spire::spire("diff " + path("cancel.graph") + " --inputs " + path("x.safetensors") +
                              " --precision f8");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  auto with_save = spire::spire("diff " + path("cancel.graph") + " --inputs " + path("x.safetensors") +
                                " --precision f16 --save " + path("half_run"));
  EXPECT_EQ(with_save.exit_code, 2) << with_save.out;
  EXPECT_NE(with_save.out.find("--save excludes --precision"), std::string::npos) << with_save.out;
  EXPECT_FALSE(fs::exists(dir_ / "half_run"));
}

TEST_F(CliDiff, BadInputIsRefusedClearly) {
  auto missing = spire::spire("diff " + path("nothing.graph") + " --inputs " + path("in.safetensors"));
  EXPECT_EQ(missing.exit_code, 3) << missing.out;
  EXPECT_NE(missing.out.find("nothing.graph: no such file"), std::string::npos) << missing.out;

  auto no_inputs = spire::spire("diff " + path("right.graph") + " --inputs " + path("none.safetensors"));
  EXPECT_EQ(no_inputs.exit_code, 3) << no_inputs.out;
  EXPECT_NE(no_inputs.out.find("none.safetensors: no such file"), std::string::npos) << no_inputs.out;

  auto device = spire::spire("diff " + path("right.graph") + " --inputs " + path("in.safetensors") +
                             " --devices vulkan:9");
  EXPECT_EQ(device.exit_code, 3) << device.out;
  EXPECT_NE(device.out.find("unknown device 'vulkan:9' (devices present: "), std::string::npos) << device.out;

  spire::io::save_tensors(dir_ / "wrong.safetensors",
                          spire::io::NamedTensors{{"x", random_tensor({4, 15}, 1)}, {"w1", random_tensor({16, 32}, 2)},
                                                  {"b1", random_tensor({32}, 3)}, {"w2", random_tensor({32, 8}, 4)}});
  auto shape = spire::spire("diff " + path("right.graph") + " --inputs " + path("wrong.safetensors"));
  EXPECT_EQ(shape.exit_code, 3) << shape.out;
  EXPECT_NE(shape.out.find("input 'x' is f32[4,16] in the model but f32[4,15] in"), std::string::npos) << shape.out;

  std::ofstream(path("m.spire")) << "not a bundle";
  auto bundle = spire::spire("diff " + path("m.spire") + " --inputs " + path("in.safetensors"));
  EXPECT_EQ(bundle.exit_code, 3) << bundle.out;
  EXPECT_NE(bundle.out.find("m.spire: not a spire bundle"), std::string::npos) << bundle.out;

  auto against = spire::spire("diff " + path("right.graph") + " --inputs " + path("in.safetensors") + " --against " +
                              path("no_such_dir"));
  EXPECT_EQ(against.exit_code, 3) << against.out;
  EXPECT_NE(against.out.find("no manifest.json there"), std::string::npos) << against.out;

  auto argument = spire::spire("diff " + path("right.graph"));  // --inputs is required
  EXPECT_EQ(argument.exit_code, 2) << argument.out;
}

}  // namespace
