#include "diff/capture.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "lowering/custom_kernels.h"
#include "lowering/plan.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "passes/canonical.h"

namespace spire::diff {

using graph::Graph;
using graph::Value;

std::string_view source_name(Source s) {
  switch (s) {
    case Source::Stored: return "stored";
    case Source::Unfused: return "unfused";
  }
  return "?";
}

std::vector<Value> compared_values(const Graph& g) {
  std::vector<Value> out;
  for (Value v : g.values())
    if (!graph::is_leaf(g.node(v).op)) out.push_back(v);
  return out;
}

namespace {

// The output under which a value is kept (output names allow letters, digits, _ and .): a prefix no model uses.
std::string kept_name(const std::string& node) { return "spire_diff." + node; }

Graph with_outputs(const Graph& g, const std::vector<Value>& values) {
  Graph copy = g;
  for (Value v : values) copy.output(kept_name(g.node(v).name), v);
  return copy;
}

// Compiles `g` for the device, feeds its leaves, runs one step and reads the kept `values` back by node name.
void run_and_read(const Graph& g, const std::vector<Value>& values, const std::map<std::string, graph::Tensor>& feeds,
                  rt::Device& device, const lowering::CompileOptions& options, std::map<std::string, graph::Tensor>& out) {
  auto exe = lowering::compile(g, device, options);
  for (const graph::Node& n : g.nodes())
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter) exe->set(n.name, feeds.at(n.name));
  exe->step();
  for (Value v : values) {
    const std::string& name = g.node(v).name;
    out[name] = exe->get(kept_name(name));
  }
}

// Reads the kept `values` of `g` (every one made an output) into `out`: in one run where the device holds them all at
// once; where it runs out of memory (rt::OutOfMemory), in runs over consecutive segments of them, halving the segments
// until every run fits. A segment's run also keeps the inputs of its nodes that are among `values`, so each value is
// read from the same run as the inputs it was computed from. Returns the number of runs, and the first run's error in
// `out_of_memory` when it took more than one. A single value that does not fit rethrows the device's error.
size_t read_in_segments(const Graph& g, const std::vector<Value>& values, const std::map<std::string, graph::Tensor>& feeds,
                        rt::Device& device, const lowering::CompileOptions& options,
                        std::map<std::string, graph::Tensor>& out, std::string& out_of_memory) {
  std::set<int32_t> listed;
  for (Value v : values) listed.insert(v.id);
  for (size_t segments = 1;; segments *= 2) {
    const size_t per = (values.size() + segments - 1) / segments;
    try {
      std::map<std::string, graph::Tensor> read;
      for (size_t begin = 0; begin < values.size(); begin += per) {
        const std::vector<Value> window(values.begin() + long(begin), values.begin() + long(std::min(values.size(), begin + per)));
        std::vector<Value> kept = window;
        std::set<int32_t> in_window;
        for (Value v : window) in_window.insert(v.id);
        for (Value v : window)
          for (Value in : g.node(v).inputs)
            if (listed.count(in.id) && in_window.insert(in.id).second) kept.push_back(in);
        std::map<std::string, graph::Tensor> part;
        run_and_read(with_outputs(g, kept), kept, feeds, device, options, part);
        for (Value v : window) read[g.node(v).name] = std::move(part.at(g.node(v).name));
      }
      for (auto& [name, t] : read) out[name] = std::move(t);
      return (values.size() + per - 1) / per;
    } catch (const rt::OutOfMemory& e) {
      if (per <= 1) throw;
      if (segments == 1) out_of_memory = e.what();
    }
  }
}

// What the report says of a read that took more than one run.
std::string segments_note(size_t runs, size_t values, const std::string& device, const std::string& out_of_memory) {
  return fmt::format("keeping all {} values at once ran out of memory on {} ({}): they were read in {} runs of the "
                     "graph, each keeping a segment of them and its nodes' inputs",
                     values, device, out_of_memory, runs);
}

// The buffer a plan stores a value in, or -1 (a value fused into another launch, or not computed). A value fused
// into its group may still have a buffer that no launch touches (an epilogue's heavy result): that is no store.
int32_t buffer_of(const lowering::Plan& plan, const std::string& name) {
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (plan.buffers[b].first_use < 0) continue;
    const auto& vs = plan.buffers[b].values;
    if (std::find(vs.begin(), vs.end(), name) != vs.end()) return int32_t(b);
  }
  return -1;
}

// The kernel names of a plan's launches, in order: two plans with the same list run the same kernels.
std::vector<std::string> launch_kernels(const lowering::Plan& plan) {
  std::vector<std::string> names;
  for (const auto& l : plan.launches) names.push_back(plan.kernels[size_t(l.kernel)].name);
  return names;
}

// Where the model's plan computes each value (ValueOrigin), from the plan and from the graph lowering saw.
class OriginFinder {
 public:
  OriginFinder(const Graph& g, const lowering::Plan& plan, const rt::DeviceInfo& info,
               const lowering::CompileOptions& options)
      : g_(g), plan_(plan), info_(info), options_(options), users_(g.users()) {
    try {
      prepared_ = passes::prepare_for_fusion(g, options.passes);
    } catch (const std::exception&) {
      // Lowering itself ran the same passes without error; without the prepared graph only the configs are missing.
    }
  }

