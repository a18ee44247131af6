#include "tools/spire/decoder_generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/onnx/model_signature.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/precision_policy.h"
#include "passes/cache_in_place.h"
#include "passes/int8_weights.h"
#include "passes/merged_products.h"
#include "passes/transposed_weights.h"
#include "runtime/device.h"
#include "tools/spire/decode_traffic.h"
#include "tools/spire/next_token.h"
#include "tools/spire/weights_progress.h"
#include "tuning/copy_bandwidth.h"
#include "tuning/median.h"
#include "tuning/warm_up.h"

namespace spire::cli {
namespace {

using graph::DType;
using graph::Tensor;
using graph::Value;

// The decoder's sizes, read from the declared inputs and outputs; refuses a model that does not follow the
// convention, naming what is missing or wrong. A model without the convention's cache inputs, whose other inputs are
// among its three token inputs or are caches under other names (float, with a dynamic length past the first axis),
// is `plain`: generate() runs it on the whole sequence each token, feeding those caches empty, and `why` says so.
struct DecoderShape {
  int layers = 0;
  int64_t kv_heads = 0, head_dim = 0, vocab = 0;
  bool plain = false;
  std::string why;
  std::vector<std::string> empty_inputs;  // plain: the inputs fed with no past positions (their dynamic axes 0)
};

std::string past_name(int layer, const char* kv) { return fmt::format("past_key_values.{}.{}", layer, kv); }
std::string present_name(int layer, const char* kv) { return fmt::format("present.{}.{}", layer, kv); }

DecoderShape check_decoder(const std::string& path) {
  const auto sig = onnx_import::read_signature(path);
  std::vector<std::string> names;
  for (const auto& in : sig.inputs) names.push_back(in.name);
  auto refuse = [&](const std::string& why) {
    throw std::runtime_error(fmt::format("{} is not a decoder in Hugging Face's decoder-with-past form (inputs input_ids, "
                                         "attention_mask, position_ids, past_key_values.{{i}}.key|value; outputs "
                                         "logits, present.{{i}}.key|value): {} (its inputs: {})",
                                         path, why, fmt::join(names, ", ")));
  };
  const auto* logits = sig.output("logits");
  auto vocab_of_logits = [&] {
    if (!logits) refuse("it has no output 'logits'");
    if (logits->dims.size() != 3 || logits->dims[2].value <= 0)
      refuse("output 'logits' must be [batch, length, vocabulary] with the vocabulary fixed");
    return logits->dims[2].value;
  };
  // Not the convention's cache: a plain model, if its inputs are token inputs the loop knows how to feed, or caches it
  // can feed empty (no past positions; the model then attends over the sequence it is given).
  if (!sig.input(past_name(0, "key")) && sig.input("input_ids")) {
    bool known = true;
    std::vector<std::string> empty;
    for (const auto& in : sig.inputs) {
      if (in.name == "input_ids" || in.name == "attention_mask" || in.name == "position_ids") {
        known &= in.elem_type == 7 /* INT64 */ && (!in.has_shape || in.dims.size() == 2);
        continue;
      }
      bool dynamic_length = false;
      for (size_t i = 1; i < in.dims.size(); ++i) dynamic_length |= in.dims[i].value < 0;
      if (in.elem_type == 1 /* FLOAT */ && in.has_shape && dynamic_length) empty.push_back(in.name);
      else known = false;
    }
    if (known) {
      DecoderShape d;
      d.plain = true;
      d.vocab = vocab_of_logits();
      d.why = empty.empty() ? "it has no past_key_values inputs"
                            : fmt::format("its cache inputs ({}) are not named past_key_values.{{i}}.key|value, so the "
                                          "cache cannot be kept on the device; they are fed empty, no past positions",
                                          fmt::join(empty, ", "));
      d.empty_inputs = std::move(empty);
      return d;
    }
  }
  for (const char* n : {"input_ids", "attention_mask", "position_ids"}) {
    const auto* v = sig.input(n);
    if (!v) refuse(fmt::format("it has no input '{}'", n));
    if (v->elem_type != 7 /* INT64 */ || (v->has_shape && v->dims.size() != 2))
      refuse(fmt::format("input '{}' must be int64 [batch, length]", n));
  }
  DecoderShape d;
  while (sig.input(past_name(d.layers, "key"))) ++d.layers;
  if (d.layers == 0) refuse("it has no input 'past_key_values.0.key'");
  if (sig.inputs.size() != size_t(3 + 2 * d.layers))
    refuse(fmt::format("it has {} inputs where {} layers' caches and the three token inputs make {}", sig.inputs.size(),
                       d.layers, 3 + 2 * d.layers));
  for (int i = 0; i < d.layers; ++i)
    for (const char* kv : {"key", "value"}) {
      const auto* v = sig.input(past_name(i, kv));
      if (!v) refuse(fmt::format("it has no input '{}'", past_name(i, kv)));
      if (v->elem_type != 1 /* FLOAT */ || v->dims.size() != 4 || v->dims[1].value <= 0 || v->dims[3].value <= 0)
        refuse(fmt::format("input '{}' must be float32 [batch, kv_heads, past, head_dim] with kv_heads and head_dim "
                           "fixed", past_name(i, kv)));
      if (d.kv_heads == 0) d.kv_heads = v->dims[1].value, d.head_dim = v->dims[3].value;
      if (v->dims[1].value != d.kv_heads || v->dims[3].value != d.head_dim)
        refuse(fmt::format("input '{}' has another number of heads or head size than past_key_values.0.key",
                           past_name(i, kv)));
      if (!sig.output(present_name(i, kv))) refuse(fmt::format("it has no output '{}'", present_name(i, kv)));
    }
  d.vocab = vocab_of_logits();
  return d;
}

// One imported graph run step by step, on a device (compiled once) or on the float64 evaluator, its inputs and
// outputs by graph name; state updates stay where the graph runs.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void set(const std::string& name, const Tensor& t) = 0;
  virtual void step() = 0;
  virtual Tensor get(const std::string& output) = 0;
  virtual std::string precision_note() const { return ""; }
  // The last step's device time and its launches' (profiled devices only).
  virtual double last_step_ms() const { return 0; }
  virtual std::vector<lowering::LaunchTime> last_launch_times() const { return {}; }
  // The device memory its plan takes (nothing on the evaluator).
  virtual lowering::MemoryReport memory() const { return {}; }
};

// The weights the prefill and decode graphs both hold (the same ONNX initializers): one device buffer each, uploaded
// once, where each graph had its own copy (GPT-2 124M's 652 MB of f32 weights were held twice).
// A weight is shared only where the later graph's value equals the earlier's (same name, type, shape and values), so a
// graph whose import changed a weight keeps its own. The models registered must outlive this object.
class SharedWeights {
 public:
  // Before `m` compiles: which of its weights an earlier model already put on the device.
  void offer(const onnx_import::ImportedModel& m) {
    model_ = &m;
    reused_.clear();
    for (const auto& [name, t] : m.weights)
      if (auto it = entries_.find(name); it != entries_.end() && it->second.host->dtype == t.dtype &&
                                         it->second.host->shape == t.shape && it->second.host->data == t.data)
        reused_.insert(name);
  }
  // CompileOptions::parameter_buffer for the model offered last.
  std::shared_ptr<rt::Buffer> buffer(rt::Device& device, const std::string& name, uint64_t bytes) {
    if (reused_.count(name)) {
      const std::shared_ptr<rt::Buffer>& b = entries_.at(name).buffer;
      // The same size only: under a half policy one graph may store a weight in half (its only readers round it)
      // where the other keeps it f32, and f32 bytes read as half would be wrong values.
      if (b->size() == bytes) return b;
      reused_.erase(name);
    }
    const auto w = std::find_if(model_->weights.begin(), model_->weights.end(),
                                [&](const auto& named) { return named.first == name; });
    if (w == model_->weights.end()) return nullptr;
    std::shared_ptr<rt::Buffer> b = device.alloc(bytes);
    entries_[name] = {&w->second, b};
    return b;
  }
  bool on_device(const std::string& name) const { return reused_.count(name) > 0; }
  // Bytes of the offered model's weights that an earlier model's buffers hold.
  uint64_t reused_bytes() const {
    uint64_t n = 0;
    for (const auto& name : reused_) n += entries_.at(name).buffer->size();
    return n;
  }

