// compile(): a graph lowered to a plan (lower_within_budget), its kernels compiled into the device plan
// (to_device_plan), and that plan run by the runtime's one executor (runtime/plan_executor.h), which bundles run on
// too. What this file adds is the Executable interface: values by name, host tensors converted to device bytes, the
// compile options turned into the executor's streamed values, and the checks that name what a caller did wrong.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lowering/device_bytes.h"
#include "lowering/device_plan.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "runtime/plan_executor.h"

namespace spire::lowering {

namespace {

std::string graph_inputs(const Plan& p) {
  std::string s;
  for (const auto& [name, v] : p.leaves)
    if (v.kind == graph::OpKind::Input) s += (s.empty() ? "" : ", ") + name;
  return s.empty() ? "none" : s;
}

std::string graph_outputs(const Plan& p) {
  std::string s;
  for (const auto& [name, v] : p.outputs) s += (s.empty() ? "" : ", ") + name;
  return s.empty() ? "none" : s;
}

void refuse_repeats(const std::vector<std::string>& names, const char* option) {
  std::set<std::string> seen;
  for (const auto& n : names)
    if (!seen.insert(n).second) throw graph::GraphError(fmt::format("CompileOptions::{} names '{}' twice", option, n));
}

// Why `name` cannot be a streamed input, or "" when it can.
std::string not_streamable_input(const Plan& p, const std::string& name) {
  auto it = p.leaves.find(name);
  if (it != p.leaves.end()) {
    if (it->second.kind == graph::OpKind::Input) return "";
    const char* kind = it->second.kind == graph::OpKind::Parameter ? "a parameter" : "a state";
    return fmt::format("'{}' is {}, not an input: its host copy would overwrite the step's update of it at the start "
                       "of every step",
                       name, kind);
  }
  if (p.outputs.count(name)) return fmt::format("'{}' is an output of the graph (stream it with streamed_outputs)", name);
  return fmt::format("the graph has no input '{}'", name);
}

std::string not_streamable_output(const Plan& p, const std::string& name) {
  if (p.outputs.count(name)) return "";
  if (p.leaves.count(name))
    return fmt::format("'{}' is an input, parameter or state of the graph, not an output (stream an input with "
                       "streamed_inputs; make anything else an output to read it every step)",
                       name);
  return fmt::format("the graph has no output '{}'", name);
}

// CompileOptions' streamed names as the executor's buffer indices, each checked (graph::GraphError names the problem).
rt::ExecutorOptions executor_options(const Plan& plan, const CompileOptions& opt) {
  refuse_repeats(opt.streamed_inputs, "streamed_inputs");
  refuse_repeats(opt.streamed_outputs, "streamed_outputs");
  rt::ExecutorOptions o;
  o.steps_in_flight = opt.steps_in_flight;
  o.profile = opt.profile;
  if (opt.parameter_buffer) {
    // The executor names a buffer by its slot; the caller by the parameter's graph name.
    std::map<std::string, std::string> graph_name;
    for (const auto& [name, nv] : plan.leaves)
      if (nv.kind == graph::OpKind::Parameter && nv.buffer >= 0) graph_name[plan.buffers[size_t(nv.buffer)].slot.name] = name;
    o.parameter_buffer = [graph_name = std::move(graph_name), hook = opt.parameter_buffer](const rt::BufferSpec& b) {
      const auto it = graph_name.find(b.name);
      return it == graph_name.end() ? nullptr : hook(it->second, b.bytes());
    };
  }
  for (const auto& name : opt.streamed_inputs) {
    if (std::string why = not_streamable_input(plan, name); !why.empty())
      throw graph::GraphError(
          fmt::format("CompileOptions::streamed_inputs: {} (its inputs: {})", why, graph_inputs(plan)));
    o.streamed_inputs.push_back(uint32_t(plan.leaves.at(name).buffer));
  }
  for (const auto& name : opt.streamed_outputs) {
    if (std::string why = not_streamable_output(plan, name); !why.empty())
      throw graph::GraphError(
          fmt::format("CompileOptions::streamed_outputs: {} (its outputs: {})", why, graph_outputs(plan)));
    const uint32_t b = uint32_t(plan.outputs.at(name).buffer);
    // Two outputs may be one value (one buffer): it is read back once.
    if (std::find(o.streamed_outputs.begin(), o.streamed_outputs.end(), b) == o.streamed_outputs.end())
      o.streamed_outputs.push_back(b);
  }
  return o;
}

class CompiledStep final : public Executable {
 public:
  CompiledStep(const graph::Graph& g, rt::Device& dev, const CompileOptions& opt)
      : dev_(dev), slots_(opt.steps_in_flight) {
    if (slots_ < 1 || slots_ > rt::PlanExecutor::kMaxStepsInFlight)
      throw std::invalid_argument(fmt::format("CompileOptions::steps_in_flight is {}: it must be 1 to {}", slots_,
                                              rt::PlanExecutor::kMaxStepsInFlight));
    plan_ = lower_within_budget(g, dev.info(), opt.passes, opt.tuning, opt.parameters_once, opt.memory_budget,
                                opt.precision);
    if (opt.verbose) std::fputs(lowering::plan_text(plan_).c_str(), stdout);
    // Before the kernels compile, so a wrong name is refused at once.
    rt::ExecutorOptions eo = executor_options(plan_, opt);
    device_plan_ = to_device_plan(plan_, dev.info());
    exec_ = std::make_unique<rt::PlanExecutor>(dev, device_plan_, std::move(eo));
  }