  ValueOrigin find(Value v) const {
    ValueOrigin o;
    const std::string& name = g_.node(v).name;
    int32_t b = buffer_of(plan_, name);
    o.source = b >= 0 ? Source::Stored : Source::Unfused;
    // A fused value: its group's stored root is down its chain of users (a pointwise tree's single user, a heavy
    // op's epilogue root); that root's buffer is written by the group's launch.
    Value at = v;
    for (int steps = 0; b < 0 && steps < 64 && !users_[size_t(at.id)].empty(); ++steps) {
      at = users_[size_t(at.id)].front();
      b = buffer_of(plan_, g_.node(at).name);
    }
    if (b < 0) return o;
    const auto& values = plan_.buffers[size_t(b)].values;
    if (at == v && !values.empty() && values.front() != name) {
      // A reshape or flatten that shares its input's buffer: no launch of its own.
      o.launch = values.front();
      o.kernel = fmt::format("none (shares {}'s buffer)", values.front());
      return o;
    }
    for (const auto& l : plan_.launches) {
      if (std::find(l.buffers.begin(), l.buffers.end(), b) == l.buffers.end()) continue;
      o.launch = l.node;
      o.kernel = plan_.kernels[size_t(l.kernel)].name;
      o.tuning = tuning_of(l.node);
      break;  // the first launch that touches the buffer is its writer: a value is written before it is read
    }
    return o;
  }

 private:
  // The tunable template's key and chosen config of the node a launch computes, as lowering chose it.
  std::string tuning_of(const std::string& node) const {
    const auto v = prepared_.find(node);
    if (!v) return {};
    try {
      // A custom op's configs are its own (lowering/custom_kernels.h), not a built-in template's.
      const auto op = graph::is_user_op(prepared_.node(*v).op)
                          ? lowering::tunable_custom(prepared_, *v, info_)
                          : lowering::tunable_op(prepared_, *v, lowering::limits_of(info_));
      if (!op) return {};
      return op->key.text() + ": " + lowering::choose_config(options_.tuning, *op).text();
    } catch (const std::exception&) {
      return {};
    }
  }

  const Graph& g_;
  const lowering::Plan& plan_;
  const rt::DeviceInfo& info_;
  const lowering::CompileOptions& options_;
  std::vector<std::vector<Value>> users_;
  Graph prepared_;
};

}  // namespace

Capture capture_reference(const Graph& g, const std::map<std::string, graph::Tensor>& feeds) {
  Capture c;
  c.device = "reference";
  c.device_name = "float64 reference evaluator";
  const std::vector<Value> values = compared_values(g);
  auto results = graph::evaluate(with_outputs(g, values), feeds, graph::DType::F64);
  for (Value v : values) {
    const std::string& name = g.node(v).name;
    c.values[name] = std::move(results.at(kept_name(name)));
  }
  return c;
}

Capture capture_device(const Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                       const lowering::CompileOptions& options) {
  Capture c;
  const rt::DeviceInfo& info = device.info();
  c.device = info.id;
  c.device_name = info.name;
  c.driver = info.driver;
  const lowering::Plan model_plan = lowering::lower(g, info, options.passes, options.tuning, options.parameters_once);
  const OriginFinder origins(g, model_plan, info, options);

  std::vector<Value> stored, unfused;
  for (Value v : compared_values(g)) {
    ValueOrigin o = origins.find(v);
    (o.source == Source::Stored ? stored : unfused).push_back(v);
    c.origins[g.node(v).name] = std::move(o);
  }
  if (!stored.empty()) {
    const Graph kept = with_outputs(g, stored);
    const lowering::Plan kept_plan = lowering::lower(kept, info, options.passes, options.tuning, options.parameters_once);
    if (launch_kernels(kept_plan) != launch_kernels(model_plan))
      c.notes.push_back(fmt::format(
          "keeping the {} stored values changed the plan ({} launches, the model's {}): a stored value's error may "
          "differ from the model's run",
          stored.size(), kept_plan.launches.size(), model_plan.launches.size()));
    std::string out_of_memory;
    const size_t runs = read_in_segments(g, stored, feeds, device, options, c.values, out_of_memory);
    if (runs > 1) c.notes.push_back(segments_note(runs, stored.size(), info.id, out_of_memory));
  }
  if (!unfused.empty()) {
    const std::vector<Value> all = compared_values(g);
    const Graph kept = with_outputs(g, all);
    const lowering::Plan kept_plan = lowering::lower(kept, info, options.passes, options.tuning, options.parameters_once);
    const OriginFinder kept_origins(kept, kept_plan, info, options);
    for (Value v : unfused) c.origins[g.node(v).name].unfused_kernel = kept_origins.find(v).kernel;
    std::string out_of_memory;
    const size_t runs = read_in_segments(g, all, feeds, device, options, c.unfused_run, out_of_memory);
    if (runs > 1) c.notes.push_back(segments_note(runs, all.size(), info.id, out_of_memory));
    for (Value v : unfused) c.values[g.node(v).name] = c.unfused_run.at(g.node(v).name);
    c.notes.push_back(fmt::format(
        "{} of {} values are kept in registers by fusion (or not computed) in the model's plan: they were compared "
        "from a second run with every value made a plan output, which unfuses them (source 'unfused')",
        unfused.size(), stored.size() + unfused.size()));
  }
  return c;
}

}  // namespace spire::diff
