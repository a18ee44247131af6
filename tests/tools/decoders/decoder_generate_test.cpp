// `spire generate` on the decoders of decoder_models.py: greedy tokens identical to PyTorch's (decoder_models.py's
// greedy(), written at test setup as NAME.greedy.txt) for 64 new tokens in f32, on the float64 evaluator and on every
// device present; and its refusals of bad prompts, a too-short context and a model off the convention.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "tests/support/spire_cli.h"
#include "tests/tools/decoders/generate_output.h"

namespace spire {
namespace {

void expect_greedy_matches_pytorch(const std::string& model_name, const std::string& device, const std::string& extra = "") {
  const std::string want = first_line(model_name + ".greedy.txt");
  ASSERT_FALSE(want.empty()) << model_name << ".greedy.txt";
  const auto r = spire("generate " + model(model_name + ".onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 64 --device " + device + extra);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(printed(r.out, "tokens: "), want) << model_name << " on " << device << "\n" << r.out;
  EXPECT_NE(r.out.find("time to first token:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
}

TEST(DecoderGenerate, Gpt2GreedyTokensMatchPyTorch) {
  expect_greedy_matches_pytorch("gpt2-tiny", "reference");
  for (const auto& info : rt::list_devices()) expect_greedy_matches_pytorch("gpt2-tiny", info.id);
}

TEST(DecoderGenerate, LlamaGreedyTokensMatchPyTorch) {
  expect_greedy_matches_pytorch("llama-tiny", "reference");
  for (const auto& info : rt::list_devices()) expect_greedy_matches_pytorch("llama-tiny", info.id);
}

// The prefill and decode graphs hold the same weights (the ONNX file's initializers): the decode graph reads the
// prefill graph's device buffers, every one of them, and its tokens are still PyTorch's (Gpt2GreedyTokensMatchPyTorch
// runs the same path). gpt2-tiny's f32 weights worked out by hand (width 32, 2 layers, MLP 128, vocabulary 97, 128
// positions): a layer's two norms, QKV, projection and MLP, the final norm, wte, wpe and the head's transposed copy of
// wte that torch 1.13's export writes. Under bf16 the same f32 weights are shared (their half copies are each plan's).
TEST(DecoderGenerate, TheDecodeGraphReadsThePrefillGraphsWeights) {
  const double layer = 2 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + 2 * 32 + (32 * 128 + 128) + (128 * 32 + 32);
  const double floats = 2 * layer + 2 * 32 + 97 * 32 + 128 * 32 + 32 * 97;
  for (const auto& info : rt::list_devices())
    for (const char* precision : {"f32", "bf16"}) {
      const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                           " --max-new-tokens 8 --device " + info.id + " --precision " + precision);
      ASSERT_EQ(r.exit_code, 0) << r.out;
      double mb = 0;
      ASSERT_EQ(std::sscanf(printed(r.out, "weights held once on the device: ").c_str(),
                            "the decode graph reads %lf MB", &mb), 1) << r.out;
      // Under bf16 the weights are stored in half, but for the 5 layer norms' scales and shifts (the f32 norm reads
      // them): 2 bytes a value and 2 more for each of those 320.
      const bool half = std::string(precision) != "f32" && r.out.find("runs as fp32") == std::string::npos;
      const double want = half ? floats * 2 + 5 * 64 * 2 : floats * 4;
      EXPECT_NEAR(mb, want / 1e6, 5e-4) << precision << " on " << info.id << "\n" << r.out;
    }
  // The float64 evaluator holds no device buffers: no such line.
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 8 --device reference");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("weights held once"), std::string::npos) << r.out;
}

// A cache longer than needed: the unused slots are masked out, so the tokens are the same.
TEST(DecoderGenerate, LongerContextGivesTheSameTokens) {
  expect_greedy_matches_pytorch("llama-tiny", "reference", " --max-context 100");
  for (const auto& info : rt::list_devices()) expect_greedy_matches_pytorch("llama-tiny", info.id, " --max-context 100");
}

// Warm-up steps write the first step's cache slot, which the first timed step writes again: the same tokens.
TEST(DecoderGenerate, WarmUpStepsLeaveTheTokensAsTheyWere) {
  for (const auto& info : rt::list_devices()) expect_greedy_matches_pytorch("gpt2-tiny", info.id, " --warm-up");
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids 1,2 --max-new-tokens 2 --device reference "
                       "--warm-up");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--warm-up warms a device up"), std::string::npos) << r.out;
}

TEST(DecoderGenerate, RefusesTokenIdsOutsideTheVocabulary) {
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids 1,97 --max-new-tokens 2 --device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("token id 97 is outside the model's vocabulary of 97"), std::string::npos) << r.out;
}

TEST(DecoderGenerate, RefusesMalformedPromptIds) {
  for (const char* ids : {"1,,2", "1,x", "-3"}) {
    const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + ids + " --max-new-tokens 2");
    EXPECT_EQ(r.exit_code, 2) << ids << "\n" << r.out;
    EXPECT_NE(r.out.find("is not a token id"), std::string::npos) << r.out;
  }
}

TEST(DecoderGenerate, RefusesAContextTooShortForPromptAndNewTokens) {
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids 1,2,3 --max-new-tokens 8 --max-context 10 "
                       "--device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("need a context of 11 positions, more than --max-context 10"), std::string::npos) << r.out;
}

// gpt2-tiny's learned position table has 128 rows: 5 prompt tokens and 130 new ones would reach position 133, where
// devices would read a zero position embedding.
TEST(DecoderGenerate, RefusesPositionsBeyondTheLearnedPositionTable) {
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 130 --device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("reach position 133, beyond the 128 positions of the model's position table 'wpe.weight'"),
            std::string::npos) << r.out;
  // 123 new tokens end at position 126, inside the table.
  EXPECT_EQ(spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids " + kPrompt +
                  " --max-new-tokens 123 --device reference").exit_code, 0);
}

