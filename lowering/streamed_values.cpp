#include "lowering/streamed_values.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "lowering/poison.h"

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

}  // namespace

StreamedValues::StreamedValues(rt::Device& dev, const Plan& plan, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs, int slots) {
  refuse_repeats(inputs, "streamed_inputs");
  refuse_repeats(outputs, "streamed_outputs");
  for (const auto& name : inputs)
    if (std::string why = not_streamable_input(plan, name); !why.empty())
      throw graph::GraphError(
          fmt::format("CompileOptions::streamed_inputs: {} (its inputs: {})", why, graph_inputs(plan)));
  for (const auto& name : outputs)
    if (std::string why = not_streamable_output(plan, name); !why.empty())
      throw graph::GraphError(
          fmt::format("CompileOptions::streamed_outputs: {} (its outputs: {})", why, graph_outputs(plan)));
  for (const auto& name : inputs) {
    const NamedValue& v = plan.leaves.at(name);
    const uint64_t bytes = plan.buffers[size_t(v.buffer)].bytes();
    HostCopies c = allocate(dev, v, bytes, name, slots, rt::Memory::DeviceMapped);
    c.in_place = bytes > 0;
    for (const auto& b : c.host) c.in_place = c.in_place && b->mapped() != nullptr;
    if (c.in_place)
      c.last.assign(static_cast<const uint8_t*>(c.data(0)), static_cast<const uint8_t*>(c.data(0)) + bytes);
    else
      c = allocate(dev, v, bytes, name, slots, rt::Memory::HostVisible);
    inputs_.emplace(name, std::move(c));
  }
  for (const auto& name : outputs) {
    const NamedValue& v = plan.outputs.at(name);
    outputs_.emplace(name, allocate(dev, v, plan.buffers[size_t(v.buffer)].bytes(), name, slots, rt::Memory::HostVisible));
  }
}

StreamedValues::HostCopies StreamedValues::allocate(rt::Device& dev, const NamedValue& v, uint64_t bytes,
                                                    const std::string& name, int slots, rt::Memory memory) const {
  HostCopies c;
  c.buffer = v.buffer;
  c.bytes = bytes;
  for (int slot = 0; slot < slots; ++slot) {
    // In place, the kernels bind the buffer as they would the plan's: whole words, as the executable allocates them.
    c.host.push_back(dev.alloc(memory == rt::Memory::DeviceMapped ? (std::max<uint64_t>(bytes, 4) + 3) & ~uint64_t(3)
                                                                  : bytes,
                               memory));
    if (bytes == 0) continue;
    if (memory == rt::Memory::DeviceMapped) {
      if (!c.data(slot)) return c;  // not mapped here: the caller takes host-visible buffers instead
    } else if (!c.data(slot))
      throw rt::Error(fmt::format("streaming '{}': {} gave a host-visible buffer the host cannot address (mapped() is "
                                  "null)",
                                  name, dev.info().id));
    poison_host_bytes(c.data(slot), bytes);
  }
  return c;
}

std::vector<rt::BufferView> StreamedValues::bindings(const std::vector<rt::BufferView>& device, int slot) const {
  std::vector<rt::BufferView> b = device;
  for (const auto& [name, c] : inputs_)
    if (c.in_place) b[size_t(c.buffer)] = rt::BufferView(c.host[size_t(slot)]);
  return b;
}

void StreamedValues::record_feeds(rt::CommandStream& s, const std::vector<rt::BufferView>& device, int slot) const {
  bool copied = false;
  for (const auto& [name, c] : inputs_) {
    if (c.bytes == 0 || c.in_place) continue;
    const rt::BufferView& d = device[size_t(c.buffer)];
    s.copy(rt::BufferView(c.host[size_t(slot)], 0, c.bytes), rt::BufferView(*d.buffer, d.offset, c.bytes));
    copied = true;
  }
  if (copied) s.barrier();
}

void StreamedValues::record_readbacks(rt::CommandStream& s, const std::vector<rt::BufferView>& device,
                                      int slot) const {
  for (const auto& [name, c] : outputs_) {
    if (c.bytes == 0) continue;
    const rt::BufferView& d = device[size_t(c.buffer)];
    s.copy(rt::BufferView(*d.buffer, d.offset, c.bytes), rt::BufferView(c.host[size_t(slot)], 0, c.bytes));
  }
}

void StreamedValues::before_step(int slot) {
  for (auto& [name, c] : inputs_) {
    if (c.latest == slot) continue;
    if (c.bytes) std::memcpy(c.data(slot), c.latest_value(), c.bytes);
    c.latest = slot;
  }
  for (auto& [name, c] : outputs_)
    if (c.bytes) poison_host_bytes(c.data(slot), c.bytes);
}

void StreamedValues::write_input(const std::string& name, const void* data, size_t bytes, int slot) {
  HostCopies& c = inputs_.at(name);
  if (bytes) std::memcpy(c.data(slot), data, bytes);
  if (c.in_place) std::memcpy(c.last.data(), data, bytes);
  c.latest = slot;
}

void StreamedValues::read_input(const std::string& name, void* out, size_t bytes) const {
  const HostCopies& c = inputs_.at(name);
  if (bytes) std::memcpy(out, c.latest_value(), bytes);
}

void StreamedValues::read_output(const std::string& name, void* out, size_t bytes, const char* what, int slot) const {
  if (slot < 0)
    throw graph::GraphError(fmt::format("{}('{}'): '{}' is a streamed output (CompileOptions::streamed_outputs), read "
                                        "from the copy each step() makes; it has no value before the first step()",
                                        what, name, name));
  const HostCopies& c = outputs_.at(name);
  if (bytes) std::memcpy(out, c.data(slot), bytes);
}

}  // namespace spire::lowering
