#include "diff/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "diff/half_precision.h"

namespace spire::diff {

std::string index_text(int64_t flat, const graph::Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(index, ","));
}

namespace {

// How many values --precision lists per device.
constexpr size_t kGrowthListed = 10;

std::string num(double x) { return std::isfinite(x) ? fmt::format("{:.2e}", x) : fmt::format("{}", x); }

// The value and op columns are as wide as their longest entry (imported models have long names), within limits.
struct Widths {
  size_t value = 5, op = 2;
  explicit Widths(const Comparison& c) {
    for (const ValueRow& r : c.rows) value = std::max(value, r.name.size()), op = std::max(op, r.op.size());
    value = std::min<size_t>(value, 60);
    op = std::min<size_t>(op, 24);
  }
};

std::string table_header(const Widths& w) {
  return fmt::format("  {:>4}  {:<{}} {:<{}} {:<8} {:>9} {:>9} {:>9} {:>9} {:>5} {:>5} {:>9} {:>9}  {}\n", "#", "value",
                     w.value, "op", w.op, "source", "max abs", "max rel", "mean abs", "ulp", "nan", "inf", "error",
                     "tolerance", "status");
}

std::string table_row(size_t i, const ValueRow& r, const Widths& w) {
  return fmt::format("  {:>4}  {:<{}} {:<{}} {:<8} {:>9} {:>9} {:>9} {:>9.3g} {:>5} {:>5} {:>9} {:>9}  {}\n", i, r.name,
                     w.value, r.op, w.op, source_name(r.origin.source), num(r.error.max_abs), num(r.error.max_rel),
                     num(r.error.mean_abs), r.error.ulp_at_worst, r.error.nan, r.error.inf, num(r.verdict.measured),
                     num(r.verdict.bound), status_text(r));
}

std::string first_divergence_text(const Comparison& c) {
  const ValueRow& r = c.rows[*c.first];
  std::string s = fmt::format("  first divergence: {} (value {} of {} in topological order)\n", r.name, *c.first,
                              c.rows.size());
  s += fmt::format("    node:    {}\n", r.text);
  s += fmt::format("    op:      {}\n", r.op);
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const bool off = std::find(r.inputs_off.begin(), r.inputs_off.end(), r.input_names[i]) != r.inputs_off.end();
    s += fmt::format("    input:   {}{}\n", r.inputs[i], off ? "  (already off)" : "");
  }
  if (!r.origin.launch.empty()) {
    s += fmt::format("    kernel:  {} (the launch of '{}'){}\n", r.origin.kernel, r.origin.launch,
                     r.origin.tuning.empty() ? "" : "; tuning " + r.origin.tuning);
    // The values that launch computes: its fused group.
    std::vector<std::string> group;
    for (const ValueRow& other : c.rows)
      if (other.origin.launch == r.origin.launch) group.push_back(other.name);
    if (group.size() > 1) s += fmt::format("    group:   {}\n", fmt::join(group, ", "));
  }
  if (r.origin.source == Source::Unfused)
    s += fmt::format("    source:  kept in registers by the model's plan: compared from a run with it unfused (kernel {} "
                     "there)\n",
                     r.origin.unfused_kernel.empty() ? "-" : r.origin.unfused_kernel);
  else
    s += "    source:  stored by the model's plan\n";
  s += fmt::format("    error:   {} {} {} (max abs {} at {}, {:.3g} ulp; max rel {}; mean abs {}; {} NaN, {} Inf)\n",
                   num(r.verdict.measured), r.verdict.within ? "<=" : ">", num(r.verdict.bound), num(r.error.max_abs),
                   r.error.worst_index >= 0 ? index_text(r.error.worst_index, r.type.shape) : "-", r.error.ulp_at_worst,
                   num(r.error.max_rel), num(r.error.mean_abs), r.error.nan, r.error.inf);
  s += fmt::format("    inputs:  {}\n", r.inputs_off.empty() ? "none was off: the error starts here"
                                                              : fmt::format("already off: {}", fmt::join(r.inputs_off, ", ")));
  if (r.own_verdict)
    s += fmt::format("    alone:   the node's float64 reference on this device's own inputs: error {} ({} tolerance)\n",
                     num(r.own_verdict->measured), r.own_verdict->within ? "within" : "NOT within");
  return s;
}

