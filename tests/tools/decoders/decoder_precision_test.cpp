// `spire generate --precision bf16|f16` on the tiny decoders of decoder_models.py (weights and key/value cache in
// half, f32 sums; docs/PRECISION.md, docs/DECODERS.md), on every device present: the prefill's logits against
// PyTorch's (written at test setup as NAME.prompt.torch.safetensors: f32, and bf16 under torch.autocast), and the
// greedy tokens each policy gives, teacher-forced along PyTorch's f32 ones so that one step's disagreement does not
// spoil the rest. `--int8` (matmul weights in int8, one scale per output channel): its choices along PyTorch's f32
// tokens against PyTorch's with the same quantized weights, and against f32's. And the report's bandwidth line
// against the bytes the model's sizes give.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/precision.h"
#include "io/tensor_file.h"
#include "runtime/device.h"
#include "tests/support/spire_cli.h"
#include "tests/tools/decoders/generate_output.h"

namespace spire {
namespace {

namespace fs = std::filesystem;

// The GPU devices present (the float64 evaluator has no precision policy).
std::vector<std::string> devices() {
  std::vector<std::string> ids;
  for (const auto& info : rt::list_devices()) ids.push_back(info.id);
  return ids;
}

struct Errors {
  double l2 = 0;   // ||got - want|| / ||want||
  double max = 0;  // max |got - want| / max |want|
};

Errors errors(const graph::Tensor& got, const graph::Tensor& want) {
  EXPECT_EQ(got.numel(), want.numel());
  double diff = 0, norm = 0, max_diff = 0, max_want = 0;
  for (int64_t i = 0; i < std::min(got.numel(), want.numel()); ++i) {
    const double d = got[i] - want[i];
    diff += d * d, norm += want[i] * want[i];
    max_diff = std::max(max_diff, std::abs(d)), max_want = std::max(max_want, std::abs(want[i]));
  }
  return {std::sqrt(diff / norm), max_diff / max_want};
}

// The prefill logits of `spire generate --precision P` for decoder_models.py's PROMPT.
graph::Tensor prefill_logits(const std::string& model_name, const std::string& device, const std::string& precision,
                             std::string* out = nullptr) {
  const fs::path file = fs::temp_directory_path() /
                        ("spire_decoder_logits_" + std::to_string(::getpid()) + "_" + model_name + "_" + precision + ".safetensors");
  const auto r = spire("generate " + model(model_name + ".onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 1 --device " + device + " --precision " + precision + " --logits-out " +
                       file.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  if (out) *out = r.out;
  if (r.exit_code != 0) return {};
  graph::Tensor t = io::load_tensors(file).at("logits");
  fs::remove(file);
  return t;
}

// docs/PRECISION.md's rule for a network of L product layers: its outputs within L precision_dot_bound(p, K_max) of
// their largest magnitude. Both tiny decoders have 13 along a token's path (per layer: the q/k/v projection, the
// scores, the weighted values, the output projection, the MLP's two; then the head) and K_max = 128 (gpt2-tiny's
// MLP width; llama-tiny's is 64).
double documented_bound(Precision p) { return 13 * precision_dot_bound(p, 128); }

// bf16: within 2e-2 (L2, relative) of PyTorch's bf16 run (torch.autocast on the CPU; the two round differently, so
// each is about 1.5e-2 from f32 and they are about that far apart), within the documented bound of f32, and not
// silently f32 (1e-3 is ten thousand times f32's 5e-7 here).
TEST(DecoderPrecision, Bf16PrefillLogitsAreNearPyTorchsBf16) {
  for (const char* name : {"gpt2-tiny", "llama-tiny"}) {
    const auto torch = io::load_tensors(model(std::string(name) + ".prompt.torch.safetensors"));
    for (const auto& device : devices()) {
      std::string out;
      const graph::Tensor got = prefill_logits(name, device, "bf16", &out);
      if (out.find("runs as fp32") != std::string::npos) {  // no bf16 on this device: the policy says so
        EXPECT_LE(errors(got, torch.at("logits")).l2, 1e-4) << out;
        continue;
      }
      const Errors to_bf16 = errors(got, torch.at("logits_bf16")), to_f32 = errors(got, torch.at("logits"));
      EXPECT_LE(to_bf16.l2, 2e-2) << name << " on " << device;
      EXPECT_LE(to_f32.max, documented_bound(Precision::Bf16)) << name << " on " << device;
      EXPECT_GE(to_f32.l2, 1e-3) << name << " on " << device << ": not rounded to bf16?";
      std::printf("%s on %s, bf16: logits %.2e from PyTorch's bf16, %.2e from its f32 (L2, relative)\n", name,
                  device.c_str(), to_bf16.l2, to_f32.l2);
    }
  }
}

// f16 (PyTorch 1.13 has no f16 matmul on the CPU): within the documented bound of f32, and not silently f32.
TEST(DecoderPrecision, F16PrefillLogitsAreWithinTheDocumentedBoundOfF32) {
  for (const char* name : {"gpt2-tiny", "llama-tiny"}) {
    const auto torch = io::load_tensors(model(std::string(name) + ".prompt.torch.safetensors"));
    for (const auto& device : devices()) {
      std::string out;
      const graph::Tensor got = prefill_logits(name, device, "f16", &out);
      if (out.find("runs as fp32") != std::string::npos) continue;
      const Errors to_f32 = errors(got, torch.at("logits"));
      EXPECT_LE(to_f32.max, documented_bound(Precision::F16)) << name << " on " << device;
      EXPECT_GE(to_f32.l2, 1e-4) << name << " on " << device << ": not rounded to f16?";
      std::printf("%s on %s, f16: logits %.2e from PyTorch's f32 (L2, relative)\n", name, device.c_str(), to_f32.l2);
    }
  }
}

// The share of steps whose choice equals PyTorch's f32 one when both follow PyTorch's f32 greedy tokens.
double agreement_with_f32(const std::string& model_name, const std::string& device, const std::string& flags,
                          std::string* out) {
  const auto want = split_ids(first_line(model_name + ".greedy_long.txt"));
  std::string follow;
  for (size_t i = 0; i + 1 < want.size(); ++i) follow += (i ? "," : "") + std::to_string(want[i]);
  const auto r = spire("generate " + model(model_name + ".onnx") + " --prompt-ids " + kPrompt + " --max-new-tokens " +
                       std::to_string(want.size()) + " --follow-tokens " + follow + " --device " + device + " " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  *out = r.out;
  const auto got = split_ids(printed(r.out, "tokens: "));
  EXPECT_EQ(got.size(), want.size()) << r.out;
  size_t same = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) same += got[i] == want[i];
  return double(same) / double(want.size());
}

// The half policies' tokens, reported (the logits' bounds above are the test; a choice between two logits closer
// than the rounding may go either way): the share of PyTorch's f32 choices they make along PyTorch's tokens.
TEST(DecoderPrecision, HalfPoliciesReportTheirTokens) {
  for (const char* name : {"gpt2-tiny", "llama-tiny"})
    for (const auto& device : devices())
      for (const char* p : {"bf16", "f16"}) {
        std::string out;
        const double agree = agreement_with_f32(name, device, std::string("--precision ") + p, &out);
        EXPECT_GE(agree, 0.5) << name << " on " << device << " under " << p << "\n" << out;
        std::printf("%s on %s, %s: %.1f%% of PyTorch's f32 choices along its tokens\n", name, device.c_str(), p,
                    100 * agree);
      }
}

// --int8 along PyTorch's f32 tokens (123 of gpt2-tiny's, the most its position table allows; 256 of llama-tiny's), on
// the float64 evaluator and every device: each choice equals PyTorch's with the same weights quantized the same way
// (decoder_models.py's quantized_int8, written at test setup as NAME.int8_follow.txt), which holds the quantization
// and the kernel; and the share of f32's choices kept, at least 95% for gpt2-tiny. llama-tiny keeps 243 of 256
// (94.9%), exactly as PyTorch's quantized copy does: a property of per-channel int8 on its 32-wide rows, whose
// weights are large and logit gaps small (decoder_models.py's build()), not of spire's kernel, so only the equality
// with PyTorch's choices is held there.
TEST(DecoderInt8, ChoicesEqualPyTorchsWithTheSameInt8Weights) {
  std::vector<std::string> all = {"reference"};
  for (const auto& d : devices()) all.push_back(d);
  for (const char* name : {"gpt2-tiny", "llama-tiny"}) {
    const std::string int8_choices = first_line(std::string(name) + ".int8_follow.txt");
    ASSERT_FALSE(int8_choices.empty()) << name;
    for (const auto& device : all) {
      std::string out;
      const double agree = agreement_with_f32(name, device, "--int8", &out);
      EXPECT_EQ(printed(out, "tokens: "), int8_choices) << name << " on " << device;
      if (std::string(name) == "gpt2-tiny") {
        EXPECT_GE(agree, 0.95) << name << " on " << device;
      }
      std::printf("%s on %s, int8: %.1f%% of PyTorch's f32 choices along its tokens\n", name, device.c_str(), 100 * agree);
    }
  }
}

// int8 weights are a quarter of f32's: gpt2-tiny's matmul weights (per layer 32x96, 32x32, 32x128, 128x32; the head
// 32x97) take a byte each and a 4-byte scale per output channel, the rest (norms, biases, a row of wte and wpe) f32.
TEST(DecoderInt8, TheBandwidthLineCountsInt8Weights) {
  const double matmul = 2 * (32 * 96 + 32 * 32 + 32 * 128 + 128 * 32) + 32 * 97;
  const double channels = 2 * (96 + 32 + 128 + 32) + 97;
  const double other = 2 * (2 * 2 * 32 + 96 + 32 + 128 + 32) + 2 * 32 + 2 * 32;
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 8 --device reference --int8");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  double gbs = 0, weight_mb = 0;
  ASSERT_EQ(std::sscanf(printed(r.out, "bandwidth achieved: ").c_str(), "%lf GB/s (%lf MB of weights", &gbs, &weight_mb),
            2) << r.out;
  EXPECT_NEAR(weight_mb, (matmul + 4 * channels + 4 * other) / 1e6, 1e-3) << r.out;
}

// A device without bf16 storage (hidden by SPIRE_MASK_FEATURES) runs the policy as f32 and says so: PyTorch's f32
// tokens, and the weights and cache counted in f32's bytes.
TEST(DecoderPrecision, ADeviceWithoutBf16RunsF32AndSaysSo) {
  for (const auto& device : devices()) {
    const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt + " --max-new-tokens 64 "
                         "--precision bf16 --device " + device, "SPIRE_MASK_FEATURES=bfloat16");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("spire: note: " + device + " has no bfloat16 storage; bf16 runs as fp32"), std::string::npos)
        << r.out;
    EXPECT_EQ(printed(r.out, "tokens: "), first_line("gpt2-tiny.greedy.txt")) << r.out;
    // gpt2-tiny's f32 bytes, worked out in TheBandwidthLineCountsWeightsAndCache: 114560 and 19200.
    EXPECT_NE(r.out.find("(0.115 MB of weights and 0.019 MB of cache a token)"), std::string::npos) << r.out;
  }
}

TEST(DecoderPrecision, TheReferenceRefusesAPrecisionPolicy) {
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids 1,2 --max-new-tokens 2 --device reference "
                       "--precision bf16");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--precision bf16 applies to a device; the reference is the float64 evaluator"),
            std::string::npos) << r.out;
}