 private:
  struct Entry {
    const Tensor* host;
    std::shared_ptr<rt::Buffer> buffer;
  };
  std::map<std::string, Entry> entries_;
  std::set<std::string> reused_;
  const onnx_import::ImportedModel* model_ = nullptr;
};

class DeviceRunner : public Runner {
 public:
  DeviceRunner(const onnx_import::ImportedModel& m, rt::Device& device, Precision precision,
               std::vector<std::string> streamed_in, std::vector<std::string> streamed_out, bool profile,
               SharedWeights* shared) {
    if (shared) shared->offer(m);
    exe_ = lowering::compile(
        m.graph, device,
        {.profile = profile,
         .streamed_inputs = std::move(streamed_in),
         .streamed_outputs = std::move(streamed_out),
         .parameter_buffer = shared ? std::function<std::shared_ptr<rt::Buffer>(const std::string&, uint64_t)>(
                                          [shared, &device](const std::string& name, uint64_t bytes) {
                                            return shared->buffer(device, name, bytes);
                                          })
                                    : nullptr,
         .precision = precision});
    for (const auto& [name, t] : m.weights)
      if (!shared || !shared->on_device(name)) exe_->set(name, t);
  }
  void set(const std::string& name, const Tensor& t) override { exe_->set(name, t); }
  void step() override { exe_->step(); }
  Tensor get(const std::string& output) override { return exe_->get(output); }
  std::string precision_note() const override { return exe_->precision_note(); }
  double last_step_ms() const override { return exe_->last_step_ms(); }
  std::vector<lowering::LaunchTime> last_launch_times() const override { return exe_->last_launch_times(); }
  lowering::MemoryReport memory() const override { return exe_->memory(); }

