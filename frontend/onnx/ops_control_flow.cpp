// ONNX's control flow, If, Loop and Scan, imported by inlining their bodies (graph attributes) into the one graph:
// spire's IR has no subgraphs, so what runs is straight-line code (docs/CONTROL_FLOW.md says why, and the design for
// the rest).
//   If    both branches inlined and each output selected by the condition (where); where the condition is known at
//         import, only its branch. Outputs whose branches differ in type need the condition known at import.
//   Loop  unrolled: the trip count and the first condition known at import, and the body's condition out known at
//         import in every iteration (a loop that stops on a device value is refused). Scan outputs are stacked.
//   Scan  unrolled over the scan inputs' length, known from their shapes, in either direction; scan outputs stacked
//         along their axes. Opset 8's form (a batch axis first, sequence_lens) scans each batch element on its own.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {

namespace {

const onnx::GraphProto& body_of(NodeContext& c, const std::string& name) {
  const onnx::AttributeProto* a = c.attr(name);
  if (!a || !a->has_g()) c.refuse(fmt::format("attribute '{}' (a graph) is missing", name));
  return a->g();
}

Entry constant_entry(graph::Tensor t) {
  Entry e;
  e.type = t.type();
  e.constant = std::move(t);
  return e;
}

Entry value_entry(graph::Graph& g, Value v) {
  Entry e;
  e.type = g.type(v);
  e.value = v;
  return e;
}

graph::Tensor scalar(DType dtype, double v) {
  graph::Tensor t(dtype, {});
  t[0] = v;
  return t;
}

// An entry's value in the graph: a constant becomes a leaf (as an op's input would).
Value value_of(NodeContext& c, const Entry& e, const std::string& what) {
  if (e.value.valid()) return e.value;
  if (!e.constant) c.refuse(fmt::format("{} has no value", what));
  return c.constant_value(*e.constant, "v_" + c.node().name() + "_" + what);
}

// A boolean entry's value where it is known at import.
std::optional<bool> known_bool(const Entry& e) {
  if (!e.constant || e.constant->numel() != 1) return std::nullopt;
  return (*e.constant)[0] != 0;
}

// The pieces (each one step's value) stacked along a new `axis`, in order.
Value stack(graph::Graph& g, const std::vector<Value>& pieces, int64_t axis) {
  std::vector<Value> lifted;
  for (Value p : pieces) {
    Shape s = g.type(p).shape;
    s.insert(s.begin() + axis, 1);
    lifted.push_back(g.reshape(p, s));
  }
  return lifted.size() == 1 ? lifted[0] : g.op("concat", lifted, {{"axis", axis}});
}

void import_if(NodeContext& c) {
  const Entry cond = c.entry(0);
  if (cond.type.numel() != 1) c.refuse("the condition must hold one element");
  const onnx::GraphProto& then_body = body_of(c, "then_branch");
  const onnx::GraphProto& else_body = body_of(c, "else_branch");
  if (const std::optional<bool> known = known_bool(cond)) {
    const std::vector<Entry> out = c.inline_subgraph(*known ? then_body : else_body, {});
    if (int(out.size()) < c.num_outputs()) c.refuse("the branch has fewer outputs than the node");
    for (int i = 0; i < c.num_outputs(); ++i)
      if (c.output_used(i)) out[size_t(i)].constant ? c.set_output(i, *out[size_t(i)].constant)
                                                    : c.set_output(i, out[size_t(i)].value);
    return;
  }
  const std::vector<Entry> then_out = c.inline_subgraph(then_body, {});
  const std::vector<Entry> else_out = c.inline_subgraph(else_body, {});
  if (int(then_out.size()) < c.num_outputs() || int(else_out.size()) < c.num_outputs())
    c.refuse("a branch has fewer outputs than the node");
  graph::Graph& g = c.g();
  const Value flag = g.reshape(c.value(0), {});
  for (int i = 0; i < c.num_outputs(); ++i) {
    if (!c.output_used(i)) continue;
    const Entry& a = then_out[size_t(i)];
    const Entry& b = else_out[size_t(i)];
    if (a.type != b.type)
      c.refuse(fmt::format("output {} is {} in one branch and {} in the other, and the condition is computed on the "
                           "device: not supported (docs/CONTROL_FLOW.md)", i, a.type.to_string(), b.type.to_string()));
    const Value va = value_of(c, a, fmt::format("then{}", i)), vb = value_of(c, b, fmt::format("else{}", i));
    c.set_output(i, g.where(g.broadcast_to(flag, a.type.shape), va, vb));
  }
}

void import_loop(NodeContext& c) {
  if (!c.has_input(0)) c.refuse("a Loop without a trip count runs until a device value says stop: not supported "
                                "(docs/CONTROL_FLOW.md)");
  const graph::Tensor* trip = c.constant(0);
  if (!trip) c.refuse("the trip count is computed on the device: not supported, it must be known at import "
                      "(docs/CONTROL_FLOW.md)");
  const int64_t max_trips = int64_t((*trip)[0]);
  if (max_trips > 4096) c.refuse(fmt::format("{} iterations: more than the 4096 spire unrolls", max_trips));
  bool running = true;
  if (c.has_input(1)) {
    const std::optional<bool> first = known_bool(c.entry(1));
    if (!first) c.refuse("the first condition is computed on the device: not supported (docs/CONTROL_FLOW.md)");
    running = *first;
  }
  const onnx::GraphProto& body = body_of(c, "body");
  const int carried = c.num_inputs() - 2;
  const int scans = body.output_size() - 1 - carried;
  if (carried < 0 || scans < 0) c.refuse("the body's outputs do not match the loop's carried values");
  std::vector<Entry> state;
  for (int i = 0; i < carried; ++i) state.push_back(c.entry(2 + i));
  std::vector<std::vector<Value>> scanned(static_cast<size_t>(scans));
  graph::Graph& g = c.g();
  for (int64_t it = 0; running && it < max_trips; ++it) {
    std::vector<Entry> in{constant_entry(scalar(DType::I64, double(it))), constant_entry(scalar(DType::Bool, 1))};
    in.insert(in.end(), state.begin(), state.end());
    const std::vector<Entry> out = c.inline_subgraph(body, in);
    const std::optional<bool> next = known_bool(out[0]);
    if (!next) c.refuse("the body's condition is computed on the device: not supported, a loop must stop at a count "
                        "known at import (docs/CONTROL_FLOW.md)");
    running = *next;
    for (int i = 0; i < carried; ++i) {
      if (out[size_t(1 + i)].type != state[size_t(i)].type)
        c.refuse(fmt::format("carried value {} changes type from {} to {}", i, state[size_t(i)].type.to_string(),
                             out[size_t(1 + i)].type.to_string()));
      state[size_t(i)] = out[size_t(1 + i)];
    }
    for (int k = 0; k < scans; ++k)
      scanned[size_t(k)].push_back(value_of(c, out[size_t(1 + carried + k)], fmt::format("scan{}_{}", k, it)));
  }
  for (int i = 0; i < carried; ++i)
    if (c.output_used(i)) state[size_t(i)].constant && !state[size_t(i)].value.valid()
                              ? c.set_output(i, *state[size_t(i)].constant)
                              : c.set_output(i, value_of(c, state[size_t(i)], fmt::format("state{}", i)));
  for (int k = 0; k < scans; ++k) {
    if (!c.output_used(carried + k)) continue;
    if (scanned[size_t(k)].empty()) c.refuse("no iteration ran, so scan output's shape is unknown");
    c.set_output(carried + k, stack(g, scanned[size_t(k)], 0));
  }
}

// The scan's steps inlined: `body` over the states (entries) and the scan inputs (values, each scanned along its axis,
// from the last element where reversed), all of one length; returns the final states and each scan output's pieces,
// one a step in step order.
struct Unrolled {
  std::vector<Entry> state;
  std::vector<std::vector<Value>> scanned;
};
Unrolled unroll_scan(NodeContext& c, const onnx::GraphProto& body, std::vector<Entry> state,
                     const std::vector<Value>& inputs, const std::vector<int64_t>& axes,
                     const std::vector<int64_t>& reverse, int n_scan_out, const std::string& tag) {
  graph::Graph& g = c.g();
  int64_t length = -1;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t n = g.type(inputs[k]).shape[size_t(axes[k])];
    if (length >= 0 && n != length) c.refuse(fmt::format("scan inputs of lengths {} and {}", length, n));
    length = n;
  }
  if (length > 4096) c.refuse(fmt::format("{} steps: more than the 4096 spire unrolls", length));
  Unrolled r{std::move(state), std::vector<std::vector<Value>>(size_t(n_scan_out))};
  const size_t n_state = r.state.size();
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Entry> in = r.state;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int64_t at = reverse[k] ? length - 1 - t : t;
      Shape s = g.type(inputs[k]).shape;
      s.erase(s.begin() + axes[k]);
      in.push_back(value_entry(g, g.reshape(slice_axis(g, inputs[k], axes[k], at, 1), s)));
    }
    const std::vector<Entry> out = c.inline_subgraph(body, in);
    for (size_t i = 0; i < n_state; ++i) r.state[i] = out[i];
    for (int k = 0; k < n_scan_out; ++k)
      r.scanned[size_t(k)].push_back(value_of(c, out[n_state + size_t(k)], fmt::format("scan{}_{}{}", k, tag, t)));
  }
  return r;
}