// The launches of a decode step (--profile lists them, one line each): under bf16 the attention still writes the key and
// the value into their half caches in its own launch, and the head's result is read by the argmax in place, so
// gpt2-tiny's step is f32's 14 launches (2 before the layers, 5 a layer, the head and the argmax), llama-tiny's f32's
// 18 (6 before the layers, 5 a layer: q, k and v one product, and gate and up another, passes/merged_products.h, whose
// launch also computes SiLU(gate) x up from each pair of its columns, fuse.h's paired epilogues; the rotary embeddings
// of the query and the new key computed by the attention's launch, fuse.h; the head and the argmax): its rotary embeddings read the half projections of q and k in place (no f32 copy), and the position's
// casts up and down are computed by the table's reader.
TEST(DecoderPrecision, UnderBf16ADecodeStepTakesF32sLaunches) {
  auto launches = [](const std::string& m, const std::string& device, const char* p, bool* half) {
    const auto r = spire("generate " + model(m + ".onnx") + " --prompt-ids " + kPrompt + " --max-new-tokens 4 --profile "
                         "--device " + device + " --precision " + p);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    *half = r.out.find("runs as fp32") == std::string::npos;
    const size_t table = r.out.find("launches on ");
    EXPECT_NE(table, std::string::npos) << r.out;
    int n = 0;
    for (size_t at = r.out.find('\n', table); at != std::string::npos && at + 1 < r.out.size();
         at = r.out.find('\n', at + 1)) {
      int index = -1;
      if (std::sscanf(r.out.c_str() + at + 1, " %d ", &index) == 1 && index == n) ++n;
    }
    return n;
  };
  for (const auto& device : devices()) {
    bool half = false;
    EXPECT_EQ(launches("gpt2-tiny", device, "f32", &half), 14) << device;
    const int gpt2 = launches("gpt2-tiny", device, "bf16", &half);
    if (half) {
      EXPECT_EQ(gpt2, 14) << device;
    }
    const int llama = launches("llama-tiny", device, "f32", &half);
    EXPECT_EQ(llama, 18) << device;
    const int llama_bf16 = launches("llama-tiny", device, "bf16", &half);
    if (half) {
      EXPECT_EQ(llama_bf16, llama) << device;
    }
  }
}

