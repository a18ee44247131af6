// spire generate MODEL.onnx --prompt-ids 1,2,3 --max-new-tokens N [--device D] [--max-context C] [--precision P]
// [--int8] [--follow-tokens IDS] [--logits-out FILE]: greedy decoding of a decoder LLM exported in Hugging Face's decoder-with-past form
// (decoder_generate.h).
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/tensor_file.h"
#include "tools/spire/commands.h"
#include "tools/spire/decoder_generate.h"
#include "tools/spire/step_bench.h"
#include "tools/spire/precision_option.h"

namespace spire::cli {
namespace {

struct GenerateCmd {
  GenerateOptions opt;
  std::string prompt;
  std::string logits_out;  // --logits-out: where the prefill's logits go
  std::string follow;      // --follow-tokens
};

// "1,2,3" -> {1, 2, 3}; refuses anything that is not a comma-separated list of non-negative integers, naming `flag`.
std::vector<int64_t> parse_ids(const std::string& text, const std::string& flag = "--prompt-ids") {
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
      throw std::invalid_argument(fmt::format("{} {}: '{}' is not a token id (give non-negative integers "
                                              "separated by commas, e.g. 1,2,3)", flag, text, item));
    ids.push_back(v);
  }
  if (ids.empty()) throw std::invalid_argument(flag + ": give at least one token id");
  return ids;
}

void run_generate(GenerateCmd& c) {
  c.opt.prompt = parse_ids(c.prompt);
  if (!c.follow.empty()) c.opt.follow = parse_ids(c.follow, "--follow-tokens");
  const GenerateResult r = generate(c.opt);
  if (!r.precision_note.empty()) fmt::print(stderr, "spire: note: {}\n", r.precision_note);
  if (!c.logits_out.empty()) io::save_tensors(c.logits_out, io::NamedTensors{{"logits", r.prefill_logits}});
  fmt::print("tokens: {}\n", fmt::join(r.tokens, ","));
  fmt::print("import and compile: prefill {:.2f} s, decode {:.2f} s\n", r.prefill_compile_s, r.decode_compile_s);
  if (r.shared_weight_bytes > 0)
    fmt::print("weights held once on the device: the decode graph reads {:.3f} MB of the prefill graph's\n",
               r.shared_weight_bytes / 1e6);
  if (const auto& m = r.memory; m.weights > 0)
    fmt::print("device memory: {:.1f} MB: weights and cache {:.1f} MB, the two plans' arenas {:.1f} MB, inputs and "
               "outputs {:.1f} MB\n",
               double(m.total()) / 1e6, double(m.weights) / 1e6, double(m.arena) / 1e6, double(m.inputs_outputs) / 1e6);
  fmt::print("time to first token: {:.2f} ms\n", r.first_token_ms);
  if (r.tokens.size() > 1) fmt::print("first decode step: {:.2f} ms\n", r.first_step_ms);
  if (r.tokens.size() <= 2) return;
  const size_t steps = r.tokens.size() - 2;
  const double tokens_per_s = double(steps) / r.decode_s;
  fmt::print("decode: {} more tokens in {:.3f} s, {:.1f} tokens/s\n", steps, r.decode_s, tokens_per_s);
  // gpt-fast's "bandwidth achieved": the bytes a token needs (decode_traffic.h) times the tokens a second.
  const double cache_per_step = r.cache_bytes / double(steps);
  const double gbs = (r.weight_bytes_per_step + cache_per_step) * tokens_per_s / 1e9;
  fmt::print("bandwidth achieved: {:.3f} GB/s ({:.3f} MB of weights and {:.3f} MB of cache a token)", gbs,
             r.weight_bytes_per_step / 1e6, cache_per_step / 1e6);
  if (r.copy_gbs > 0)
    fmt::print(", {:.2f}% of the device's copy bandwidth ({:.1f} GB/s)", 100 * gbs / r.copy_gbs, r.copy_gbs);
  fmt::print("\n");
  if (c.opt.profile && !r.decode_launches.empty()) {
    StepTiming timing;
    timing.runs = int(steps);
    timing.launches = r.decode_launches;
    fmt::print("decode step: {:.4f} ms of device time (median), {:.4f} ms a token in all\n", r.decode_step_device_ms,
               1e3 / tokens_per_s);
    fmt::print("{}", profile_table(c.opt.device.empty() ? "the device" : c.opt.device, timing));
  }
}

}  // namespace

