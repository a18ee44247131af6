// Greedy decoding of an ONNX decoder LLM in Hugging Face's decoder-with-past form (inputs input_ids,
// attention_mask, position_ids, past_key_values.{i}.key|value; outputs logits, present.{i}.key|value): what
// `spire generate` runs.
//
// Two graphs, each imported and compiled once:
//   - prefill: the prompt's P tokens with an empty past;
//   - decode: one token (T = 1) against a cache of C slots (C = the context), the cache held as graph state.
// Since position_ids and attention_mask are explicit inputs, attention does not depend on which slot a key sits in:
// a decode step writes its key and value into the cache at its token's slot (the model's Concat that grows the cache
// made write_at(cache, row, slot), in place: one row a step, passes/cache_in_place.h) and attends to the slots the
// mask keeps (the tokens so far and its own). A model whose caches grow otherwise keeps its concat over C - 1 slots,
// and the step's row is then written into the cache after it. The prefill's present.i moves into the decode graph's
// cache through the host once; after that the cache stays on the device. A step moves its token id, position, mask
// and slot in and its next token id out: the decode graph takes the argmax of the logits itself
// (tools/spire/next_token.h).
//
// Under a half precision policy (bf16, f16; docs/PRECISION.md) both graphs compile under it (half copies of the
// weights, f32 sums) and the cache is stored in the half type, on devices that have it. With int8, both graphs read
// their matmuls' weights as int8 (passes/int8_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/tensor.h"
#include "lowering/executable.h"

namespace spire::cli {

struct GenerateOptions {
  std::string model;             // an .onnx file
  std::vector<int64_t> prompt;   // token ids
  int max_new_tokens = 0;
  std::string device;            // "reference", "vulkan:N", "cuda:N", "" for the best present
  int64_t max_context = 0;       // C; 0: prompt + max_new_tokens
  Precision precision = Precision::Fp32;  // a device's policy; the float64 evaluator refuses another
  // Every matmul by a weight reads it as int8, one scale per output channel, quantized from the f32 weights as the
  // graphs are loaded (passes/int8_weights.h); other weights (norms, biases, gathered tables) stay as they are.
  bool int8 = false;
  // Teacher forcing: when not empty, decode step i feeds follow[i] (the token after the prompt's i-th successor)
  // instead of the token generated before it, so that each step's choice can be compared with another run's (PyTorch
  // in f32) at the same prefix, which greedy decoding loses at the first disagreement. At least max_new_tokens - 1.
  std::vector<int64_t> follow;
  // Time every launch of the decode steps after the first with the device's timestamps (a barrier after each launch,
  // so the step runs a little slower than unprofiled): where a token's time goes.
  bool profile = false;
  // Before the timed steps, run the first decode step over and over, untimed, for at least tuning::kGpuWarmupMs and
  // 5 steps, as a benchmark warms up (PyTorch's bench in decoder_models.py generates twice and times the second): a
  // GPU left idle by the compiles runs its first work at idle clocks (vulkan:0 on the H200: every kernel 2.5x slower
  // over a step's first few hundred milliseconds; cuda:0 is not). The steps write the first step's cache slot, which
  // the first timed step writes again, so the tokens do not change.
  bool warm_up = false;
};

struct GenerateResult {
  std::vector<int64_t> tokens;   // the new tokens, max_new_tokens of them
  double prefill_compile_s = 0, decode_compile_s = 0;
  double first_token_ms = 0;     // the prefill step, inputs in and logits out
  // The first decode step apart from the rest: a driver may compile its kernels at their first launch (lavapipe
  // does), which belongs to neither the steady rate nor the first token.
  double first_step_ms = 0;
  double decode_s = 0;           // the decode steps after the first one
  graph::Tensor prefill_logits;  // [1, P, vocab], f32
  std::string precision_note;    // what the device runs in place of the policy (empty: as asked)
  // What the decode steps after the first must move at the least (decode_traffic.h): each step's weights, and
  // the cache's bytes over all of those steps; and the device's copy bandwidth (0 on the float64 evaluator).
  double weight_bytes_per_step = 0, cache_bytes = 0, copy_gbs = 0;
  // Device bytes of weights the decode graph reads from the prefill graph's buffers rather than a copy of its own.
  double shared_weight_bytes = 0;
  // The device memory both plans take together (zero on the evaluator): weights, the cache and other states once (the
  // decode graph's shared weights not counted again), the two transient arenas summed, the inputs' and outputs' own
  // buffers.
  lowering::MemoryReport memory;
  // With GenerateOptions::profile: the decode step's launches in plan order, each its median device time over the
  // steps after the first, and the median of the whole step's device time (the rest of a step's wall time is the
  // host's: its submit, wait and copies).
  std::vector<lowering::LaunchTime> decode_launches;
  double decode_step_device_ms = 0;
};

GenerateResult generate(const GenerateOptions& o);

}  // namespace spire::cli
