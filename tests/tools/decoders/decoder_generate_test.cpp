// `spire generate` on the decoders of decoder_models.py: greedy tokens identical to PyTorch's (decoder_models.py's
// greedy(), written at test setup as NAME.greedy.txt) for 64 new tokens in f32, on the float64 evaluator and on every
// device present; and its refusals of bad prompts, a too-short context and a model off the convention.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "runtime/device.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

// The prompt decoder_models.py's greedy data start from (PROMPT there).
const std::string kPrompt = "3,14,15,92,65";

std::string expected_tokens(const std::string& model_name) {
  std::ifstream f(model(model_name + ".greedy.txt"));
  std::string line;
  std::getline(f, line);
  return line;
}

// The ids after "tokens: " in generate's output.
std::string printed_tokens(const std::string& out) {
  const size_t at = out.find("tokens: ");
  if (at == std::string::npos) return "";
  return out.substr(at + 8, out.find('\n', at) - at - 8);
}

void expect_greedy_matches_pytorch(const std::string& model_name, const std::string& device, const std::string& extra = "") {
  const std::string want = expected_tokens(model_name);
  ASSERT_FALSE(want.empty()) << model_name << ".greedy.txt";
  const auto r = spire("generate " + model(model_name + ".onnx") + " --prompt-ids " + kPrompt +
                       " --max-new-tokens 64 --device " + device + extra);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(printed_tokens(r.out), want) << model_name << " on " << device << "\n" << r.out;
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

// A cache longer than needed: the unused slots are masked out, so the tokens are the same.
TEST(DecoderGenerate, LongerContextGivesTheSameTokens) {
  expect_greedy_matches_pytorch("llama-tiny", "reference", " --max-context 100");
  for (const auto& info : rt::list_devices()) expect_greedy_matches_pytorch("llama-tiny", info.id, " --max-context 100");
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

// decoder_models.py writes gpt2-tiny with position_ids renamed: not the convention, refused by name.
TEST(DecoderGenerate, RefusesAModelWithoutTheConventionsInputs) {
  const auto r = spire("generate " + model("gpt2-tiny.renamed_positions.onnx") + " --prompt-ids 1,2 --max-new-tokens 2 "
                       "--device reference");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("it has no input 'position_ids'"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace spire
