// --precision fp32|tf32|bf16|f16: the precision policy (base/precision.h) of run, compile, graph eval and train. The
// value is checked while the command line is parsed, so a wrong one is an argument error that lists the choices.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/precision.h"

namespace spire::cli {

// What every command's --help says of the policy (docs/PRECISION.md has the bounds).
inline std::string precision_help() {
  return "Precision policy: fp32 (the default: strict f32, what spire's cross-vendor checks promise), tf32 (f32 "
         "convolutions and matrix products with their operands rounded to TF32, f32 sums, on cuda:N's tensor cores; "
         "a Vulkan device has no TF32 matrices, runs fp32 and says so on stderr), bf16 or f16 (every f32 value stored in "
         "half with f32 sums; softmax, norms' statistics, losses and optimizer updates stay f32, as torch.autocast; "
         "inputs and outputs stay f32; a device without the half type runs fp32 and says so). Bounds: "
         "docs/PRECISION.md";
}

// Adds --precision to `cmd`, storing the parsed policy in `p` (left as it is when the option is not given).
inline CLI::Option* add_precision_option(CLI::App* cmd, Precision& p) {
  CLI::Validator check(
      [](std::string& value) -> std::string {
        try {
          (void)parse_precision(value);
          return "";
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      std::string(precision_choices()));
  return cmd
      ->add_option_function<std::string>(
          "--precision", [&p](const std::string& v) { p = parse_precision(v); }, precision_help())
      ->check(check)
      ->type_name("POLICY");
}

}  // namespace spire::cli
