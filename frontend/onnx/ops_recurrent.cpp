// Recurrent ops: RNN, GRU and LSTM, unrolled over a sequence length known at import. Each direction projects the
// whole input sequence in one matmul (X W^T + Wb for every step at once); each step then adds H R^T + Rb, applies the
// gates' activations and updates the state with pointwise ops that fusion folds into a few kernels. The steps are
// ordinary graph ops, so the float64 evaluator checks them and autograd differentiates them like any other graph.
// Sequence lengths shorter than the sequence (sequence_lens, known at import) hold each batch element's state past
// its end and write zeros to Y there, as ONNX specifies; the reverse direction then needs equal lengths.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// The most steps unrolled: each step is a few tens of graph ops.
constexpr int64_t kMaxSteps = 4096;

enum class Cell { Rnn, Gru, Lstm };

// One of ONNX's recurrent activation functions with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Value apply(graph::Graph& g, const Activation& a, Value x) {
  const DType dt = g.type(x).dtype;
  const Value zero = g.scalar(0.0, dt);
  if (a.name == "Sigmoid") return g.sigmoid(x);
  if (a.name == "Tanh") return g.tanh(x);
  if (a.name == "Relu") return g.relu(x);
  if (a.name == "Affine") return g.add(g.mul(x, a.alpha), a.beta);
  if (a.name == "ScaledTanh") return g.mul(g.tanh(g.mul(x, a.beta)), a.alpha);
  if (a.name == "HardSigmoid")
    return g.maximum(g.minimum(g.add(g.mul(x, a.alpha), a.beta), g.scalar(1.0, dt)), zero);
  if (a.name == "LeakyRelu") return g.where(g.compare(x, zero, CompareMode::Ge), x, g.mul(x, a.alpha));
  if (a.name == "ThresholdedRelu") return g.where(g.compare(x, g.scalar(a.alpha, dt), CompareMode::Gt), x, zero);
  if (a.name == "Elu")
    return g.where(g.compare(x, zero, CompareMode::Ge), x, g.mul(g.sub(g.exp(x), 1.0), a.alpha));
  if (a.name == "Softsign") return g.div(x, g.add(g.op("abs", {x}), 1.0));
  if (a.name == "Softplus") return g.op("softplus", {x});
  throw std::logic_error("unchecked activation " + a.name);
}

// The activations of every direction (`per_direction` each), from the attributes or the op's defaults. Alphas and
// betas are consumed in order by the activations that take them (ONNX Runtime's reading of the spec).
std::vector<Activation> activations(NodeContext& c, Cell cell, int64_t directions) {
  const std::vector<std::string> defaults = cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
                                            : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const auto* a = c.attr("activations")) {
    for (const auto& s : a->strings()) names.push_back(s);
  }
  const size_t want = defaults.size() * size_t(directions);
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != want) c.refuse(fmt::format("{} activations given, {} expected", names.size(), want));
  std::vector<float> alphas, betas;
  if (const auto* a = c.attr("activation_alpha")) alphas.assign(a->floats().begin(), a->floats().end());
  if (const auto* a = c.attr("activation_beta")) betas.assign(a->floats().begin(), a->floats().end());
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    Activation act{n};
    auto take = [&](std::vector<float>& from, size_t& i, double fallback) {
      return i < from.size() ? double(from[i++]) : fallback;
    };
    if (n == "LeakyRelu") act.alpha = take(alphas, ai, 0.01);
    else if (n == "ThresholdedRelu" || n == "Elu") act.alpha = take(alphas, ai, 1.0);
    else if (n == "HardSigmoid") act.alpha = take(alphas, ai, 0.2), act.beta = take(betas, bi, 0.5);
    else if (n == "Affine" || n == "ScaledTanh") act.alpha = take(alphas, ai, 1.0), act.beta = take(betas, bi, 0.0);
    else if (n != "Sigmoid" && n != "Tanh" && n != "Relu" && n != "Softsign" && n != "Softplus")
      c.refuse(fmt::format("activation '{}' is not an ONNX recurrent activation", n));
    out.push_back(act);
  }
  return out;
}

// Direction d's [rows, cols] block of a [directions, rows, cols] input (W, R), or of a [directions, n] one as [n].
Value direction_of(graph::Graph& g, Value x, int64_t d) {
  Shape s = g.type(x).shape;
  const Value one = slice_axis(g, x, 0, d, 1);
  s.erase(s.begin());
  return g.reshape(one, s);
}