  void set(const std::string& name, const graph::Tensor& t) override {
    const NamedValue& nv = leaf(name);
    settable(name, "set");
    if (t.dtype != nv.type.dtype || t.shape != nv.type.shape)
      throw graph::GraphError(fmt::format("set('{}'): the graph declares {}, the tensor is {}", name,
                                          nv.type.to_string(), t.type().to_string()));
    if (int64_t(t.data.size()) != t.numel())
      throw graph::GraphError(fmt::format("set('{}'): the tensor holds {} values for shape {}", name, t.data.size(),
                                          graph::shape_to_string(t.shape)));
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    auto bytes = to_device_bytes(t, b.slot.type, name);
    write(nv, bytes.data(), bytes.size());
  }

  // The host or device memory a caller gives for value `name` (through `call`) must hold exactly its device bytes.
  void check_bytes(const char* call, const std::string& name, const NamedValue& nv, size_t bytes) const {
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    if (bytes != b.bytes())
      throw graph::GraphError(fmt::format("{}('{}'): {} holds {} bytes ({} {} values), given {} bytes", call, name,
                                          nv.type.to_string(), b.bytes(), b.slot.elements, dtype_name(b.slot.type),
                                          bytes));
  }

  void set_raw(const std::string& name, const void* data, size_t bytes) override {
    const NamedValue& nv = leaf(name);
    settable(name, "set_raw");
    check_bytes("set_raw", name, nv, bytes);
    write(nv, data, bytes);
  }

  void start_step() override { exec_->start_step(); }
  void finish_step() override { exec_->finish_step(); }

  graph::Tensor get(const std::string& name) override {
    const NamedValue& nv = readable(name);
    gettable(name, "get");
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    std::vector<uint8_t> bytes(b.bytes());
    read(name, nv, bytes.data(), bytes.size(), "get");
    return from_device_bytes(bytes, b.slot.type, nv.type);
  }

  void get_raw(const std::string& name, void* out, size_t bytes) override {
    const NamedValue& nv = readable(name);
    gettable(name, "get_raw");
    check_bytes("get_raw", name, nv, bytes);
    read(name, nv, out, bytes, "get_raw");
  }

  void set_device(const std::string& name, uint64_t address, size_t bytes) override {
    // Allowed with steps in flight: the copy is enqueued on the device's in-order queue behind them.
    const NamedValue& nv = leaf(name);
    if (streamed_input(nv))
      throw graph::GraphError(fmt::format("set_device('{}'): a streamed input is fed from its host copy at the start of "
                                          "every step; compile without streaming it to set it from a device address",
                                          name));
    check_bytes("set_device", name, nv, bytes);
    if (nv.kind == graph::OpKind::Parameter) exec_->parameters_changed();
    if (bytes) dev_.copy_from_address(owned(name, nv, "set_device"), address, bytes);
  }

  void get_device(const std::string& name, uint64_t address, size_t bytes) override {
    // Allowed with steps in flight: the copy reads what the last submitted step wrote, queued behind it.
    const NamedValue& nv = readable(name);
    if ((plan_.outputs.count(name) && streamed_output(nv)) || (!plan_.outputs.count(name) && streamed_input(nv)))
      throw graph::GraphError(fmt::format("get_device('{}'): a streamed value is read from its host copy; compile "
                                          "without streaming it to read it into a device address",
                                          name));
    check_bytes("get_device", name, nv, bytes);
    if (bytes) dev_.copy_to_address(owned(name, nv, "get_device"), address, bytes);
  }

  uint64_t value_bytes(const std::string& name) const override {
    return plan_.buffers[size_t(readable(name).buffer)].bytes();
  }
  std::string plan_text() const override { return lowering::plan_text(plan_); }
  std::string precision_note() const override { return plan_.precision_note; }
  MemoryReport memory() const override { return memory_report(plan_, dev_.info().max_allocation_bytes); }
  double last_step_ms() const override { return exec_->last_step_ms(); }
  size_t barriers() const override { return exec_->barriers(); }

  std::vector<LaunchTime> last_launch_times() const override {
    std::vector<LaunchTime> out;
    for (const auto& [index, ms] : exec_->last_launch_times()) {
      const Launch& l = plan_.launches[index];
      out.push_back({l.node, plan_.kernels[size_t(l.kernel)].name, ms});
    }
    return out;
  }

