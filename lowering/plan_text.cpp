// The plan as the user reads it: what the compiler decided, in the order it will run.
#include <fmt/format.h>

#include "lowering/plan.h"

namespace spire::lowering {

namespace {

std::string bytes_text(uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", double(b) / 1024);
  return fmt::format("{:.1f} MiB", double(b) / (1024 * 1024));
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string plan_text(const Plan& p) {
  uint64_t persistent = 0, transient = 0;
  for (const auto& b : p.buffers)
    if (b.view_of < 0) (b.persistent() ? persistent : transient) += b.bytes();
  std::string s = fmt::format(
      "plan: {} buffers ({} persistent; {} of intermediates packed into a {} arena), {} kernels, {} launches, "
      "{} state copies\n",
      p.buffers.size(), bytes_text(persistent), bytes_text(transient), bytes_text(p.arena_bytes), p.kernels.size(),
      p.launches.size(), p.copies.size());
  s += fmt::format("precision: {}{}\n", precision_name(p.precision),
                   p.precision_note.empty() ? "" : " (" + p.precision_note + ")");
  s += "buffers:\n";
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const auto& b = p.buffers[i];
    std::string where = b.persistent() ? "own buffer" : b.first_use < 0 ? "unused" : fmt::format("arena+{}", b.arena_offset);
    if (b.view_of >= 0) where += fmt::format(" (in #{})", b.view_of);
    std::string life = b.first_use < 0 ? "" : fmt::format("  launches {}..{}", b.first_use, b.last_use);
    std::string fill = b.fill ? fmt::format("  = {}", *b.fill) : "";
    s += fmt::format("  #{:<3} {:<9} {:>3} x {:<8} {:>10}  {:<12}{}{}  [{}]\n", i, buffer_role_name(b.role),
                     dtype_name(b.slot.type), b.slot.elements, bytes_text(b.bytes()), where, life, fill,
                     join(b.values));
  }
  s += "kernels:\n";
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const auto& kn = p.kernels[k];
    s += fmt::format("  k{:<3} {}  workgroup {}  shared {}  needs {}\n", k, kn.name, kn.workgroup_invocations(),
                     bytes_text(kn.shared_bytes()), kir::features_to_string(kn.features));
  }
  s += "launches (in order; a barrier before each that depends on one since the last):\n";
  for (size_t l = 0; l < p.launches.size(); ++l) {
    const auto& L = p.launches[l];
    std::string bufs;
    for (int32_t b : L.buffers) bufs += fmt::format(" #{}", b);
    s += fmt::format("  {:<4} k{:<3} {:>8} groups  buffers{:<18}  {}{}\n", l, L.kernel, L.groups, bufs, L.node,
                     L.parameters_only ? "  (parameters only: runs when they change)" : "");
  }
  if (!p.copies.empty()) {
    s += "state updates (copies after the launches):\n";
    for (const auto& c : p.copies) s += fmt::format("  #{} -> #{}  {}\n", c.from, c.to, c.target);
  }
  return s;
}

}  // namespace spire::lowering
