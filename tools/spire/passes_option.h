// --passes NAME[@POINT],...: the built-in rewrite passes a command runs (passes/builtin.h). The value is
// checked while the command line is parsed, so a wrong name or a point the command never reaches is an
// argument error naming the option.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "passes/builtin.h"
#include "passes/pipeline.h"

namespace spire::cli {

// The pipeline a --passes value names (empty for an empty value).
inline passes::PassPipeline passes_pipeline(const std::string& spec) {
  passes::PassPipeline p;
  if (!spec.empty()) passes::add_builtin_passes(p, spec);
  return p;
}

// Adds --passes to `cmd`; `allowed` are the points the command runs, `points_help` says what each means there.
inline CLI::Option* add_passes_option(CLI::App* cmd, std::string& spec, std::vector<passes::PassPoint> allowed,
                                      const std::string& points_help) {
  CLI::Validator check(
      [allowed](std::string& value) -> std::string {
        try {
          const passes::PassPipeline p = passes_pipeline(value);
          std::string points;
          for (passes::PassPoint a : allowed) points += fmt::format("{}{}", points.empty() ? "" : ", ", passes::pass_point_name(a));
          for (passes::PassPoint point : passes::kPassPoints)
            if (!p.empty(point) && std::find(allowed.begin(), allowed.end(), point) == allowed.end())
              return fmt::format("this command has no {} point (it has {})", passes::pass_point_name(point), points);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "NAME[@POINT],...");
  return cmd
      ->add_option("--passes", spec,
                   fmt::format("Rewrite passes to run, comma-separated NAME or NAME@POINT (none by default). NAMEs: {}. "
                               "POINTs: {}. docs/REWRITE_PASSES.md",
                               passes::builtin_pass_help(), points_help))
      ->check(check);
}

}  // namespace spire::cli