 private:
  std::unique_ptr<lowering::Executable> exe_;
};

class ReferenceRunner : public Runner {
 public:
  explicit ReferenceRunner(onnx_import::ImportedModel& m) : g_(std::move(m.graph)) {
    for (auto& [name, t] : m.weights) feeds_[name] = std::move(t);
    for (Value s : g_.states()) feeds_[g_.node(s).name] = Tensor(g_.type(s).dtype, g_.type(s).shape);
  }
  void set(const std::string& name, const Tensor& t) override { feeds_[name] = t; }
  void step() override {
    results_ = graph::evaluate(g_, feeds_, DType::F64);
    for (const auto& u : g_.state_updates()) {
      const std::string& target = g_.node(u.target).name;
      feeds_[target] = results_.at(target);
    }
  }
  Tensor get(const std::string& output) override { return results_.at(output); }

 private:
  graph::Graph g_;
  std::map<std::string, Tensor> feeds_, results_;
};

const onnx_import::IoBinding& binding(const std::vector<onnx_import::IoBinding>& bs, const std::string& onnx_name) {
  for (const auto& b : bs)
    if (b.onnx_name == onnx_name) return b;
  throw std::logic_error("decoder_generate: no binding for " + onnx_name);
}

// The name of the decode graph's extra input: the cache slot the step's key and value go to (i64 [1]).
constexpr const char* kCacheSlot = "spire.cache_slot";

// Refuses positions beyond a learned position table: a gather from a parameter whose indices are position_ids
// (through reshapes and casts) has one row per position, and devices read zeros past its end (the float64 evaluator
// refuses). Rotary embeddings compute from the positions and have no such table.
void check_position_table(const graph::Graph& g, const std::string& position_ids, int64_t last_position,
                          const std::string& what) {
  for (const graph::Node& n : g.nodes()) {
    if (graph::op_name(n.op) != "gather") continue;
    Value idx = n.inputs[1];
    for (std::string_view op = graph::op_name(g.node(idx).op); op == "reshape" || op == "cast" || op == "flatten";
         op = graph::op_name(g.node(idx).op))
      idx = g.node(idx).inputs[0];
    const graph::Node& table = g.node(n.inputs[0]);
    if (g.node(idx).name != position_ids || table.op != graph::OpKind::Parameter) continue;
    const int64_t rows = table.type.shape.at(size_t(n.attrs.get_int("axis")));
    if (last_position >= rows)
      throw std::invalid_argument(fmt::format("{} reach position {}, beyond the {} positions of the model's position "
                                              "table '{}' (gather '{}')", what, last_position, rows, table.name, n.name));
  }
}

// The index of the largest of `n` logits starting at `first` (the first of equal ones, as torch.argmax).
int64_t argmax(const Tensor& logits, int64_t first, int64_t n) {
  int64_t best = 0;
  for (int64_t v = 1; v < n; ++v)
    if (logits[first + v] > logits[first + best] || std::isnan(logits[first + best])) best = v;
  if (std::isnan(logits[first + best])) throw std::runtime_error("the prefill's logits are NaN");
  return best;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}


std::string graph_name(const std::vector<onnx_import::IoBinding>& bs, const std::string& onnx_name) {
  return binding(bs, onnx_name).graph_name;
}

// The prefill graph: the prompt's P tokens against an empty past, and the graph names the loop feeds and reads.
struct PrefillGraph {
  onnx_import::ImportedModel model;
  std::string ids, mask, positions, logits;
  std::vector<std::string> past;               // the empty past inputs
  std::map<std::string, std::string> present;  // ONNX past name -> the present output that extends it
};

PrefillGraph import_prefill(const std::string& path, const DecoderShape& d, int64_t P) {
  onnx_import::ImportOptions opt;
  opt.input_shapes = {{"input_ids", {1, P}}, {"attention_mask", {1, P}}, {"position_ids", {1, P}}};
  for (int i = 0; i < d.layers; ++i)
    for (const char* kv : {"key", "value"}) opt.input_shapes[past_name(i, kv)] = {1, d.kv_heads, 0, d.head_dim};
  opt.progress = weights_progress("reading the weights (prefill graph)");
  PrefillGraph p;
  p.model = onnx_import::import_model(path, opt);
  const auto& m = p.model;
  p.ids = graph_name(m.inputs, "input_ids"), p.mask = graph_name(m.inputs, "attention_mask");
  p.positions = graph_name(m.inputs, "position_ids"), p.logits = graph_name(m.outputs, "logits");
  for (int i = 0; i < d.layers; ++i)
    for (const char* kv : {"key", "value"}) {
      p.past.push_back(graph_name(m.inputs, past_name(i, kv)));
      p.present[past_name(i, kv)] = graph_name(m.outputs, present_name(i, kv));
    }
  return p;
}

// The decode graph: one token against the cache, imported as state (stored as `cache_dtype`: half under a half
// policy), and kNextToken. A state update per cache writes the step's key or value into the slot kCacheSlot names, as
// write_at(cache, row, slot), which lowering writes in place: one row into the state's buffer (lower_indexing.cpp).
// Where the model grows each cache by a concat, as the convention's models do, passes/cache_in_place.h makes the cache
// C slots that attention reads after the write (`in_place`): no copy of the cache at all, and the step's own key sits
// at its slot. Else the cache has C - 1 slots, the concat copies them with the step's key last, and the update writes
// that last row into its slot.
struct DecodeGraph {
  onnx_import::ImportedModel model;
  std::string ids, mask, positions;
  std::map<std::string, std::string> cache;  // ONNX past name -> its state
  bool in_place = false;
  int64_t slots = 0;  // the cache's positions
};

DecodeGraph import_decode(const std::string& path, const DecoderShape& d, int64_t C, DType cache_dtype) {
  onnx_import::ImportOptions opt;
  opt.f32_state_storage = cache_dtype;
  opt.input_shapes = {{"input_ids", {1, 1}}, {"attention_mask", {1, C}}, {"position_ids", {1, 1}}};
  for (int i = 0; i < d.layers; ++i)
    for (const char* kv : {"key", "value"}) {
      opt.input_shapes[past_name(i, kv)] = {1, d.kv_heads, C - 1, d.head_dim};
      opt.state_inputs.insert(past_name(i, kv));
    }
  opt.progress = weights_progress("reading the weights (decode graph)");
  DecodeGraph dg;
  dg.model = onnx_import::import_model(path, opt);
  auto& m = dg.model;
  graph::Graph& g = m.graph;
  g.input(kCacheSlot, DType::I64, {1});
  std::set<std::string> states, presents;
  for (int i = 0; i < d.layers; ++i)
    for (const char* kv : {"key", "value"}) {
      dg.cache[past_name(i, kv)] = graph_name(m.states, past_name(i, kv));
      states.insert(dg.cache[past_name(i, kv)]);
      presents.insert(graph_name(m.outputs, present_name(i, kv)));
    }
  passes::InPlaceCache rewritten = passes::write_cache_in_place(g, states, kCacheSlot, presents);
  dg.in_place = rewritten.not_applied.empty();
  dg.slots = dg.in_place ? C : C - 1;
  if (dg.in_place) {
    g = std::move(rewritten.graph);
  } else {
    fmt::print(stderr, "spire: note: the cache is copied every step: {}\n", rewritten.not_applied);
    const Value slot = g.at(kCacheSlot);
    for (int i = 0; i < d.layers; ++i)
      for (const char* kv : {"key", "value"}) {
        const Value present = g.find_output(graph_name(m.outputs, present_name(i, kv))).value();
        const Value row = g.op("slice", {present},
                               {{"starts", std::vector<int64_t>{0, 0, C - 1, 0}}, {"steps", std::vector<int64_t>{1, 1, 1, 1}},
                                {"shape", graph::Shape{1, d.kv_heads, 1, d.head_dim}}});
        const Value cache = g.at(dg.cache[past_name(i, kv)]);
        const Value stored_row = cache_dtype == DType::F32 ? row : g.cast(row, cache_dtype);
        g.state_update(cache, g.op("write_at", {cache, stored_row, slot}, {{"axis", int64_t(2)}}));
      }
  }
  add_next_token(m.graph, g.find_output(graph_name(m.outputs, "logits")).value(), d.vocab);
  // A step reads only the next token: the logits and presents stay on the device as values, not outputs, so nothing
  // stores them for a reader there is not (under a half policy the logits' cast back to f32 went with them).
  std::vector<std::string> unread;
  for (const auto& o : g.outputs())
    if (o.name != kNextToken) unread.push_back(o.name);
  for (const std::string& name : unread) g.remove_output(name);
  dg.ids = graph_name(m.inputs, "input_ids"), dg.mask = graph_name(m.inputs, "attention_mask");
  dg.positions = graph_name(m.inputs, "position_ids");
  return dg;
}

// `m` with its matmuls' weights as the products read them fastest, the graph rewritten, the weights it no longer reads
// dropped and their new forms added: the products of one x by several weights merged into one
// (passes/merged_products.h), then the weights in int8 with --int8 (passes/int8_weights.h), else transposed to [N, K]
// (passes/transposed_weights.h). Both graphs of a model get the same weights, which SharedWeights then holds once.
void store_product_weights(onnx_import::ImportedModel& m, bool int8) {
  m.graph = passes::merge_products_sharing_a(m.graph, m.weights).graph;
  std::vector<std::pair<std::string, graph::Tensor>> added;
  if (int8) {
    passes::Int8Graph q = passes::quantize_matmul_weights(m.graph, m.weights);
    m.graph = std::move(q.graph);
    added = std::move(q.weights);
  } else {
    m.graph = passes::transpose_matmul_weights(m.graph, m.weights).graph;
  }
  std::erase_if(m.weights, [&](const auto& w) { return !m.graph.find(w.first); });
  for (auto& w : added) m.weights.push_back(std::move(w));
}

// On the float64 evaluator when `device` is null.
std::unique_ptr<Runner> make_runner(onnx_import::ImportedModel& m, rt::Device* device, Precision precision,
                                    std::vector<std::string> streamed_in = {}, std::vector<std::string> streamed_out = {},
                                    bool profile = false, SharedWeights* shared = nullptr) {
  if (!device) return std::make_unique<ReferenceRunner>(m);
  return std::make_unique<DeviceRunner>(m, *device, precision, std::move(streamed_in), std::move(streamed_out), profile,
                                        shared);
}

// The dtype the device stores the cache in under `p`: the policy's half type where the device has it, else f32 (as
// the policy runs fp32 there, and says so).
DType cache_dtype_under(const rt::Device* device, Precision p) {
  if (!device || !lowering::has_half_storage(device->info(), p)) return DType::F32;
  return p == Precision::Bf16 ? DType::BF16 : DType::F16;
}

// The bytes the kernels read one element of a weight of `dtype` in, under the cache's storage: an f32 weight is stored
// in half under a half policy (passes/half_storage.h's parameters_in_half; but the norms' scales and shifts, which stay
// f32: a few thousandths of a percent of a decoder's weights, counted as half here).
double stored_weight_bytes(DType dtype, DType half_storage) {
  if (dtype == DType::F32 && half_storage != DType::F32) return double(graph::dtype_bytes(half_storage));
  return double(graph::dtype_bytes(dtype));
}

// A decoder without a cache (DecoderShape::plain): each token runs the model on the whole sequence so far, imported
// and compiled for that length (its shapes are static), and its last position's logits choose the token on the host.
// Correct, and slow: every token recomputes every position and pays a compilation, which the rate reported includes.
GenerateResult generate_plain(const GenerateOptions& o, const DecoderShape& d, rt::Device* device) {
  fmt::print(stderr, "spire: warning: {} is not in the decoder-with-past form ({}): running it as a plain model, the "
                     "whole sequence for each token, imported and compiled for each length\n", o.model, d.why);
  const auto sig = onnx_import::read_signature(o.model);
  const bool has_mask = sig.input("attention_mask") != nullptr, has_positions = sig.input("position_ids") != nullptr;
  // A cache under other names, fed with no past positions: a dynamic first axis (the batch) 1, the others 0.
  std::map<std::string, graph::Shape> empty_shapes;
  for (const std::string& name : d.empty_inputs) {
    graph::Shape shape;
    for (size_t i = 0; i < sig.input(name)->dims.size(); ++i) {
      const int64_t n = sig.input(name)->dims[i].value;
      shape.push_back(n >= 0 ? n : i == 0 ? 1 : 0);
    }
    empty_shapes[name] = shape;
  }
  const int64_t P = int64_t(o.prompt.size());
  GenerateResult r;
  std::vector<int64_t> sequence = o.prompt;
  auto t_decode = std::chrono::steady_clock::now();
  while (int64_t(r.tokens.size()) < o.max_new_tokens) {
    const int64_t T = int64_t(sequence.size());
    const auto t0 = std::chrono::steady_clock::now();
    onnx_import::ImportOptions opt;
    opt.input_shapes = {{"input_ids", {1, T}}};
    if (has_mask) opt.input_shapes["attention_mask"] = {1, T};
    if (has_positions) opt.input_shapes["position_ids"] = {1, T};
    for (const auto& [name, shape] : empty_shapes) opt.input_shapes[name] = shape;
    onnx_import::ImportedModel m = onnx_import::import_model(o.model, opt);
    if (has_positions && r.tokens.empty())  // the last position fed: the prompt's and every new token's but the last
      check_position_table(m.graph, graph_name(m.inputs, "position_ids"), P + o.max_new_tokens - 2,
                           fmt::format("the prompt's {} tokens and --max-new-tokens {}", P, o.max_new_tokens));
    store_product_weights(m, o.int8);
    if (r.tokens.empty()) {
      const DType half = cache_dtype_under(device, o.precision);  // (the half copies' type a device reads, or f32)
      r.weight_bytes_per_step = weight_bytes_per_step(m.graph, [&](DType t) { return stored_weight_bytes(t, half); });
    }
    std::unique_ptr<Runner> run = make_runner(m, device, o.precision);
    const double compile_s = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<double> ids(sequence.begin(), sequence.end()), positions;
    for (int64_t p = 0; p < T; ++p) positions.push_back(double(p));
    run->set(graph_name(m.inputs, "input_ids"), Tensor::from(DType::I64, {1, T}, ids));
    if (has_mask) run->set(graph_name(m.inputs, "attention_mask"), Tensor(DType::I64, {1, T}, 1));
    if (has_positions) run->set(graph_name(m.inputs, "position_ids"), Tensor::from(DType::I64, {1, T}, positions));
    for (const auto& [name, shape] : empty_shapes) run->set(graph_name(m.inputs, name), Tensor(DType::F32, shape, 0.0));
    run->step();
    const Tensor logits = run->get(graph_name(m.outputs, "logits"));
    r.tokens.push_back(argmax(logits, (T - 1) * d.vocab, d.vocab));
    if (r.tokens.size() == 1) {
      r.prefill_compile_s = compile_s;
      r.first_token_ms = seconds_since(t1) * 1e3;
      r.prefill_logits = logits;
      r.precision_note = run->precision_note();
      t_decode = std::chrono::steady_clock::now();
    } else if (r.tokens.size() == 2) {
      r.decode_compile_s = compile_s;
      r.first_step_ms = seconds_since(t1) * 1e3;
      t_decode = std::chrono::steady_clock::now();
    }
    // The next token fed: the one chosen, or the one to follow (--follow-tokens holds one for each token but the last).
    if (int64_t(r.tokens.size()) < o.max_new_tokens)
      sequence.push_back(o.follow.empty() ? r.tokens.back() : o.follow[r.tokens.size() - 1]);
  }
  // The steps after the first decode step, their compilations included: what a token costs this way.
  r.decode_s = seconds_since(t_decode);
  if (device) r.copy_gbs = tuning::copy_bandwidth(*device).best();
  return r;
}

}  // namespace

