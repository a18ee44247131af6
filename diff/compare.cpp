#include "diff/compare.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"

namespace spire::diff {

using graph::Graph;
using graph::Value;

namespace {

// Each node's line of the graph's text form, by node name: what the user reads in --dump and writes in graph files.
std::map<std::string, std::string> node_lines(const Graph& g) {
  std::map<std::string, std::string> lines;
  std::istringstream text(graph::print(g));
  for (std::string line; std::getline(text, line);) {
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos || line.rfind("output ", 0) == 0) continue;
    lines.emplace(line.substr(0, eq), line);
  }
  return lines;
}

// The run whose values check node v alone: its result and its inputs must come from the same run (a fused group's
// root read from the model's plan was computed from values that run never stored). The model's plan's values where
// v and its non-leaf inputs are all stored; else the unfused run's, when the capture has it (null: neither).
const std::map<std::string, graph::Tensor>* own_run(const Graph& g, Value v, const Capture& got) {
  auto source = [&](Value u) {
    const auto it = got.origins.find(g.node(u).name);
    return it == got.origins.end() ? Source::Stored : it->second.source;
  };
  bool same = true;
  for (Value in : g.node(v).inputs)
    if (!graph::is_leaf(g.node(in).op)) same = same && source(in) == source(v);
  if (same) return &got.values;
  return got.unfused_run.empty() ? nullptr : &got.unfused_run;
}

// Node v evaluated alone in float64 on the values `run` holds for its inputs (leaves from the feeds; a constant as
// the graph declares it).
graph::Tensor own_reference(const Graph& g, Value v, const std::map<std::string, graph::Tensor>& run,
                            const std::map<std::string, graph::Tensor>& feeds) {
  const graph::Node node = g.node(v);
  Graph one;
  std::map<std::string, graph::Tensor> inputs;
  std::vector<Value> args;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const graph::Node& in = g.node(node.inputs[i]);
    if (in.op == graph::OpKind::Constant) {
      args.push_back(one.add_leaf(graph::OpKind::Constant, in.name, in.type, in.attrs));
      continue;
    }
    const std::string name = fmt::format("spire_diff.in{}", i);
    args.push_back(one.input(name, in.type.dtype, in.type.shape));
    inputs[name] = graph::is_leaf(in.op) ? feeds.at(in.name) : run.at(in.name);
  }
  one.output("y", one.add_node(node.op, args, node.attrs));
  return graph::evaluate(one, inputs, graph::DType::F64).at("y");
}

}  // namespace

Comparison compare(const Graph& g, const Capture& got, const Capture& want, const CompareOptions& options) {
  Comparison c;
  c.device = got.device;
  c.against = want.device;
  c.device_name = got.device_name;
  c.driver = got.driver;
  c.notes = got.notes;
  const auto lines = node_lines(g);
  std::map<std::string, bool> off;       // by node name: not within tolerance
  std::map<std::string, double> bound;   // by node name: the bound it was held to (tolerance.h: inherited)
  for (Value v : compared_values(g)) {
    const graph::Node& n = g.node(v);
    ValueRow r;
    r.name = n.name;
    r.op = std::string(graph::op_info(n.op).name);
    if (auto it = lines.find(n.name); it != lines.end()) r.text = it->second;
    r.type = n.type;
    double inherited = 0;
    for (Value in : n.inputs) {
      const graph::Node& i = g.node(in);
      r.input_names.push_back(i.name);
      r.inputs.push_back(fmt::format("{}: {}", i.name, i.type.to_string()));
      if (off[i.name]) r.inputs_off.push_back(i.name);
      inherited = std::max(inherited, bound[i.name]);
    }
    if (auto it = got.origins.find(n.name); it != got.origins.end()) r.origin = it->second;
    const graph::Tensor& a = got.values.at(n.name);
    const graph::Tensor& b = want.values.at(n.name);
    if (a.type() != b.type())
      throw std::runtime_error(fmt::format("value '{}' is {} on {} but {} on {}", n.name, a.type().to_string(),
                                           got.device, b.type().to_string(), want.device));
    r.error = measure(a, b);
    const graph::DType judged_dtype =
        options.judged_as && n.type.dtype == graph::DType::F32 ? *options.judged_as : n.type.dtype;
    r.verdict = judge(r.error, n.op, judged_dtype, options.tolerance, inherited);
    bound[n.name] = r.verdict.bound;
    if (const auto* run = own_run(g, v, got); options.feeds && run) {
      r.own_error = measure(run->at(n.name), own_reference(g, v, *run, *options.feeds));
      r.own_verdict = judge(*r.own_error, n.op, judged_dtype, options.tolerance);
    }
    r.off = !r.verdict.within || (r.own_verdict && !r.own_verdict->within);
    off[n.name] = r.off;
    if (r.off) {
      if (!c.first) c.first = c.rows.size();
      ++c.off;
    }
    c.rows.push_back(std::move(r));
  }
  return c;
}

std::string status_text(const ValueRow& r) {
  if (!r.off) return "ok";
  const bool own_off = r.own_verdict && !r.own_verdict->within;
  // Inputs within tolerance but the node alone right: errors below tolerance that added up past it here.
  if (r.inputs_off.empty()) return own_off || !r.own_verdict ? "OFF here" : "OFF here (accumulated: node alone within)";
  return own_off ? "off: inputs already off, and this node adds error" : "off: inputs already off";
}

}  // namespace spire::diff
