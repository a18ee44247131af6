// `spire reduce` as a user runs it: each planted fault (a custom op whose GLSL kernel is wrong in a few elements, a NaN
// planted in an intermediate value, an error that only values before a node make visible) shrunk to its node within
// the run bound (ceil(log2 N) + 5 for one faulty node among N values), the reduced model failing again under
// `spire diff` while small, and bad input refused with nothing written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "io/tensor_file.h"
#include "runtime/device.h"
#include "tests/support/spire_cli.h"
#include "tuning/tuning_cache.h"

namespace {

namespace fs = std::filesystem;
using spire::graph::DType;
using spire::graph::Tensor;

const std::string kOps = SPIRE_SOURCE_DIR "/tests/diff/planted_relu.op";
const std::string kConfigOps = SPIRE_SOURCE_DIR "/tests/diff/planted_config.op";

Tensor random_tensor(spire::graph::Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DType::F32, shape);
  for (double& v : t.data) v = u(rng);
  return t.round_to_dtype();
}

// A chain of `before` layers (matmul by a weight, then tanh), the activation `act` (planted_relu, planted_nan or relu)
// on the last one, then `after` more layers. Every layer's weight w<i> is an input of f32[16,16]; x is f32[4,16].
// 2 values per layer, 1 for the activation: N = 2 * (before + after) + 1.
std::string chain_text(int before, const std::string& act, int after) {
  std::ostringstream s;
  s << "x = input() : f32[4,16]\n";
  std::string last = "x";
  auto layer = [&](int i) {
    s << "w" << i << " = input() : f32[16,16]\n"
      << "mm" << i << " = matmul(" << last << ", w" << i << ") : f32[4,16]\n"
      << "t" << i << " = tanh(mm" << i << ") : f32[4,16]\n";
    last = "t" + std::to_string(i);
  };
  for (int i = 0; i < before; ++i) layer(i);
  s << "act = " << act << "(" << last << ") : f32[4,16]\n";
  last = "act";
  for (int i = before; i < before + after; ++i) layer(i);
  s << "output y = " << last << "\n";
  return s.str();
}

spire::io::NamedTensors chain_inputs(int layers) {
  spire::io::NamedTensors in{{"x", random_tensor({4, 16}, 1)}};
  for (int i = 0; i < layers; ++i) in.emplace_back("w" + std::to_string(i), random_tensor({16, 16}, 10 + uint64_t(i)));
  return in;
}

// Lines of graph text that compute a value (not a leaf, not an output): the model's size as `spire diff` counts it.
int computed_values(const fs::path& graph_file) {
  std::ifstream in(graph_file);
  int n = 0;
  const std::regex leaf(R"(^\S+ = (input|parameter|state|constant)\()");
  for (std::string line; std::getline(in, line);)
    if (line.find(" = ") != std::string::npos && line.rfind("output ", 0) != 0 && !std::regex_search(line, leaf)) ++n;
  return n;
}