// Teacher forcing needs a token for every decode step.
TEST(DecoderGenerate, RefusesTooFewTokensToFollow) {
  const auto r = spire("generate " + model("gpt2-tiny.onnx") + " --prompt-ids 1,2 --max-new-tokens 4 --follow-tokens 5,6 "
                       "--device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--follow-tokens gives 2 tokens; 4 new tokens need 3"), std::string::npos) << r.out;
}

// Teacher forcing: fed decoder_models.py's FOLLOW sequence, each step chooses what PyTorch chooses after the same
// prefix (NAME.follow.txt: the sequence, then PyTorch's choices), on the float64 evaluator and on every device.
TEST(DecoderGenerate, FollowedTokensGivePyTorchsChoicesAlongThem) {
  std::ifstream f(model("llama-tiny.follow.txt"));
  std::string follow, want;
  std::getline(f, follow);
  std::getline(f, want);
  ASSERT_FALSE(want.empty());
  std::vector<std::string> devices = {"reference"};
  for (const auto& info : rt::list_devices()) devices.push_back(info.id);
  for (const auto& device : devices) {
    const auto r = spire("generate " + model("llama-tiny.onnx") + " --prompt-ids " + kPrompt +
                         " --max-new-tokens 64 --follow-tokens " + follow + " --device " + device);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(printed(r.out, "tokens: "), want) << device << "\n" << r.out;
  }
}

// decoder_models.py writes gpt2-tiny with position_ids renamed: not the convention, refused by name.
TEST(DecoderGenerate, RefusesAModelWithoutTheConventionsInputs) {
  const auto r = spire("generate " + model("gpt2-tiny.renamed_positions.onnx") + " --prompt-ids 1,2 --max-new-tokens 2 "
                       "--device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("it has no input 'position_ids'"), std::string::npos) << r.out;
}

// The first n ids of a comma-separated list.
std::string first_ids(const std::string& ids, int n) {
  size_t end = 0;
  for (int commas = 0; commas < n && end != std::string::npos; ++commas) end = ids.find(',', end + 1);
  return ids.substr(0, end);
}

// gpt2-tiny exported without its cache (decoder_models.py's WithoutCache): run as a plain model, the whole sequence for
// each token, with a warning that says why; the same greedy tokens as PyTorch's, and along a followed sequence (the 11
// ids 12 tokens need) PyTorch's choices.
TEST(DecoderGenerate, AModelWithoutACacheRunsAsAPlainModel) {
  const std::string greedy = first_line("gpt2-tiny.greedy.txt");
  std::ifstream f(model("gpt2-tiny.follow.txt"));
  std::string follow, along;
  std::getline(f, follow);
  std::getline(f, along);
  ASSERT_FALSE(greedy.empty() || along.empty());
  std::vector<std::string> devices{"reference"};
  for (const auto& info : rt::list_devices()) devices.push_back(info.id);
  for (const std::string& device : devices) {
    const std::string run = "generate " + model("gpt2-tiny.no_cache.onnx") + " --prompt-ids " + kPrompt +
                            " --max-new-tokens 12 --device " + device;
    auto r = spire(run);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(printed(r.out, "tokens: "), first_ids(greedy, 12)) << device << "\n" << r.out;
    EXPECT_NE(r.out.find("running it as a plain model"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("no past_key_values inputs"), std::string::npos) << r.out;
    r = spire(run + " --follow-tokens " + first_ids(follow, 11));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(printed(r.out, "tokens: "), first_ids(along, 12)) << device << "\n" << r.out;
  }
  // --warm-up repeats a decode step and --profile times one, which a plain model has not: refused on a device, saying so.
  ASSERT_GE(devices.size(), 2u) << "no device present";
  for (const char* flag : {" --warm-up", " --profile"}) {
    const auto r = spire("generate " + model("gpt2-tiny.no_cache.onnx") + " --prompt-ids " + kPrompt +
                         " --max-new-tokens 2 --device " + devices[1] + flag);
    EXPECT_EQ(r.exit_code, 1) << flag << "\n" << r.out;
    EXPECT_NE(r.out.find("which a model without a cache has not"), std::string::npos) << flag << "\n" << r.out;
  }
}

// A decoder whose cache inputs are named otherwise (past_key_{i} / past_value_{i}) cannot keep its cache on the
// device; it runs as a plain model with those inputs fed empty, and says so: the same tokens as PyTorch's.
TEST(DecoderGenerate, ACacheUnderOtherNamesRunsAsAPlainModelFedEmpty) {
  const std::string greedy = first_line("gpt2-tiny.greedy.txt");
  ASSERT_FALSE(greedy.empty());
  std::vector<std::string> devices{"reference"};
  for (const auto& info : rt::list_devices()) devices.push_back(info.id);
  for (const std::string& device : devices) {
    auto r = spire("generate " + model("gpt2-tiny.renamed_cache.onnx") + " --prompt-ids " + kPrompt +
                   " --max-new-tokens 8 --device " + device);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(printed(r.out, "tokens: "), first_ids(greedy, 8)) << device << "\n" << r.out;
    EXPECT_NE(r.out.find("running it as a plain model"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("its cache inputs (past_key_0, past_value_0, past_key_1, past_value_1) are not named "
                         "past_key_values.{i}.key|value"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
}  // namespace spire
