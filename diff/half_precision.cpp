#include "diff/half_precision.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace spire::diff {

using graph::DType;
using graph::Graph;
using graph::Value;

std::map<std::string, graph::Tensor> widened(std::map<std::string, graph::Tensor> half_values, const Graph& g) {
  for (auto& [name, t] : half_values)
    if (const auto v = g.find(name)) t.dtype = g.type(*v).dtype;
  return half_values;
}

Capture widened(const Capture& half_capture, const Graph& g) {
  Capture c = half_capture;
  c.values = widened(std::move(c.values), g);
  c.unfused_run = widened(std::move(c.unfused_run), g);
  return c;
}

bool outputs_within(const Graph& g, DType half, const std::set<std::string>& keep,
                    const std::map<std::string, graph::Tensor>& half_feeds, rt::Device& device,
                    const lowering::CompileOptions& options, const Capture& reference, const Comparison& half_run) {
  const Graph mixed = to_half(g, half, {.keep_f32 = keep});
  auto exe = lowering::compile(mixed, device, options);
  for (const graph::Node& n : mixed.nodes())
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter) exe->set(n.name, half_feeds.at(n.name));
  exe->step();
  for (const auto& o : g.outputs()) {
    const std::string& name = g.node(o.value).name;
    const auto row = std::find_if(half_run.rows.begin(), half_run.rows.end(), [&](const ValueRow& r) { return r.name == name; });
    if (row == half_run.rows.end()) continue;  // an output that is a leaf: nothing computes it
    graph::Tensor got = exe->get(o.name);
    got.dtype = g.type(o.value).dtype;  // exact: a half number is an f32
    if (!(measure(got, reference.values.at(name)).norm_error <= row->verdict.bound)) return false;
  }
  return true;
}

KeepProposal propose_f32_set(const std::vector<std::string>& ranked,
                             const std::function<bool(const std::set<std::string>&)>& outputs_within) {
  KeepProposal p;
  auto within = [&](size_t k) {
    ++p.runs;
    return outputs_within(std::set<std::string>(ranked.begin(), ranked.begin() + ptrdiff_t(k)));
  };
  if (ranked.empty() || !within(ranked.size())) return p;
  size_t fails = 0, passes = ranked.size();  // keeping none fails: the caller asks only when the outputs are off
  while (passes - fails > 1) {
    const size_t mid = fails + (passes - fails) / 2;
    (within(mid) ? passes : fails) = mid;
  }
  p.found = true;
  p.keep.assign(ranked.begin(), ranked.begin() + ptrdiff_t(passes));
  return p;
}

std::vector<PrecisionRow> error_growth(const Comparison& c, size_t count) {
  std::map<std::string, double> error;
  std::vector<PrecisionRow> rows;
  for (const ValueRow& r : c.rows) {
    PrecisionRow p{r.name, r.op, r.error.norm_error, 0, r.own_error ? r.own_error->norm_error : 0};
    double inherited = 0;
    for (const std::string& in : r.input_names) {
      const auto it = error.find(in);
      if (it != error.end()) inherited = std::max(inherited, it->second);
    }
    p.growth = p.error - inherited;
    error[r.name] = p.error;
    rows.push_back(std::move(p));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const PrecisionRow& a, const PrecisionRow& b) {
    // NaN sorts last; an infinite error (a NaN or overflow in half) first.
    return a.growth > b.growth || (std::isnan(b.growth) && !std::isnan(a.growth));
  });
  if (rows.size() > count) rows.resize(count);
  return rows;
}

std::string error_growth_text(const Comparison& c, const std::vector<PrecisionRow>& rows, DType half) {
  std::string s = fmt::format("\n{} in {}: the values whose error grows most (error: against the float64 reference of "
                              "the model as given; growth: minus its inputs' largest; alone: the node's own on its "
                              "inputs here)\n",
                              c.device, graph::dtype_name(half));
  s += fmt::format("  {:<36} {:<14} {:>10} {:>10} {:>10}\n", "value", "op", "error", "growth", "alone");
  for (const PrecisionRow& r : rows)
    s += fmt::format("  {:<36} {:<14} {:>10.3g} {:>10.3g} {:>10.3g}\n", r.name, r.op, r.error, r.growth, r.own);
  return s;
}

}  // namespace spire::diff
