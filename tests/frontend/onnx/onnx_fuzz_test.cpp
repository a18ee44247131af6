// Flipped and truncated bytes of a valid model, a few hundred times with a fixed seed: every load either
// imports or throws; none crashes (this binary also runs under ASan + UBSan in tools/run-tests.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>

#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/tensor_proto.h"
#include "tests/frontend/onnx/onnx_test_util.h"

namespace spire {
namespace {

TEST(OnnxFuzz, MutatedModelsNeverCrash) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("spire_onnx_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string valid;
  onnx_test::small_mlp().SerializeToString(&valid);
  std::mt19937 rng(1234);
  int imported = 0, refused = 0;
  onnx_import::ImportOptions opt;
  opt.input_shapes["x"] = {2, 4};
  for (int iter = 0; iter < 400; ++iter) {
    std::string bytes = valid;
    const int mode = iter % 4;
    if (mode == 3) {
      bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
    } else {
      const int flips = 1 + mode * 3;
      for (int f = 0; f < flips; ++f) {
        const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
        bytes[at] = char(bytes[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
      }
    }
    const fs::path p = dir / "m.onnx";
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    try {
      onnx_import::import_model(p, opt);
      ++imported;
    } catch (const std::exception&) {
      ++refused;
    }
  }
  fs::remove_all(dir);
  EXPECT_EQ(imported + refused, 400);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace spire

namespace spire {
namespace {

// Every model of ONNX's backend node tests (when libonnx-testdata is installed), imported with its first
// data set's shapes: a broad corpus of valid and unsupported nodes through every handler, which must
// import or refuse, never crash (under ASan in tools/run-tests.sh).
TEST(OnnxCorpus, EveryNodeTestModelImportsOrIsRefused) {
  namespace fs = std::filesystem;
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  int imported = 0, refused = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    onnx_import::ImportOptions opt;
    const fs::path set = dir.path() / "test_data_set_0";
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(set, ec)) {
      if (f.path().filename().string().rfind("input_", 0) != 0) continue;
      try {
        std::ifstream in(f.path(), std::ios::binary);
        onnx::TensorProto t;
        if (!t.ParseFromIstream(&in) || t.name().empty()) continue;
        graph::Tensor v = onnx_import::read_tensor_file(f.path());
        opt.input_shapes[t.name()] = v.shape;
        if (graph::is_int(v.dtype) || v.rank() == 0 || v.dtype == graph::DType::Bool) opt.known_inputs[t.name()] = v;
      } catch (const std::exception&) {
      }
    }
    try {
      onnx_import::import_model(dir.path() / "model.onnx", opt);
      ++imported;
    } catch (const std::exception&) {
      ++refused;
    }
  }
  EXPECT_GT(imported, 300);
  std::printf("node test models: %d imported, %d refused\n", imported, refused);
}

// The same corpus, each 8th model with a few bytes flipped: mutated attributes, dims and tensor data reach
// the handlers' arithmetic (pads, strides, repeats, split sizes), which must refuse, never overflow.
TEST(OnnxCorpus, MutatedNodeTestModelsNeverCrash) {
  namespace fs = std::filesystem;
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path tmp = fs::temp_directory_path() / ("spire_onnx_corpus_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::vector<fs::path> models;
  for (const auto& dir : fs::directory_iterator(root)) models.push_back(dir.path() / "model.onnx");
  std::sort(models.begin(), models.end());
  std::mt19937 rng(99);
  int runs = 0;
  // SPIRE_ONNX_FUZZ=N: every model, N mutations each (a longer run by hand); default: each 8th, 6 each.
  const char* env = std::getenv("SPIRE_ONNX_FUZZ");
  const int per_model = env ? std::max(1, std::atoi(env)) : 6;
  const size_t stride = env ? 1 : 8;
  for (size_t m = 0; m < models.size(); m += stride) {
    std::ifstream in(models[m], std::ios::binary);
    const std::string valid((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (valid.empty()) continue;
    for (int k = 0; k < per_model; ++k) {
      std::string bytes = valid;
      for (int f = 0; f < 1 + k % 3; ++f) {
        const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
        bytes[at] = char(std::uniform_int_distribution<int>(0, 255)(rng));
      }
      std::ofstream(tmp / "m.onnx", std::ios::binary | std::ios::trunc) << bytes;
      if (env) std::fprintf(stderr, "fuzz %s #%d\n", models[m].c_str(), k);  // names the culprit of a crash
      try {
        onnx_import::import_model(tmp / "m.onnx");
      } catch (const std::exception&) {
      }
      ++runs;
    }
  }
  fs::remove_all(tmp);
  EXPECT_GT(runs, 500);
}

}  // namespace
}  // namespace spire
