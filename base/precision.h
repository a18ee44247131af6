// The precision policy: in what precision a model's f32 products and storage run (issue 53, docs/PRECISION.md).
//
//   fp32  strict f32 everywhere: what spire's cross-vendor checks promise, and the default of every command.
//   tf32  convolutions and matrix products whose operands are f32 round those operands to TF32 (10 explicit mantissa
//         bits, f32's exponent) and sum in f32, on tensor cores (PTX wmma on cuda:N); everything else stays f32. As
//         PyTorch's default for convolutions (torch.backends.cudnn.allow_tf32). A device without TF32 matrices runs it
//         as fp32 and says so (Vulkan's cooperative matrices have no TF32 type).
//   bf16, f16  every f32 value of the model stored in half (bf16: 8 significant bits, f32's range; f16: 11 bits,
//         range 6.1e-5 .. 65504) with f32 sums, the ops PyTorch's autocast runs in f32 kept in f32
//         (passes/half_storage.h lists them; the --precision help text names them for users); inputs and outputs stay
//         f32. A device without the half type runs it as fp32 and says so.
//
// The policy is decided once per compile, recorded in the plan and in a bundle, never changed silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spire {

enum class Precision : uint8_t { Fp32, Tf32, Bf16, F16 };

std::string_view precision_name(Precision p);  // "fp32", "tf32", "bf16", "f16"
// The spellings above, as the --precision flags list them: "fp32|tf32|bf16|f16".
std::string_view precision_choices();
// What each policy does, in one paragraph: what the CLI's --help and the Python API's help say of them.
std::string_view precision_policies_help();
// A policy by its name ("f32" is fp32 too); throws std::invalid_argument naming `text` and the valid choices.
Precision parse_precision(std::string_view text);

// The documented bound of a K-term dot product sum(a_i b_i) under the policy, relative to sum |a_i| |b_i| (what
// docs/PRECISION.md derives): each input rounded to the policy's operand precision to nearest (unit roundoff u_in:
// 0 for fp32, 2^-11 for tf32 and f16, 2^-8 for bf16) makes each product off by at most 2 u_in + u_in^2, and K
// terms summed in f32 (unit roundoff 2^-24) add at most K 2^-24 (the classical gamma_K, first order). So
//   b = 2 u_in + u_in^2 + K 2^-24,   |computed - exact| <= b sum |a_i| |b_i|   (fp32, tf32).
// bf16 and f16 also store the result in half, rounding it once more (u_in of a value at most (1 + b) sum |a_i| |b_i|):
//   |computed - exact| <= (b + u_in (1 + b)) sum |a_i| |b_i|   (bf16, f16; f16 within its range: no overflow past
// 65504, and subnormals below 2^-14 add at most 2^-25 absolute per rounding).
double precision_dot_bound(Precision p, int64_t k);
// The operand unit roundoff u_in above.
double precision_input_roundoff(Precision p);

}  // namespace spire