nlohmann::ordered_json number(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json row_json(const ValueRow& r) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["op"] = r.op;
  j["text"] = r.text;
  j["type"] = r.type.to_string();
  j["inputs"] = r.inputs;
  j["source"] = std::string(source_name(r.origin.source));
  j["launch"] = r.origin.launch;
  j["kernel"] = r.origin.kernel;
  j["tuning"] = r.origin.tuning;
  j["unfused_kernel"] = r.origin.unfused_kernel;
  j["max_abs"] = number(r.error.max_abs);
  j["max_rel"] = number(r.error.max_rel);
  j["mean_abs"] = number(r.error.mean_abs);
  j["ulp_at_worst"] = number(r.error.ulp_at_worst);
  j["worst_index"] = r.error.worst_index >= 0 ? nlohmann::ordered_json(index_text(r.error.worst_index, r.type.shape))
                                               : nlohmann::ordered_json(nullptr);
  j["nan"] = r.error.nan;
  j["inf"] = r.error.inf;
  j["error"] = number(r.verdict.measured);
  j["tolerance"] = number(r.verdict.bound);
  j["within"] = r.verdict.within;
  j["off"] = r.off;
  j["own_error"] = r.own_verdict ? number(r.own_verdict->measured) : nlohmann::ordered_json(nullptr);
  j["own_within"] = r.own_verdict ? nlohmann::ordered_json(r.own_verdict->within) : nlohmann::ordered_json(nullptr);
  j["inputs_off"] = r.inputs_off;
  j["status"] = status_text(r);
  return j;
}

}  // namespace

std::string report_text(const std::vector<Comparison>& comparisons, const ReportOptions& options) {
  std::string s = fmt::format("tolerance: {}\n", options.rule);
  // First divergences first: the comparisons that disagree, then those that agree.
  std::vector<const Comparison*> order;
  for (const auto& c : comparisons)
    if (!c.agrees()) order.push_back(&c);
  for (const auto& c : comparisons)
    if (c.agrees()) order.push_back(&c);
  for (const Comparison* c : order) {
    s += fmt::format("\n{} ({}{}) against {}: ", c->device, c->device_name, c->driver.empty() ? "" : ", " + c->driver,
                     c->against);
    if (!c->failure.empty()) {
      s += fmt::format("could not run the model: {}\n", c->failure);
      continue;
    }
    if (c->agrees()) {
      s += fmt::format("all {} values within tolerance\n", c->rows.size());
    } else {
      s += fmt::format("{} of {} values off\n", c->off, c->rows.size());
      s += first_divergence_text(*c);
    }
    for (const std::string& n : c->notes) s += fmt::format("  note: {}\n", n);
    if (!options.every_value && c->agrees()) continue;
    const Widths widths(*c);
    s += table_header(widths);
    size_t hidden = 0;
    for (size_t i = 0; i < c->rows.size(); ++i) {
      if (options.every_value || c->rows[i].off)
        s += table_row(i, c->rows[i], widths);
      else
        ++hidden;
    }
    if (hidden > 0) s += fmt::format("  ({} values within tolerance not listed: --every-value lists them)\n", hidden);
  }
  if (options.precision)
    for (const auto& c : comparisons)
      if (c.failure.empty()) s += error_growth_text(c, error_growth(c, kGrowthListed), *options.precision);
  return s;
}

std::string report_json(const std::vector<Comparison>& comparisons, const ReportOptions& options,
                        const std::string& model, const std::string& inputs) {
  nlohmann::ordered_json j;
  j["model"] = model;
  j["inputs"] = inputs;
  j["tolerance"] = options.rule;
  j["precision"] = options.precision ? nlohmann::ordered_json(std::string(graph::dtype_name(*options.precision)))
                                     : nlohmann::ordered_json(nullptr);
  bool agree = true;
  for (const auto& c : comparisons) agree = agree && c.agrees();
  j["agree"] = agree;
  auto& list = j["comparisons"] = nlohmann::ordered_json::array();
  for (const auto& c : comparisons) {
    nlohmann::ordered_json cj;
    cj["device"] = c.device;
    cj["against"] = c.against;
    cj["device_name"] = c.device_name;
    cj["driver"] = c.driver;
    cj["agrees"] = c.agrees();
    cj["failure"] = c.failure.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.failure);
    cj["values"] = c.rows.size();
    cj["values_off"] = c.off;
    cj["first_divergence"] = c.first ? row_json(c.rows[*c.first]) : nlohmann::ordered_json(nullptr);
    cj["notes"] = c.notes;
    if (options.precision && c.failure.empty()) {
      auto& growth = cj["error_growth"] = nlohmann::ordered_json::array();
      for (const PrecisionRow& p : error_growth(c, kGrowthListed))
        growth.push_back({{"name", p.name}, {"op", p.op}, {"error", number(p.error)}, {"growth", number(p.growth)},
                          {"alone", number(p.own)}});
    }
    auto& rows = cj["rows"] = nlohmann::ordered_json::array();
    for (const auto& r : c.rows) rows.push_back(row_json(r));
    list.push_back(std::move(cj));
  }
  return j.dump(2) + "\n";
}

}  // namespace spire::diff
