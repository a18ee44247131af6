// spire generate MODEL.onnx --prompt-ids 1,2,3 --max-new-tokens N [--device D] [--max-context C]: greedy decoding
// of a decoder LLM exported in Hugging Face's decoder-with-past form (decoder_generate.h).
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/spire/commands.h"
#include "tools/spire/decoder_generate.h"

namespace spire::cli {
namespace {

struct GenerateCmd {
  GenerateOptions opt;
  std::string prompt;
};

// "1,2,3" -> {1, 2, 3}; refuses anything that is not a comma-separated list of non-negative integers.
std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || v < 0)
      throw std::invalid_argument(fmt::format("--prompt-ids {}: '{}' is not a token id (give non-negative integers "
                                              "separated by commas, e.g. 1,2,3)", text, item));
    ids.push_back(v);
  }
  if (ids.empty()) throw std::invalid_argument("--prompt-ids: give at least one token id");
  return ids;
}

void run_generate(GenerateCmd& c) {
  c.opt.prompt = parse_ids(c.prompt);
  const GenerateResult r = generate(c.opt);
  fmt::print("tokens: {}\n", fmt::join(r.tokens, ","));
  fmt::print("import and compile: prefill {:.2f} s, decode {:.2f} s\n", r.prefill_compile_s, r.decode_compile_s);
  fmt::print("time to first token: {:.2f} ms\n", r.first_token_ms);
  if (r.tokens.size() > 1) fmt::print("first decode step: {:.2f} ms\n", r.first_step_ms);
  if (const size_t steps = r.tokens.size() - 2; r.tokens.size() > 2)
    fmt::print("decode: {} more tokens in {:.3f} s, {:.1f} tokens/s\n", steps, r.decode_s, double(steps) / r.decode_s);
}

}  // namespace

void register_generate_commands(CLI::App& app) {
  auto c = std::make_shared<GenerateCmd>();
  auto* cmd = app.add_subcommand(
      "generate",
      "Greedy decoding of a decoder LLM exported to ONNX in Hugging Face's decoder-with-past form (inputs input_ids, "
      "attention_mask, position_ids, past_key_values.{i}.key|value; outputs logits, present.{i}.key|value), batch 1, "
      "f32. Prints the new token ids, the time to first token (the prefill step), the first decode step's time (a "
      "driver may compile kernels at their first launch) and the tokens per second of the decode steps after it. The prefill (the "
      "prompt) and the decode step (one token) are each compiled once. The decode step keeps the key/value cache on "
      "the device as graph state, --max-context positions long: each step writes its token's keys and values into "
      "the cache at the token's position and masks the unused positions out. The prompt's keys and values go from "
      "the prefill into the cache through the host, once; every step reads the whole cache (it is not yet written in "
      "place: a state update copies it) and moves one token id out, the argmax taken on the device");
  cmd->add_option("model", c->opt.model, "MODEL.onnx")->required();
  cmd->add_option("--prompt-ids", c->prompt, "The prompt's token ids, comma-separated (e.g. 1,2,3)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              parse_ids(text);
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
            return {};
          },
          "IDS"));
  cmd->add_option("--max-new-tokens", c->opt.max_new_tokens, "How many tokens to generate")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device", c->opt.device,
                  "vulkan:N, cuda:N or 'reference' (the float64 evaluator); default: the best device present");
  cmd->add_option("--max-context", c->opt.max_context,
                  "Positions the cache holds, prompt and new tokens together (default: exactly those)")
      ->check(CLI::PositiveNumber);
  cmd->callback([c] { run_generate(*c); });
}

}  // namespace spire::cli