// Opset 8's Scan: every input and output has a batch axis first (the scan inputs' sequence axis is the second), each
// batch element scanned on its own; sequence_lens, where given, must be known at import and be the whole length.
void import_scan_8(NodeContext& c) {
  const int64_t n_scan = c.attr_int("num_scan_inputs", -1);
  const int n_state = c.num_inputs() - 1 - int(n_scan);
  if (n_scan < 1 || n_state < 0) c.refuse("num_scan_inputs must be between 1 and the number of inputs after sequence_lens");
  const onnx::GraphProto& body = body_of(c, "body");
  const int n_scan_out = body.output_size() - n_state;
  if (n_scan_out < 0) c.refuse("the body has fewer outputs than states");
  std::vector<int64_t> reverse = c.attr_ints("directions");
  if (reverse.empty()) reverse.assign(size_t(n_scan), 0);
  if (int64_t(reverse.size()) != n_scan) c.refuse(fmt::format("directions needs {} values", n_scan));
  graph::Graph& g = c.g();
  const int64_t batch = c.type(1).shape.empty() ? -1 : c.type(1).shape[0];
  for (int i = 1; i < c.num_inputs(); ++i)
    if (c.type(i).shape.size() < (i > n_state ? 2u : 1u) || c.type(i).shape[0] != batch)
      c.refuse("every state needs the batch axis first, and every scan input the batch then the sequence axis");
  if (c.has_input(0)) {
    const Entry lens = c.entry(0);
    if (!lens.constant) c.refuse("sequence_lens must be known at import");
    const int64_t length = c.type(c.num_inputs() - 1).shape[1];
    for (int64_t b = 0; b < lens.constant->numel(); ++b)
      if ((*lens.constant)[b] != double(length))
        c.refuse(fmt::format("sequence_lens {} of batch element {} is shorter than the scan's {} steps (padding is not "
                             "supported)", (*lens.constant)[b], b, length));
  }
  // One batch element of input i, without its batch axis.
  auto element = [&](int i, int64_t b) {
    const Value v = value_of(c, c.entry(i), fmt::format("input{}", i));
    Shape s = g.type(v).shape;
    s.erase(s.begin());
    return g.reshape(slice_axis(g, v, 0, b, 1), s);
  };
  std::vector<std::vector<Value>> states(static_cast<size_t>(n_state)), outputs(static_cast<size_t>(n_scan_out));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Entry> state;
    for (int i = 0; i < n_state; ++i) state.push_back(value_entry(g, element(1 + i, b)));
    std::vector<Value> inputs;
    for (int64_t k = 0; k < n_scan; ++k) inputs.push_back(element(1 + n_state + int(k), b));
    const Unrolled r = unroll_scan(c, body, std::move(state), inputs, std::vector<int64_t>(size_t(n_scan), 0), reverse,
                                   n_scan_out, fmt::format("b{}_", b));
    for (int i = 0; i < n_state; ++i)
      states[size_t(i)].push_back(value_of(c, r.state[size_t(i)], fmt::format("state{}_b{}", i, b)));
    for (int k = 0; k < n_scan_out; ++k) {
      if (r.scanned[size_t(k)].empty()) c.refuse("no iteration ran, so scan output's shape is unknown");
      outputs[size_t(k)].push_back(stack(g, r.scanned[size_t(k)], 0));
    }
  }
  for (int i = 0; i < n_state; ++i)
    if (c.output_used(i)) c.set_output(i, stack(g, states[size_t(i)], 0));
  for (int k = 0; k < n_scan_out; ++k)
    if (c.output_used(n_state + k)) c.set_output(n_state + k, stack(g, outputs[size_t(k)], 0));
}

