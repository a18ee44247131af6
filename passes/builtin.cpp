// The built-in rules and the --passes spelling of them.
#include "passes/builtin.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace spire::passes {

Rule silu_rule() {
  // sigmoid(x) is float and has x's type, so the product has it too: silu(x) is a drop-in.
  return Rule("silu", op("mul", {any("x"), op("sigmoid", {same("x")})}).commutative(),
              [](graph::Graph& g, const Match& m) { return g.op("silu", {m["x"]}); });
}

std::vector<std::string> builtin_pass_names() { return {"silu"}; }

std::string builtin_pass_help() { return "silu (x * sigmoid(x) -> silu(x))"; }

Pass builtin_pass(std::string_view name) {
  if (name == "silu") return rewrite_pass("silu", {silu_rule()});
  throw std::invalid_argument(
      fmt::format("unknown pass '{}' (built-in passes: {})", name, fmt::join(builtin_pass_names(), ", ")));
}

void add_builtin_passes(PassPipeline& pipeline, std::string_view spec) {
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) throw std::invalid_argument(fmt::format("empty pass name in '{}'", spec));
    const size_t at = item.find('@');
    PassPoint point = PassPoint::AfterImport;
    if (at != std::string_view::npos) {
      const std::optional<PassPoint> p = pass_point_from_name(item.substr(at + 1));
      if (!p)
        throw std::invalid_argument(fmt::format("unknown pass point '{}' in '{}' (points: after_import, after_autograd, "
                                                "before_fusion)",
                                                item.substr(at + 1), item));
      point = *p;
    }
    pipeline.add(point, builtin_pass(item.substr(0, at)));
  }
}

}  // namespace spire::passes
