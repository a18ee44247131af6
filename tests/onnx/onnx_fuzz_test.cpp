// Flipped and truncated bytes of a valid model, a few hundred times with a fixed seed: every load either
// imports or throws; none crashes (this binary also runs under ASan + UBSan in tools/run-tests.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstdio>
#include <random>

#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/tensor_proto.h"
#include "tests/onnx/onnx_test_util.h"

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

}  // namespace
}  // namespace spire