 private:
  bool streamed_input(const NamedValue& nv) const { return exec_->is_streamed_input(uint32_t(nv.buffer)); }
  bool streamed_output(const NamedValue& nv) const { return exec_->is_streamed_output(uint32_t(nv.buffer)); }

  // A leaf's device bytes: into the host memory the next step reads for a streamed input, else an upload.
  void write(const NamedValue& nv, const void* data, size_t bytes) {
    if (nv.kind == graph::OpKind::Parameter) exec_->parameters_changed();
    if (streamed_input(nv)) {
      if (bytes) std::memcpy(exec_->input_memory(uint32_t(nv.buffer)), data, bytes);
    } else if (bytes) {
      dev_.upload(*exec_->owned(uint32_t(nv.buffer)), data, bytes);
    }
  }

  // A streamed input may be set while a slot is free for the next step (steps_in_flight > 1); anything else only
  // with no step in flight.
  void settable(const std::string& name, const char* what) const {
    if (exec_->in_flight() == 0) return;
    if (streamed_input(plan_.leaves.at(name)) && int(exec_->in_flight()) < slots_) return;
    refuse_in_flight(what);
  }

  // A streamed output may be read while no step in flight writes the copy the last finished step wrote
  // (steps_in_flight > 1); anything else only with no step in flight.
  void gettable(const std::string& name, const char* what) const {
    if (exec_->in_flight() == 0) return;
    auto it = plan_.outputs.find(name);
    if (it != plan_.outputs.end() && streamed_output(it->second) && exec_->output_readable()) return;
    refuse_in_flight(what);
  }

  // The persistent buffer of a leaf or output (every one has its own; an arena-placed one would be a plan bug).
  rt::Buffer& owned(const std::string& name, const NamedValue& nv, const char* what) const {
    rt::Buffer* b = exec_->owned(uint32_t(nv.buffer));
    if (!b) throw graph::GraphError(fmt::format("{}('{}'): the value has no buffer of its own", what, name));
    return *b;
  }

  [[noreturn]] void refuse_in_flight(const char* what) const {
    throw rt::Error(fmt::format("{}() while {} in flight on {}: call finish_step() first", what,
                                exec_->in_flight() == 1 ? std::string("a step is")
                                                        : fmt::format("{} steps are", exec_->in_flight()),
                                dev_.info().id));
  }

  std::string known_names(bool outputs_too) const {
    std::string s;
    for (const auto& [n, v] : plan_.leaves) s += (s.empty() ? "" : ", ") + n;
    if (outputs_too)
      for (const auto& [n, v] : plan_.outputs) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "(none)" : s;
  }

  const NamedValue& leaf(const std::string& name) const {
    auto it = plan_.leaves.find(name);
    if (it != plan_.leaves.end()) return it->second;
    if (plan_.outputs.count(name))
      throw graph::GraphError(fmt::format("set('{}'): that is an output of the graph, not an input, parameter or state",
                                          name));
    throw graph::GraphError(fmt::format("set('{}'): the graph has no input, parameter or state of that name (it has: {})",
                                        name, known_names(false)));
  }

  // The bytes of a value readable() found: a streamed output's or input's from its host copy, anything else by a
  // download.
  void read(const std::string& name, const NamedValue& nv, void* out, size_t bytes, const char* what) const {
    if (plan_.outputs.count(name)) {
      if (streamed_output(nv)) {
        const uint8_t* value = exec_->output_value(uint32_t(nv.buffer));
        if (!value)
          throw graph::GraphError(fmt::format("{}('{}'): '{}' is a streamed output (CompileOptions::streamed_outputs), "
                                              "read from the copy each step() makes; it has no value before the first "
                                              "step()",
                                              what, name, name));
        if (bytes) std::memcpy(out, value, bytes);
        return;
      }
    } else if (streamed_input(nv)) {
      if (bytes) std::memcpy(out, exec_->input_value(uint32_t(nv.buffer)), bytes);
      return;
    }
    if (bytes) dev_.download(*exec_->owned(uint32_t(nv.buffer)), out, bytes);
  }

  const NamedValue& readable(const std::string& name) const {
    auto it = plan_.outputs.find(name);
    if (it != plan_.outputs.end()) return it->second;
    auto jt = plan_.leaves.find(name);
    if (jt != plan_.leaves.end()) return jt->second;
    throw graph::GraphError(fmt::format("get('{}'): no output, input, parameter or state of that name (the graph has: "
                                        "{}); intermediate values are not kept, make them outputs",
                                        name, known_names(true)));
  }

  rt::Device& dev_;
  int slots_ = 1;
  Plan plan_;                               // names, types and the memory report
  rt::DevicePlan device_plan_;              // what the executor runs; before it, which refers to it
  std::unique_ptr<rt::PlanExecutor> exec_;
};

}  // namespace

std::unique_ptr<Executable> compile(const graph::Graph& g, rt::Device& device, const CompileOptions& opt) {
  return std::make_unique<CompiledStep>(g, device, opt);
}

}  // namespace spire::lowering