// "(3 runs;" in the summary line.
int runs_of(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(\((\d+) runs; the bound)"))) return -1;
  return std::stoi(m[1]);
}

int bound(int n) { return int(std::ceil(std::log2(double(n)))) + 5; }

class CliReduce : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("spire_cli_reduce_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  bool have_vulkan() { return spire::spire("devices").out.find("vulkan:0") != std::string::npos; }
  // Writes NAME.graph (chain_text) and in.safetensors for it.
  void write_chain(const std::string& name, int before, const std::string& act, int after) {
    std::ofstream(dir_ / (name + ".graph")) << chain_text(before, act, after);
    spire::io::save_tensors(dir_ / "in.safetensors", chain_inputs(before + after));
  }
  fs::path dir_;
};

TEST_F(CliReduce, ShrinksAPlantedKernelFaultToItsNodeWithinTheBound) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  write_chain("faulty", 12, "planted_relu", 12);  // N = 49 values: the bound is 6 + 5 = 11 runs
  auto r = spire::spire("reduce --ops " + kOps + " " + path("faulty.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 -o " + path("small.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const int runs = runs_of(r.out);
  EXPECT_GE(runs, 2) << r.out;  // the whole model, then the node alone at least
  EXPECT_LE(runs, bound(49)) << r.out;
  EXPECT_NE(r.out.find("1 of the model's 49 values still fails"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first divergence: act "), std::string::npos) << r.out;
  EXPECT_EQ(computed_values(dir_ / "small.graph"), 1);
  ASSERT_TRUE(fs::exists(dir_ / "small.inputs.safetensors"));
  ASSERT_TRUE(fs::exists(dir_ / "small.safetensors"));
  // The boundary value t11 is an input now, fed with the reference's value.
  EXPECT_EQ(spire::io::load_tensors(dir_ / "small.inputs.safetensors").count("t11"), 1u);

  // The reduced model fails the same way under spire diff, as the command it printed says.
  EXPECT_NE(r.out.find("spire diff --ops " + kOps + " " + path("small.graph") + " --inputs " +
                       path("small.inputs.safetensors") + " --devices vulkan:0"),
            std::string::npos)
      << r.out;
  auto again = spire::spire("diff --ops " + kOps + " " + path("small.graph") + " --inputs " +
                            path("small.inputs.safetensors") + " --devices vulkan:0");
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("first divergence: act "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("none was off: the error starts here"), std::string::npos) << again.out;
}

TEST_F(CliReduce, ShrinksAPlantedNanToItsNode) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  write_chain("nan", 6, "planted_nan", 6);  // N = 25: the bound is 5 + 5 = 10 runs
  auto r = spire::spire("reduce --ops " + kOps + " " + path("nan.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 --until nan -o " + path("small.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_LE(runs_of(r.out), bound(25)) << r.out;
  EXPECT_NE(r.out.find("run 1: the whole model (25 values): fails: act has 1 NaN and 0 Inf"), std::string::npos)
      << r.out;
  EXPECT_EQ(computed_values(dir_ / "small.graph"), 1);
  auto again = spire::spire("diff --ops " + kOps + " " + path("small.graph") + " --inputs " +
                            path("small.inputs.safetensors") + " --devices vulkan:0");
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("first divergence: act "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(" 1 NaN"), std::string::npos) << again.out;
}

// b = (p + 2^20) - 2^20 loses p's low bits in float32's rounding of a = p + 2^20: b is off while b alone, fed the
// rounded a, is exact. So b alone passes, and the search must keep a with it, and nothing before a. Where the device's
// compiler folds (p + 2^20) - 2^20 inside one fused kernel (lavapipe's does), a and b computed by one launch agree,
// and the failure also needs y, whose launch keeps b in registers, so that b is read from a run that stores a: the
// search then bisects over the values after b as well (step 3 of diff/reduce.h).
TEST_F(CliReduce, KeepsTheValuesAnErrorNeedsAndNoMore) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  std::ostringstream s;
  s << "x = input() : f32[64]\n"
       "big = constant() {value=1048576} : f32[]\n"
       "half = constant() {value=0.5} : f32[]\n";
  std::string last = "x";
  for (int i = 0; i < 20; ++i) {  // p0 .. p19: exact in float32 (halving), 20 values before the fault
    s << "p" << i << " = mul(" << last << ", half) : f32[64]\n";
    last = "p" + std::to_string(i);
  }
  s << "a = add(" << last << ", big) : f32[64]\n"
    << "b = sub(a, big) : f32[64]\n"
    << "y = exp(b) : f32[64]\n"
    << "output y = y\n";
  std::ofstream(dir_ / "cancel.graph") << s.str();
  Tensor x = random_tensor({64}, 7);
  for (double& v : x.data) v *= 1 << 20;  // p19 = x / 2^20 in [-1, 1]
  spire::io::save_tensors(dir_ / "x.safetensors", spire::io::NamedTensors{{"x", x}});
  auto r = spire::spire("reduce " + path("cancel.graph") + " --inputs " + path("x.safetensors") +
                        " --devices vulkan:0 -o " + path("small.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("run 2: b alone (1 value): passes"), std::string::npos) << r.out;
  EXPECT_LE(runs_of(r.out), bound(23)) << r.out;
  const int kept = computed_values(dir_ / "small.graph");
  EXPECT_TRUE(kept == 2 || kept == 3) << kept;  // a, b (and y where the device folds within a kernel)
  EXPECT_NE(
      r.out.find(std::to_string(kept) + " of the model's 23 values still fail (" + std::to_string(runs_of(r.out)) +
                 " runs; the bound for one faulty node is ceil(log2 23) + 5 = 10): a, b"),
      std::string::npos)
      << r.out;
  auto again = spire::spire("diff " + path("small.graph") + " --inputs " + path("small.inputs.safetensors") +
                            " --devices vulkan:0");
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("first divergence: b "), std::string::npos) << again.out;
}

// --tuning on a fault that is the kernel's, not a tuned config's: with every heuristic config it still fails, so no
// cache is written. (A wrong config blamed and left out: tests/diff/reduce_tuning_test.cpp, whose op is C++.)
TEST_F(CliReduce, TuningSaysWhenTheFailureDoesNotDependOnTheCache) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  write_chain("faulty", 2, "planted_relu", 2);
  auto r = spire::spire("reduce --ops " + kOps + " " + path("faulty.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 --tuning --tuning-cache " + path("no_cache.txt") + " --atol 1e-4 -o " +
                        path("small.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("with the heuristic configs it still fails (act is off: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the failure does not depend on the tuning cache; no cache written"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "small.tuning.txt"));
  // The command printed to see the failure again judges by the same tolerance and reads the same cache.
  EXPECT_NE(r.out.find("--devices vulkan:0 --atol 0.0001 --tuning-cache " + path("no_cache.txt")), std::string::npos)
      << r.out;
}

#ifdef MOCK_CUDA_DRIVER_DIR
// cuda:0 (the mock driver) cannot run the GLSL op at all: there is no first divergence to follow, but --until exit
// finds the node it cannot run, by bisection over the values' ancestors and then over their suffixes (no target to
// start from: two bisections, 2 ceil(log2 N) + 2 runs at most).
TEST_F(CliReduce, UntilExitFindsTheNodeADeviceCannotRun) {
  const std::string env = std::string("LD_LIBRARY_PATH=") + MOCK_CUDA_DRIVER_DIR;
  write_chain("glsl", 4, "planted_relu", 4);  // N = 17
  const std::string run = "reduce --ops " + kOps + " " + path("glsl.graph") + " --inputs " + path("in.safetensors") +
                          " --devices cuda:0 -o " + path("small.graph");
  auto divergence = spire::spire(run, env);
  EXPECT_EQ(divergence.exit_code, 1) << divergence.out;
  EXPECT_NE(divergence.out.find("nothing to reduce: the device cannot run the model (custom op planted_relu (node "
                                "'act') has only a GLSL kernel"),
            std::string::npos)
      << divergence.out;
  EXPECT_FALSE(fs::exists(dir_ / "small.graph"));
  auto exit = spire::spire(run + " --until exit", env);
  ASSERT_EQ(exit.exit_code, 0) << exit.out;
  EXPECT_NE(exit.out.find("1 of the model's 17 values still fails"), std::string::npos) << exit.out;
  EXPECT_LE(runs_of(exit.out), 2 * int(std::ceil(std::log2(17.0))) + 2) << exit.out;
  EXPECT_EQ(computed_values(dir_ / "small.graph"), 1);
  std::ifstream small(dir_ / "small.graph");
  const std::string text((std::istreambuf_iterator<char>(small)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("act = planted_relu(t3) : f32[4,16]"), std::string::npos) << text;
}
#endif

// A kernel config known to be wrong, forced through the tuning cache: planted_config's GLSL kernel is right with
// variant=0 (the first config, used without a cache) and wrong in one element with variant=1, which the cache file
// chooses for vulkan:0. diff names the node and the config; reduce --tuning shrinks the model to it, calls the choice
// bad and writes a cache without it, with which the model agrees.
TEST_F(CliReduce, TuningBlamesAWrongConfigForcedThroughTheCache) {
  std::optional<spire::rt::DeviceInfo> vulkan;
  for (const auto& d : spire::rt::list_devices())
    if (d.id == "vulkan:0") vulkan = d;
  if (!vulkan) GTEST_SKIP() << "no vulkan:0 here (the planted kernel is GLSL)";
  write_chain("config", 6, "planted_config", 6);  // N = 25: the bound is 5 + 5 = 10 runs
  {
    spire::tuning::TuningCache cache(path("cache.txt"));
    cache.put({spire::tuning::DeviceKey::of(*vulkan),
               {"custom.planted_config", "[4,16]", "f32"},
               spire::lowering::heavy::Config{{"variant", 1}},
               1,
               1});
    cache.save();
  }
  const std::string model = " --ops " + kConfigOps + " " + path("config.graph") + " --inputs " +
                            path("in.safetensors") + " --devices vulkan:0";
  auto heuristic = spire::spire("diff" + model + " --tuning-cache " + path("no_cache.txt"));
  EXPECT_EQ(heuristic.exit_code, 0) << heuristic.out;  // the first config is right
  auto forced = spire::spire("diff" + model + " --tuning-cache " + path("cache.txt"));
  EXPECT_EQ(forced.exit_code, 1) << forced.out;
  EXPECT_NE(forced.out.find("first divergence: act "), std::string::npos) << forced.out;
  EXPECT_NE(forced.out.find("tuning custom.planted_config [4,16] f32: variant=1"), std::string::npos) << forced.out;

  auto r =
      spire::spire("reduce" + model + " --tuning-cache " + path("cache.txt") + " --tuning -o " + path("small.graph"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 of the model's 25 values still fails"), std::string::npos) << r.out;
  EXPECT_LE(runs_of(r.out), bound(25)) << r.out;
  EXPECT_EQ(computed_values(dir_ / "small.graph"), 1);
  EXPECT_NE(r.out.find("  bad   custom.planted_config [4,16] f32: variant=1  (act is off: "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("with the heuristic configs it passes; 1 of the 1 choices it uses make it fail"),
            std::string::npos)
      << r.out;
  ASSERT_TRUE(fs::exists(dir_ / "small.tuning.txt")) << r.out;
  EXPECT_EQ(spire::tuning::TuningCache(path("small.tuning.txt")).size(), 0u);
  // The reduced model fails with the cache, and the model agrees with the cache reduce wrote.
  auto small =
      spire::spire("diff --ops " + kConfigOps + " " + path("small.graph") + " --inputs " +
                   path("small.inputs.safetensors") + " --devices vulkan:0 --tuning-cache " + path("cache.txt"));
  EXPECT_EQ(small.exit_code, 1) << small.out;
  auto fixed = spire::spire("diff" + model + " --tuning-cache " + path("small.tuning.txt"));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out;
}

TEST_F(CliReduce, AModelWithoutDivergenceIsRefusedAndNothingIsWritten) {
  if (!have_vulkan()) GTEST_SKIP() << "no vulkan:0 here";
  write_chain("right", 2, "relu", 2);
  auto r = spire::spire("reduce " + path("right.graph") + " --inputs " + path("in.safetensors") +
                        " --devices vulkan:0 -o " + path("small.graph"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nothing to reduce: every value is within tolerance on vulkan:0 for "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("; nothing was written"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "small.graph"));
  EXPECT_FALSE(fs::exists(dir_ / "small.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ / "small.inputs.safetensors"));
}

TEST_F(CliReduce, BadInputIsRefusedClearly) {
  write_chain("faulty", 1, "planted_relu", 1);
  const std::string model = "reduce --ops " + kOps + " " + path("faulty.graph");
  const std::string out = " -o " + path("small.graph");

  auto onnx = spire::spire(model + " --inputs " + path("in.safetensors") + " --devices vulkan:0 -o " + path("s.onnx"));
  EXPECT_EQ(onnx.exit_code, 2) << onnx.out;
  EXPECT_NE(onnx.out.find("does not write ONNX; write spire's graph text with -o SMALL.graph"), std::string::npos)
      << onnx.out;

  auto device = spire::spire(model + " --inputs " + path("in.safetensors") + " --devices vulkan:9" + out);
  EXPECT_EQ(device.exit_code, 3) << device.out;
  EXPECT_NE(device.out.find("unknown device 'vulkan:9' (devices present: "), std::string::npos) << device.out;

  auto missing = spire::spire(model + " --inputs " + path("none.safetensors") + " --devices vulkan:0" + out);
  EXPECT_EQ(missing.exit_code, 3) << missing.out;
  EXPECT_NE(missing.out.find("none.safetensors: no such file"), std::string::npos) << missing.out;

  spire::io::save_tensors(dir_ / "wrong.safetensors", spire::io::NamedTensors{{"x", random_tensor({4, 15}, 1)},
                                                                              {"w0", random_tensor({16, 16}, 2)},
                                                                              {"w1", random_tensor({16, 16}, 3)}});
  auto shape = spire::spire(model + " --inputs " + path("wrong.safetensors") + " --devices vulkan:0" + out);
  EXPECT_EQ(shape.exit_code, 3) << shape.out;
  EXPECT_NE(shape.out.find("input 'x' is f32[4,16] in the model but f32[4,15] in"), std::string::npos) << shape.out;

  spire::io::save_tensors(dir_ / "short.safetensors", spire::io::NamedTensors{{"x", random_tensor({4, 16}, 1)}});
  auto absent = spire::spire(model + " --inputs " + path("short.safetensors") + " --devices vulkan:0" + out);
  EXPECT_EQ(absent.exit_code, 3) << absent.out;
  EXPECT_NE(absent.out.find("input 'w0' (f32[16,16]) is missing from"), std::string::npos) << absent.out;

  // -o naming the model would write over it and over its weights (MODEL.safetensors): refused, nothing written.
  const auto before = fs::last_write_time(dir_ / "faulty.graph");
  auto over =
      spire::spire(model + " --inputs " + path("in.safetensors") + " --devices vulkan:0 -o " + path("faulty.graph"));
  EXPECT_EQ(over.exit_code, 3) << over.out;
  EXPECT_NE(over.out.find("faulty.graph, which this command reads; choose another name"), std::string::npos)
      << over.out;
  EXPECT_EQ(fs::last_write_time(dir_ / "faulty.graph"), before);
  EXPECT_FALSE(fs::exists(dir_ / "faulty.safetensors"));
  auto over_inputs =
      spire::spire(model + " --inputs " + path("in.safetensors") + " --devices vulkan:0 -o " + path("in.graph"));
  EXPECT_EQ(over_inputs.exit_code, 3) << over_inputs.out;  // in.graph's weights would be in.safetensors
  EXPECT_NE(over_inputs.out.find("in.safetensors, which this command reads"), std::string::npos) << over_inputs.out;

  auto no_output = spire::spire(model + " --inputs " + path("in.safetensors") + " --devices vulkan:0");
  EXPECT_EQ(no_output.exit_code, 2) << no_output.out;
  EXPECT_FALSE(fs::exists(dir_ / "small.graph"));
}

}  // namespace