GenerateResult generate(const GenerateOptions& o) {
  const DecoderShape d = check_decoder(o.model);
  const int64_t P = int64_t(o.prompt.size());
  if (P == 0) throw std::invalid_argument("--prompt-ids: give at least one token id");
  auto check_ids = [&](const std::vector<int64_t>& ids, const char* flag) {
    for (int64_t id : ids)
      if (id < 0 || id >= d.vocab)
        throw std::invalid_argument(fmt::format("{}: token id {} is outside the model's vocabulary of {} (0 to {})", flag,
                                                id, d.vocab, d.vocab - 1));
  };
  check_ids(o.prompt, "--prompt-ids");
  check_ids(o.follow, "--follow-tokens");
  if (o.max_new_tokens < 1) throw std::invalid_argument("--max-new-tokens must be at least 1");
  if (!o.follow.empty() && int64_t(o.follow.size()) < o.max_new_tokens - 1)
    throw std::invalid_argument(fmt::format("--follow-tokens gives {} tokens; {} new tokens need {} (each decode step "
                                            "feeds one)", o.follow.size(), o.max_new_tokens, o.max_new_tokens - 1));
  const int64_t C = o.max_context > 0 ? o.max_context : P + o.max_new_tokens;
  if (P + o.max_new_tokens > C)
    throw std::invalid_argument(fmt::format("the prompt's {} tokens and --max-new-tokens {} need a context of {} positions, "
                                            "more than --max-context {}", P, o.max_new_tokens, P + o.max_new_tokens, C));
  const bool reference = o.device == "reference";
  if (reference && o.profile)
    throw std::invalid_argument("--profile times a device's launches; the reference is the float64 evaluator");
  if (reference && o.warm_up)
    throw std::invalid_argument("--warm-up warms a device up; the reference is the float64 evaluator");
  if (reference && o.precision != Precision::Fp32)
    throw std::invalid_argument(fmt::format("--precision {} applies to a device; the reference is the float64 evaluator",
                                            precision_name(o.precision)));
  std::unique_ptr<rt::Device> device = reference ? nullptr : rt::open_device(o.device);
  if (d.plain) {
    if (o.profile) throw std::invalid_argument("--profile times a decode step, which a model without a cache has not");
    if (o.warm_up) throw std::invalid_argument("--warm-up repeats a decode step, which a model without a cache has not");
    return generate_plain(o, d, device.get());
  }
  const DType cache_dtype = cache_dtype_under(device.get(), o.precision);

  GenerateResult r;
  auto t0 = std::chrono::steady_clock::now();
  PrefillGraph pg = import_prefill(o.model, d, P);
  // Positions 0..P-1 in the prefill, P..P+N-2 in the decode steps.
  check_position_table(pg.model.graph, pg.positions, o.max_new_tokens > 1 ? P + o.max_new_tokens - 2 : P - 1,
                       fmt::format("the prompt's {} tokens and --max-new-tokens {}", P, o.max_new_tokens));
  store_product_weights(pg.model, o.int8);
  SharedWeights shared;
  std::unique_ptr<Runner> prefill = make_runner(pg.model, device.get(), o.precision, {}, {}, false, &shared);
  r.precision_note = prefill->precision_note();
  r.prefill_compile_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Runner> decode;
  DecodeGraph dg;
  uint64_t shared_bytes = 0;
  if (o.max_new_tokens > 1) {
    dg = import_decode(o.model, d, C, cache_dtype);
    store_product_weights(dg.model, o.int8);
    r.weight_bytes_per_step =
        weight_bytes_per_step(dg.model.graph, [&](DType t) { return stored_weight_bytes(t, cache_dtype); });
    decode = make_runner(dg.model, device.get(), o.precision, {dg.ids, dg.mask, dg.positions, kCacheSlot}, {kNextToken},
                         o.profile, &shared);
    shared_bytes = shared.reused_bytes();
    r.shared_weight_bytes = double(shared_bytes);
  }
  r.decode_compile_s = seconds_since(t0);
  // Each plan counts the weights it reads; those the decode graph reads from the prefill graph's buffers, once.
  const lowering::MemoryReport pm = prefill->memory(), dm = decode ? decode->memory() : lowering::MemoryReport{};
  r.memory = {.weights = pm.weights + dm.weights - shared_bytes,
              .inputs_outputs = pm.inputs_outputs + dm.inputs_outputs,
              .arena = pm.arena + dm.arena};

  // The first token: the prefill's logits at the prompt's last position.
  t0 = std::chrono::steady_clock::now();
  std::vector<double> ids(o.prompt.begin(), o.prompt.end()), positions;
  for (int64_t p = 0; p < P; ++p) positions.push_back(double(p));
  prefill->set(pg.ids, Tensor::from(DType::I64, {1, P}, ids));
  prefill->set(pg.mask, Tensor(DType::I64, {1, P}, 1));
  prefill->set(pg.positions, Tensor::from(DType::I64, {1, P}, positions));
  for (const auto& name : pg.past) prefill->set(name, Tensor(DType::F32, {1, d.kv_heads, 0, d.head_dim}));
  prefill->step();
  r.prefill_logits = prefill->get(pg.logits);
  r.tokens.push_back(argmax(r.prefill_logits, (P - 1) * d.vocab, d.vocab));
  r.first_token_ms = seconds_since(t0) * 1e3;
  if (!decode) return r;

  // The prompt's keys and values into the first P slots of the cache (through the host, once).
  for (const auto& [past, state] : dg.cache) {
    const Tensor present = prefill->get(pg.present.at(past));
    Tensor cache(cache_dtype, {1, d.kv_heads, dg.slots, d.head_dim});
    for (int64_t h = 0; h < d.kv_heads; ++h)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t e = 0; e < d.head_dim; ++e)
          cache[(h * dg.slots + p) * d.head_dim + e] = present[(h * P + p) * d.head_dim + e];
    decode->set(state, cache.round_to_dtype());
  }
  // One position of every layer's key and value.
  const double cache_row_bytes = double(2 * d.layers * d.kv_heads * d.head_dim * graph::dtype_bytes(cache_dtype));
  std::vector<double> step_ms;
  std::vector<std::vector<double>> launch_ms;
  // Each step feeds the last token (or the one to follow) at position `pos` and writes its key and value into slot
  // `pos`. The mask keeps the cache's slots 0..pos-1 and the step's own key and value: in slot `pos` with the cache
  // written in place, else the last of the C positions of the concat.
  auto feed_step = [&](int64_t pos) {
    Tensor mask(DType::I64, {1, C}, 0);
    for (int64_t s = 0; s < pos; ++s) mask[s] = 1;
    mask[dg.in_place ? pos : C - 1] = 1;
    const Tensor slot(DType::I64, {1}, double(pos));
    const int64_t fed = o.follow.empty() ? r.tokens.back() : o.follow[r.tokens.size() - 1];
    decode->set(dg.ids, Tensor(DType::I64, {1, 1}, double(fed)));
    decode->set(dg.positions, Tensor(DType::I64, {1, 1}, double(pos)));
    decode->set(dg.mask, mask);
    decode->set(kCacheSlot, slot);
  };
  if (o.warm_up) {
    feed_step(P);
    const bool cpu = device->info().type == rt::DeviceType::Cpu;  // (lavapipe: no clocks to raise)
    tuning::warm_up(5, cpu ? 0 : tuning::kGpuWarmupMs, [&] { decode->step(); });
  }
  t0 = std::chrono::steady_clock::now();
  for (int64_t pos = P; int64_t(r.tokens.size()) < o.max_new_tokens; ++pos) {
    feed_step(pos);
    decode->step();
    const double next = decode->get(kNextToken)[0];
    if (!(next >= 0 && next < double(d.vocab)))  // NaN logits match no maximum
      throw std::runtime_error(fmt::format("decode step at position {}: the logits hold no largest value (NaN?)", pos));
    r.tokens.push_back(int64_t(next));
    if (pos == P) {
      r.first_step_ms = seconds_since(t0) * 1e3;
      t0 = std::chrono::steady_clock::now();
    } else {
      r.cache_bytes += cache_bytes_of_step(pos, cache_row_bytes);
      if (o.profile) {
        step_ms.push_back(decode->last_step_ms());
        const std::vector<lowering::LaunchTime> launches = decode->last_launch_times();
        if (r.decode_launches.empty()) r.decode_launches = launches, launch_ms.resize(launches.size());
        for (size_t i = 0; i < launches.size() && i < launch_ms.size(); ++i) launch_ms[i].push_back(launches[i].ms);
      }
    }
  }
  r.decode_s = seconds_since(t0);
  if (!step_ms.empty()) {
    r.decode_step_device_ms = tuning::median(step_ms);
    for (size_t i = 0; i < r.decode_launches.size(); ++i) r.decode_launches[i].ms = tuning::median(launch_ms[i]);
  }
  if (device) r.copy_gbs = tuning::copy_bandwidth(*device).best();
  return r;
}

}  // namespace spire::cli
