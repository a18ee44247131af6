// The rewrite rules spire ships, and the names `--passes` knows them by. None runs unless asked for: each
// changes the graph a user sees (names, op counts, the dump), so it is the user's choice.
//
//   silu   x * sigmoid(x) -> silu(x), either operand order (seed 002's rewrite). One op instead of two; the
//          sigmoid stays only where something else reads it. Autograd then uses silu's own VJP (silu_grad)
//          instead of the product rule through sigmoid.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "passes/pipeline.h"
#include "passes/rewrite.h"

namespace spire::passes {

Rule silu_rule();

// The names of the built-in passes, in the order --help lists them.
std::vector<std::string> builtin_pass_names();
// One line for --help: "silu (x * sigmoid(x) -> silu(x))", each built-in pass and what it rewrites.
std::string builtin_pass_help();

// The built-in pass of that name; throws std::invalid_argument naming the known ones.
Pass builtin_pass(std::string_view name);

// Adds the passes a `--passes` value names: comma-separated NAME or NAME@POINT (POINT: after_import,
// after_autograd, before_fusion; default after_import), e.g. "silu" or "silu@before_fusion". Throws
// std::invalid_argument for an unknown name or point, naming the known ones.
void add_builtin_passes(PassPipeline& pipeline, std::string_view spec);

}  // namespace spire::passes