void import_scan(NodeContext& c) {
  if (c.opset() < 9) return import_scan_8(c);
  const int64_t n_scan = c.attr_int("num_scan_inputs", -1);
  const int n_state = c.num_inputs() - int(n_scan);
  if (n_scan < 1 || n_state < 0) c.refuse("num_scan_inputs must be between 1 and the number of inputs");
  const onnx::GraphProto& body = body_of(c, "body");
  const int n_scan_out = body.output_size() - n_state;
  if (n_scan_out < 0) c.refuse("the body has fewer outputs than states");
  auto per_input = [&](const std::string& name, int64_t count) {
    std::vector<int64_t> v = c.attr_ints(name);
    if (v.empty()) v.assign(size_t(count), 0);
    if (int64_t(v.size()) != count) c.refuse(fmt::format("{} needs {} values", name, count));
    return v;
  };
  const std::vector<int64_t> in_axes = per_input("scan_input_axes", n_scan);
  const std::vector<int64_t> in_reverse = per_input("scan_input_directions", n_scan);
  const std::vector<int64_t> out_axes = per_input("scan_output_axes", n_scan_out);
  const std::vector<int64_t> out_reverse = per_input("scan_output_directions", n_scan_out);
  graph::Graph& g = c.g();
  std::vector<Value> inputs;
  std::vector<int64_t> axes;
  for (int64_t k = 0; k < n_scan; ++k) {
    const int i = n_state + int(k);
    inputs.push_back(c.value(i));
    axes.push_back(normalize_axis(c, in_axes[size_t(k)], int64_t(c.type(i).shape.size())));
  }
  std::vector<Entry> state;
  for (int i = 0; i < n_state; ++i) state.push_back(c.entry(i));
  const Unrolled r = unroll_scan(c, body, std::move(state), inputs, axes, in_reverse, n_scan_out, "");
  for (int i = 0; i < n_state; ++i)
    if (c.output_used(i)) c.set_output(i, value_of(c, r.state[size_t(i)], fmt::format("state{}", i)));
  for (int k = 0; k < n_scan_out; ++k) {
    if (!c.output_used(n_state + k) || r.scanned[size_t(k)].empty()) continue;
    std::vector<Value> pieces = r.scanned[size_t(k)];
    if (out_reverse[size_t(k)]) std::reverse(pieces.begin(), pieces.end());
    const int64_t rank = int64_t(g.type(pieces[0]).shape.size()) + 1;
    c.set_output(n_state + k, stack(g, pieces, normalize_axis(c, out_axes[size_t(k)], rank)));
  }
}

}  // namespace

void register_control_flow_ops(OpTable& t) {
  add_graph_ops(t, {{"If", import_if}, {"Loop", import_loop}, {"Scan", import_scan}});
}

}  // namespace spire::onnx_import