void register_generate_commands(CLI::App& app) {
  auto c = std::make_shared<GenerateCmd>();
  auto* cmd = app.add_subcommand(
      "generate",
      "Greedy decoding of a decoder LLM exported to ONNX in Hugging Face's decoder-with-past form (inputs input_ids, "
      "attention_mask, position_ids, past_key_values.{i}.key|value; outputs logits, present.{i}.key|value), batch 1, "
      "f32 unless --precision says otherwise (a model with no cache inputs, whose inputs are among the first three, runs "
      "as a plain model instead: the whole sequence for each token, compiled for each length, with a warning). Prints the new token ids, the time to first token (the prefill step), the first decode step's time (a "
      "driver may compile kernels at their first launch) and the tokens per second of the decode steps after it. The prefill (the "
      "prompt) and the decode step (one token) are each compiled once. The decode step keeps the key/value cache on "
      "the device as graph state, --max-context positions long: each step writes its token's keys and values into "
      "the cache at the token's position and masks the unused positions out. The prompt's keys and values go from "
      "the prefill into the cache through the host, once. A step writes one position of each cache in place (the "
      "model's Concat that grows the cache becomes that write; nothing else is copied), reads the positions so far, "
      "and moves one token id out, the argmax taken on the device. After the tokens "
      "per second: the bandwidth achieved (the bytes a token must move at the least, every weight read once and the "
      "cache's positions so far read and one written, times the tokens per second, as gpt-fast reports it) and its "
      "share of the device's copy bandwidth (measured once, a device-to-device copy of 64 MiB)");
  cmd->add_option("model", c->opt.model, "MODEL.onnx")->required();
  auto ids_check = [](const std::string& flag) {
    return CLI::Validator(
        [flag](std::string& text) -> std::string {
          try {
            parse_ids(text, flag);
          } catch (const std::invalid_argument& e) {
            return e.what();
          }
          return {};
        },
        "IDS");
  };
  cmd->add_option("--prompt-ids", c->prompt, "The prompt's token ids, comma-separated (e.g. 1,2,3)")
      ->required()
      ->check(ids_check("--prompt-ids"));
  cmd->add_option("--max-new-tokens", c->opt.max_new_tokens, "How many tokens to generate")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device", c->opt.device,
                  "vulkan:N, cuda:N or 'reference' (the float64 evaluator); default: the best device present");
  cmd->add_option("--max-context", c->opt.max_context,
                  "Positions the cache holds, prompt and new tokens together (default: exactly those)")
      ->check(CLI::PositiveNumber);
  add_precision_option(cmd, c->opt.precision)
      ->description(precision_help() + ". Under bf16 and f16 the key/value cache is stored in half too. f32 is fp32");
  cmd->add_flag("--int8", c->opt.int8,
               "Read every matmul's weight as int8 (symmetric, one scale per output channel, quantized from the f32 "
               "weights at load), dequantized inside the matrix-vector kernel; norms, biases and gathered tables (a "
               "token embedding) stay as they are");
  cmd->add_option("--follow-tokens", c->follow,
                  "Teacher forcing: decode step i feeds the i-th of these ids (comma-separated, at least "
                  "--max-new-tokens - 1) in place of the token generated before it; the tokens printed are still each "
                  "step's choice, so that they compare with another run's choices (e.g. f32's) at the same prefix")
      ->check(ids_check("--follow-tokens"));
  cmd->add_flag("--profile", c->opt.profile,
                "Also print every launch of the decode step with its median device time over the steps after the first "
                "(a device timestamp after each launch, so a profiled step runs a little slower), and the step's device "
                "time beside its wall time a token");
  cmd->add_flag("--warm-up", c->opt.warm_up,
                "Before the timed decode steps, run the first one again and again, untimed, for at least 0.5 s on a GPU "
                "(5 steps on a CPU device), as benchmarks warm up: a GPU left idle by the compiles runs its first work "
                "at idle clocks. The tokens are the same");
  cmd->add_option("--logits-out", c->logits_out,
                  "Write the prefill's logits ([1, prompt length, vocabulary], f32) to this .safetensors file, as "
                  "'logits'");
  cmd->callback([c] { run_generate(*c); });
}

}  // namespace spire::cli