// The bandwidth line's bytes, from gpt2-tiny's sizes (decoder_models.py: width 32, 2 layers, MLP 128, vocabulary 97,
// 4 heads of 8): a step reads every weight once, but one row of each gathered table (wte, wpe); and the cache's
// positions so far (each position 2 layers x key and value x 32 floats), one of them written.
TEST(DecoderPrecision, TheBandwidthLineCountsWeightsAndCache) {
  const double layer = 2 * 2 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32);
  const double weights = 2 * layer + 2 * 32 /* ln_f */ + 32 * 97 /* the head */ + 2 * 32 /* a row of wte and wpe */;
  // 64 new tokens after 5: the first from the prefill, the first decode step (position 5) untimed, the timed ones at
  // positions 6 .. 67, each moving pos + 1 positions.
  const double positions = (7.0 + 68.0) / 2, position_floats = 2 * 2 * 32;
  for (const auto& device : devices())
    for (const auto& [p, bytes] : {std::pair{"f32", 4.0}, std::pair{"bf16", 2.0}}) {
      const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                           " --max-new-tokens 64 --device " + device + " --precision " + p);
      ASSERT_EQ(r.exit_code, 0) << r.out;
      const std::string line = printed(r.out, "bandwidth achieved: ");
      double gbs = 0, weight_mb = 0, cache_mb = 0, share = 0, copy = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "%lf GB/s (%lf MB of weights and %lf MB of cache a token), %lf%% of the "
                            "device's copy bandwidth (%lf GB/s)", &gbs, &weight_mb, &cache_mb, &share, &copy), 5)
          << r.out;
      if (r.out.find("runs as fp32") == std::string::npos) {
        EXPECT_NEAR(weight_mb, weights * bytes / 1e6, 1e-3) << p << " on " << device << "\n" << r.out;
        EXPECT_NEAR(cache_mb, positions * position_floats * bytes / 1e6, 1e-3) << p << " on " << device << "\n" << r.out;
      }
      const double tokens_per_s = std::stod(r.out.substr(r.out.rfind(", ", r.out.find(" tokens/s")) + 2));
      EXPECT_NEAR(gbs, (weight_mb + cache_mb) * 1e6 * tokens_per_s / 1e9, 0.01 * gbs + 0.005) << r.out;
      EXPECT_GT(copy, 0) << r.out;
      EXPECT_NEAR(share, 100 * gbs / copy, 0.05 + 0.01 * share) << r.out;
    }
}

}  // namespace
}  // namespace spire
