// --precision fp32|tf32|bf16|f16: the precision policy (base/precision.h) of run, compile, graph eval and train. The
// value is checked while the command line is parsed, so a wrong one is an argument error that lists the choices.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/precision.h"

namespace spire::cli {

// What every command's --help says of the policy (docs/PRECISION.md has the bounds).
inline std::string precision_help() { return "Precision policy: " + std::string(precision_policies_help()); }

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
