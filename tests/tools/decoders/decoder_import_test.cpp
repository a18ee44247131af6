// `spire run` on the decoders of decoder_models.py, exported at test setup in Hugging Face's decoder-with-past form:
// a prefill (no past, 5 tokens, batch 2) and one decode step (a past of 5, one token, a past slot masked out), every
// output (logits and each layer's present key and value) against PyTorch's, on the float64 evaluator and on every
// device present.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "io/tensor_file.h"
#include "runtime/device.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

namespace fs = std::filesystem;

class DecoderImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_decoders_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs MODEL.onnx on CASE's inputs on `device` and checks every output of PyTorch's within 1e-4 relative (the L2
  // norm of the difference over the norm of PyTorch's output).
  void compare(const std::string& model_name, const std::string& case_name, const std::string& device) {
    const std::string out = (dir_ / (case_name + "." + device + ".safetensors")).string();
    const auto r = spire("run " + model(model_name + ".onnx") + " --inputs " + model(case_name + ".in.safetensors") +
                         " --outputs " + out + " --device " + device);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto got = io::load_tensors(out);
    const auto want = io::load_tensors(model(case_name + ".torch.safetensors"));
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      const auto& g = got.at(name);
      ASSERT_EQ(g.type(), w.type()) << case_name << " " << name << " on " << device;
      double diff = 0, norm = 0;
      for (size_t i = 0; i < w.data.size(); ++i) {
        diff += (g.data[i] - w.data[i]) * (g.data[i] - w.data[i]);
        norm += w.data[i] * w.data[i];
      }
      ASSERT_GT(norm, 0) << case_name << " " << name;
      EXPECT_LE(std::sqrt(diff / norm), 1e-4) << case_name << " output " << name << " on " << device;
    }
  }

  // The reference and every device present.
  void compare_everywhere(const std::string& model_name, const std::string& case_name) {
    compare(model_name, case_name, "reference");
    for (const auto& info : rt::list_devices()) compare(model_name, case_name, info.id);
  }

  fs::path dir_;
};

TEST_F(DecoderImport, Gpt2PrefillMatchesPyTorch) { compare_everywhere("gpt2-tiny", "gpt2-tiny_prefill"); }
TEST_F(DecoderImport, Gpt2DecodeStepMatchesPyTorch) { compare_everywhere("gpt2-tiny", "gpt2-tiny_decode"); }
TEST_F(DecoderImport, LlamaPrefillMatchesPyTorch) { compare_everywhere("llama-tiny", "llama-tiny_prefill"); }
TEST_F(DecoderImport, LlamaDecodeStepMatchesPyTorch) { compare_everywhere("llama-tiny", "llama-tiny_decode"); }

}  // namespace
}  // namespace spire
