#include "diff/reduce.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/named_values.h"
#include "diff/capture.h"

namespace spire::diff {

using graph::Graph;
using graph::Value;

std::optional<Until> until_from_name(std::string_view name) {
  constexpr std::array kUntils{Until::FirstDivergence, Until::Nan, Until::Exit};
  return value_named(kUntils, until_name, name);
}

std::string_view until_name(Until u) {
  switch (u) {
    case Until::FirstDivergence:
      return "first-divergence";
    case Until::Nan:
      return "nan";
    case Until::Exit:
      return "exit";
  }
  return "?";
}

namespace {

// try_on_device with the graph's reference already captured.
Comparison compare_on_device(const Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                             const ReduceOptions& options, const Capture& reference) {
  try {
    const Capture got = capture_device(g, feeds, device, options.compile);
    return compare(g, got, reference, {.tolerance = options.tolerance, .feeds = &feeds});
  } catch (const std::exception& e) {
    Comparison failed;
    failed.device = device.info().id;
    failed.device_name = device.info().name;
    failed.driver = device.info().driver;
    failed.against = reference.device;
    failed.failure = e.what();
    return failed;
  }
}

// A value NaN or infinite on the device where the reference has a number: the measure is then infinite.
bool non_finite(const ValueRow& r) {
  return (r.error.nan > 0 || r.error.inf > 0) && !std::isfinite(r.error.norm_error);
}

std::string row_failure(const ValueRow& r) {
  if (non_finite(r))
    return fmt::format("{} has {} NaN and {} Inf where the reference has numbers", r.name, r.error.nan, r.error.inf);
  if (!r.verdict.within)
    return fmt::format("{} is off: error {:.2e} > {:.2e}", r.name, r.verdict.measured, r.verdict.bound);
  return fmt::format("{} is off: the node alone has error {:.2e} > {:.2e}", r.name, r.own_verdict->measured,
                     r.own_verdict->bound);
}

// The value the search starts from: the first divergence, or the first NaN/Inf (--until nan).
std::string target_of(const Comparison& c, Until until) {
  if (until == Until::Nan) {
    for (const ValueRow& r : c.rows)
      if (non_finite(r)) return r.name;
    return {};
  }
  return c.first ? c.rows[*c.first].name : std::string();
}

}  // namespace

Comparison try_on_device(const Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                         const ReduceOptions& options) {
  return compare_on_device(g, feeds, device, options, capture_reference(g, feeds));
}

std::string failure_of(const Comparison& c, Until until, const std::string& target) {
  switch (until) {
    case Until::FirstDivergence:
      for (const ValueRow& r : c.rows)
        if (r.name == target && r.off) return row_failure(r);
      return {};
    case Until::Nan:
      for (const ValueRow& r : c.rows)
        if (non_finite(r)) return row_failure(r);
      return {};
    case Until::Exit:
      if (!c.failure.empty()) return "the device cannot run it: " + c.failure;
      return c.first ? row_failure(c.rows[*c.first]) : std::string();
  }
  return {};
}

Reduction reduce(const Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                 const ReduceOptions& options, const std::function<void(const ReduceRun&)>& on_run) {
  Reduction red;
  const std::vector<Value> order = compared_values(g);
  red.model_values = order.size();
  auto record = [&](std::string what, size_t nodes, const std::string& why) {
    red.runs.push_back({std::move(what), nodes, !why.empty(), why.empty() ? "passes" : why});
    if (on_run) on_run(red.runs.back());
  };

  // 1. The whole model, as `spire diff` runs it. Its reference also feeds every cut's boundary.
  const Capture reference = capture_reference(g, feeds);
  const Comparison whole = compare_on_device(g, feeds, device, options, reference);
  if (options.until == Until::FirstDivergence && !whole.failure.empty()) {
    record("the whole model", order.size(), "the device cannot run it: " + whole.failure);
    red.why = fmt::format(
        "the device cannot run the model ({}), so there is no first divergence to follow "
        "(--until exit reduces to the nodes it cannot run)",
        whole.failure);
    return red;
  }
  red.target = target_of(whole, options.until);
  red.why = failure_of(whole, options.until, red.target);
  record("the whole model", order.size(), red.why);
  if (red.why.empty()) {
    red.why = options.until == Until::Nan ? "no value is NaN or infinite on the device where the reference has a number"
                                          : "every value is within tolerance";
    return red;
  }
  red.fails = true;
  std::map<Value, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;

  // The smallest cut that failed so far (none yet: the whole model is not a cut).
  std::optional<std::vector<Value>> best;
  std::map<std::vector<Value>, bool> tried;
  auto fails = [&](std::vector<Value> nodes, const std::string& what) {
    std::sort(nodes.begin(), nodes.end());
    if (auto it = tried.find(nodes); it != tried.end()) return it->second;
    Cut cut = cut_graph(g, nodes, feeds, reference);
    Comparison c = try_on_device(cut.graph, cut.feeds, device, options);
    const std::string why = failure_of(c, options.until, red.target);
    record(what, nodes.size(), why);
    tried[nodes] = !why.empty();
    if (!why.empty() && (!best || nodes.size() < best->size())) {
      best = nodes;
      red.smallest = std::move(cut);
      red.comparison = std::move(c);
    }
    return !why.empty();
  };
  auto name = [&](size_t i) { return g.node(order[i]).name; };

  // 2. The target alone.
  std::optional<size_t> t;
  if (!red.target.empty()) t = position.at(g.at(red.target));
  if (!(t && fails({order[*t]}, red.target + " alone"))) {
    // 3. The last node e whose ancestors (itself included) still fail; order.size() stands for the whole model.
    size_t e = order.size();
    if (t && fails(ancestors_and_self(g, order[*t]), red.target + " and the values it is computed from")) {
      e = *t;
    } else {
      size_t lo = t ? *t : 0, hi = order.size();  // ancestors of lo pass (or lo is untried: 0), of hi fail
      if (!t && fails(ancestors_and_self(g, order[0]), name(0) + " and the values it is computed from")) hi = 0;
      while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        (fails(ancestors_and_self(g, order[mid]), name(mid) + " and the values it is computed from") ? hi : lo) = mid;
      }
      e = hi;
    }
    // 4. The shortest suffix (in topological order) of those values that still fails.
    const std::vector<Value> kept = e == order.size() ? order : ancestors_and_self(g, order[e]);
    auto suffix = [&](size_t k) { return std::vector<Value>(kept.begin() + std::ptrdiff_t(k), kept.end()); };
    size_t lo = 0, hi = kept.size();         // suffix(lo) fails; suffix(hi) passes (hi == size: empty)
    if (t && e == *t) hi = kept.size() - 1;  // the target alone passed
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      const std::string what = kept.size() - mid == 1 ? g.node(kept[mid]).name + " alone"
                                                      : fmt::format("{} values from {} to {}", kept.size() - mid,
                                                                    g.node(kept[mid]).name, g.node(kept.back()).name);
      (fails(suffix(mid), what) ? lo : hi) = mid;
    }
    if (!best) fails(suffix(lo), "every value");  // only the whole model failed: its cut is the result
  }
  if (!best) throw std::runtime_error("the search found no failing cut (" + red.why + ")");
  for (Value v : *best) red.nodes.push_back(g.node(v).name);
  return red;
}

}  // namespace spire::diff