void recurrent(NodeContext& c, Cell cell) {
  auto& g = c.g();
  const int64_t gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  for (int i = 0; i < 3; ++i)
    if (!graph::is_float(c.type(i).dtype)) c.refuse("spire runs recurrent ops on float tensors only");
  const DType dt = c.type(0).dtype;
  const int64_t layout = c.opset() >= 14 ? c.attr_int("layout", 0) : 0;
  if (layout != 0 && layout != 1) c.refuse(fmt::format("layout {}", layout));
  const std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.refuse(fmt::format("direction '{}'", direction));
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  if (cell == Cell::Lstm && c.attr_int("input_forget", 0) != 0) c.refuse("input_forget=1 is not supported");
  const bool linear_before_reset = cell == Cell::Gru && c.attr_int("linear_before_reset", 0) != 0;
  const double clip = c.attr("clip") ? double(c.attr_float("clip", 0)) : -1.0;
  if (c.attr("clip") && !(clip > 0)) c.refuse("clip must be positive");

  const Shape xs = c.type(0).shape;
  if (xs.size() != 3) c.refuse("X must be 3-D");
  Value x = c.value(0);
  if (layout == 1) x = g.permute(x, {1, 0, 2});  // [batch, seq, input] -> [seq, batch, input]
  const int64_t steps = layout == 1 ? xs[1] : xs[0], batch = layout == 1 ? xs[0] : xs[1], inputs = xs[2];
  if (steps < 1 || steps > kMaxSteps) c.refuse(fmt::format("a sequence of {} steps (spire unrolls 1 to {})", steps, kMaxSteps));
  const Shape ws = c.type(1).shape, rs = c.type(2).shape;
  if (ws.size() != 3 || rs.size() != 3 || ws[0] != directions || rs[0] != directions || ws[2] != inputs)
    c.refuse(fmt::format("W {} and R {} do not fit X {} and {} direction(s)", graph::shape_to_string(ws),
                         graph::shape_to_string(rs), graph::shape_to_string(xs), directions));
  const int64_t hidden = c.attr_int("hidden_size", rs[2]);
  if (hidden < 1 || ws[1] != gates * hidden || rs[1] != gates * hidden || rs[2] != hidden)
    c.refuse(fmt::format("W {} and R {} do not match hidden_size {}", graph::shape_to_string(ws),
                         graph::shape_to_string(rs), hidden));
  const Shape state_shape = {directions, batch, hidden};
  auto optional_input = [&](int i, const Shape& want) -> Value {
    if (!c.has_input(i)) return {};
    if (!graph::is_float(c.type(i).dtype)) c.refuse(fmt::format("input {} must be float", i));
    Shape s = c.type(i).shape;
    Value v = c.value(i);
    if (layout == 1 && want == state_shape) {  // initial states are [batch, directions, hidden]
      if (s != Shape{batch, directions, hidden}) c.refuse(fmt::format("input {} has shape {}", i, graph::shape_to_string(s)));
      return g.permute(v, {1, 0, 2});
    }
    if (s != want) c.refuse(fmt::format("input {} has shape {}, not {}", i, graph::shape_to_string(s), graph::shape_to_string(want)));
    return v;
  };
  const Value bias = optional_input(3, {directions, 2 * gates * hidden});
  const Value initial_h = optional_input(5, state_shape);
  const Value initial_c = cell == Cell::Lstm ? optional_input(6, state_shape) : Value{};
  const Value peepholes = cell == Cell::Lstm ? optional_input(7, {directions, 3 * hidden}) : Value{};

  // Each batch element's length; all `steps` when absent.
  std::vector<int64_t> lengths(size_t(batch), steps);
  if (c.has_input(4)) {
    lengths = c.require_ints(4, "sequence_lens");
    if (int64_t(lengths.size()) != batch) c.refuse("sequence_lens must have one length per batch element");
    for (int64_t n : lengths)
      if (n < 1 || n > steps) c.refuse(fmt::format("a sequence length of {} outside [1, {}]", n, steps));
  }
  const bool ragged = std::any_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n != steps; });
  if (ragged && direction != "forward") c.refuse("sequence lengths that differ need the forward direction here");

  const std::vector<Activation> acts = activations(c, cell, directions);
  const size_t per_direction = acts.size() / size_t(directions);
  auto clipped = [&](Value v) {
    if (clip < 0) return v;
    return g.maximum(g.minimum(v, g.scalar(clip, dt)), g.scalar(-clip, dt));
  };

  std::vector<Value> ys_of_direction, last_h, last_c;
  for (int64_t d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation* act = &acts[size_t(d) * per_direction];
    const Value w = direction_of(g, c.value(1), d), r = direction_of(g, c.value(2), d);  // [gates*hidden, in|hidden]
    const Value rt = g.transpose(r);
    Value wb, rb;
    if (bias.valid()) {
      const Value b = direction_of(g, bias, d);
      wb = slice_axis(g, b, 0, 0, gates * hidden);
      rb = slice_axis(g, b, 0, gates * hidden, gates * hidden);
    }
    // X W^T + Wb for every step: [steps, batch, gates*hidden].
    Value projected = g.matmul(g.reshape(x, {steps * batch, inputs}), g.transpose(w));
    if (wb.valid()) projected = g.add(projected, wb);
    projected = g.reshape(projected, {steps, batch, gates * hidden});
    auto state = [&](Value init) {
      return init.valid() ? direction_of(g, init, d) : g.constant(0.0, dt, {batch, hidden});
    };
    Value h = state(initial_h), cs = cell == Cell::Lstm ? state(initial_c) : Value{};
    Value pi, po, pf;
    if (peepholes.valid()) {
      const Value p = direction_of(g, peepholes, d);
      pi = slice_axis(g, p, 0, 0, hidden);
      po = slice_axis(g, p, 0, hidden, hidden);
      pf = slice_axis(g, p, 0, 2 * hidden, hidden);
    }
    std::vector<Value> ys(static_cast<size_t>(steps));
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = reverse ? steps - 1 - k : k;
      const Value xt = g.reshape(slice_axis(g, projected, 0, t, 1), {batch, gates * hidden});
      Value hr = g.matmul(h, rt);
      if (rb.valid()) hr = g.add(hr, rb);
      auto gate = [&](Value v, int64_t i) { return slice_axis(g, v, 1, i * hidden, hidden); };
      Value h_new, c_new;
      if (cell == Cell::Rnn) {
        h_new = apply(g, act[0], clipped(g.add(xt, hr)));
      } else if (cell == Cell::Gru) {  // gates z, r, h
        const Value z = apply(g, act[0], clipped(g.add(gate(xt, 0), gate(hr, 0))));
        const Value rg = apply(g, act[0], clipped(g.add(gate(xt, 1), gate(hr, 1))));
        Value candidate;
        if (linear_before_reset) {
          candidate = g.add(gate(xt, 2), g.mul(rg, gate(hr, 2)));
        } else {
          // (r . H) Rh^T + Rbh: the reset gate scales the state before its projection.
          Value reset = g.matmul(g.mul(rg, h), g.transpose(slice_axis(g, r, 0, 2 * hidden, hidden)));
          if (rb.valid()) reset = g.add(reset, slice_axis(g, rb, 0, 2 * hidden, hidden));
          candidate = g.add(gate(xt, 2), reset);
        }
        const Value hh = apply(g, act[1], clipped(candidate));
        h_new = g.add(g.mul(g.sub(g.scalar(1.0, dt), z), hh), g.mul(z, h));
      } else {  // gates i, o, f, c
        auto pre = [&](int64_t i) { return g.add(gate(xt, i), gate(hr, i)); };
        Value ip = pre(0), fp = pre(2);
        if (pi.valid()) ip = g.add(ip, g.mul(pi, cs)), fp = g.add(fp, g.mul(pf, cs));
        const Value ig = apply(g, act[0], clipped(ip)), fg = apply(g, act[0], clipped(fp));
        const Value cg = apply(g, act[1], clipped(pre(3)));
        c_new = g.add(g.mul(fg, cs), g.mul(ig, cg));
        Value op = pre(1);
        if (po.valid()) op = g.add(op, g.mul(po, c_new));
        h_new = g.mul(apply(g, act[0], clipped(op)), apply(g, act[2], c_new));
      }
      Value y = h_new;
      if (ragged) {  // past its length an element keeps its state and outputs zeros
        graph::Tensor live(DType::Bool, {batch, 1});
        for (int64_t b = 0; b < batch; ++b) live.data[size_t(b)] = t < lengths[size_t(b)] ? 1 : 0;
        const Value alive = c.constant_value(live, fmt::format("{}.live{}", c.node().name(), t));
        h_new = g.where(alive, h_new, h);
        if (c_new.valid()) c_new = g.where(alive, c_new, cs);
        y = g.where(alive, y, g.scalar(0.0, dt));
      }
      h = h_new;
      if (c_new.valid()) cs = c_new;
      ys[size_t(t)] = g.reshape(y, {1, 1, batch, hidden});
    }
    ys_of_direction.push_back(steps == 1 ? ys[0] : g.op("concat", ys, {{"axis", int64_t(0)}}));
    last_h.push_back(g.reshape(h, {1, batch, hidden}));
    if (cs.valid()) last_c.push_back(g.reshape(cs, {1, batch, hidden}));
  }
  auto join = [&](const std::vector<Value>& parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : g.op("concat", parts, {{"axis", axis}});
  };
  Value y = join(ys_of_direction, 1);  // [steps, directions, batch, hidden]
  Value yh = join(last_h, 0);          // [directions, batch, hidden]
  Value yc = last_c.empty() ? Value{} : join(last_c, 0);
  if (layout == 1) {
    y = g.permute(y, {2, 0, 1, 3});
    yh = g.permute(yh, {1, 0, 2});
    if (yc.valid()) yc = g.permute(yc, {1, 0, 2});
  }
  if (c.output_used(0)) c.set_output(0, y);
  if (c.output_used(1)) c.set_output(1, yh);
  if (c.output_used(2) && yc.valid()) c.set_output(2, yc);
}

}  // namespace

void register_recurrent_ops(OpTable& t) {
  t["RNN"] = {[](NodeContext& c) { recurrent(c, Cell::Rnn); }, {}};
  t["GRU"] = {[](NodeContext& c) { recurrent(c, Cell::Gru); }, {}};
  t["LSTM"] = {[](NodeContext& c) { recurrent(c, Cell::Lstm); }, {}};
}

}  // namespace spire::onnx_import
