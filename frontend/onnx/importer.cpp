// import_model: read and check the model, bind inputs, walk the nodes through the op table, bind outputs.
#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "frontend/onnx/host_tensor.h"
#include "frontend/onnx/model_file.h"
#include "frontend/onnx/node_context.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/tensor_proto.h"

namespace spire::onnx_import {
namespace fs = std::filesystem;

// The largest result of an op on given inputs' values that is also known at import (as a shape would be).
constexpr int64_t kMostKnownElements = 8;

graph::DType dtype_of_onnx(int elem_type, const std::string& what) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::BOOL: return DType::Bool;
    default: break;
  }
  const std::string name = onnx::TensorProto::DataType_IsValid(elem_type)
                               ? onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(elem_type))
                               : fmt::format("#{}", elem_type);
  throw ImportError(fmt::format("{} has element type {}, which spire does not support (float, double, int32, "
                                "int64 and bool are)", what, name));
}

// ---------------------------------------------------------------------------------------------------------

class Importer {
 public:
  Importer(fs::path path, const ImportOptions& opt) : path_(std::move(path)), opt_(opt) {}
  ImportedModel run();

  // Graph names: ONNX names may hold '/', ':' or start with a digit; the text form takes letters, digits,
  // '_' and '.', not starting with a digit or '.'.
  std::string unique_name(const std::string& onnx_name) {
    std::string s = sanitize(onnx_name);
    std::string name = s;
    for (int k = 1; used_.count(name) || model_.graph.find(name); ++k) name = fmt::format("{}_{}", s, k);
    used_.insert(name);
    return name;
  }
  static std::string sanitize(const std::string& onnx_name) {
    std::string s;
    for (char ch : onnx_name) s += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.') ? ch : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') s = "v_" + s;
    return s;
  }

  graph::Value materialize(const std::string& onnx_name) {
    Entry& e = env_.at(onnx_name);
    if (e.value.valid()) return e.value;
    const graph::Tensor& t = *e.constant;
    const bool uniform = !t.data.empty() && std::all_of(t.data.begin(), t.data.end(), [&](double v) {
      return v == t.data[0] || (std::isnan(v) && std::isnan(t.data[0]));
    });
    // A float initializer is a weight: it stays a parameter (so an imported model can be trained) even when
    // its values are all equal, as a fresh LayerNorm's ones and zeros are. Other constants of one value fold
    // into the kernels that read them.
    const bool weight = e.initializer && graph::is_float(t.dtype) && !t.data.empty();
    if (!weight && (uniform || t.data.empty())) {
      e.value = model_.graph.constant(t.data.empty() ? 0.0 : t.data[0], t.dtype, t.shape);
    } else {
      const std::string name = unique_name(onnx_name);
      e.value = model_.graph.parameter(name, t.dtype, t.shape);
      // A model's initializer (its entry stays as it is to the end: names are unique outside subgraphs) is moved into
      // the weights when the import ends, not copied now: a decoder's weights are gigabytes.
      if (e.initializer && inlined_bodies_ == 0) {
        model_.weights.emplace_back(name, graph::Tensor{});
        initializers_to_move_.emplace_back(model_.weights.size() - 1, onnx_name);
      } else {
        model_.weights.emplace_back(name, t);
      }
    }
    return e.value;
  }

  // The initializers materialize() left in env_, moved into the weights.
  void move_initializers_into_weights() {
    for (const auto& [index, onnx_name] : initializers_to_move_)
      model_.weights[index].second = std::move(*env_.at(onnx_name).constant);
  }

  [[noreturn]] void refuse_node(const onnx::NodeProto& n, int64_t opset, const std::string& reason) const {
    throw ImportError(fmt::format("{}: node '{}' ({}, opset {}): {}", path_.string(), n.name(), n.op_type(), opset,
                                  reason));
  }

  graph::Graph& g() { return model_.graph; }
  std::map<std::string, Entry, std::less<>>& env() { return env_; }
  std::vector<Entry> inline_body(const onnx::GraphProto& body, const std::vector<Entry>& inputs,
                                 const onnx::NodeProto& owner, int64_t opset);

 private:
  void load(onnx::ModelProto& m);
  void bind_input_dims(onnx::ModelProto& m);
  graph::Shape bind_shape(const onnx::ValueInfoProto& in, const std::string& what) const;
  void import_inputs(const onnx::GraphProto& gp);
  void import_node(const onnx::NodeProto& n);
  void check_inferred(const onnx::NodeProto& n);
  void import_outputs(const onnx::GraphProto& gp);

  fs::path path_;
  const ImportOptions& opt_;
  ImportedModel model_;
  std::map<std::string, Entry, std::less<>> env_;
  std::set<std::string> used_;
  std::map<std::string, const onnx::TypeProto*> inferred_;
  int inlined_bodies_ = 0;  // the depth of inline_body
  std::vector<std::pair<size_t, std::string>> initializers_to_move_;  // (index in model_.weights, ONNX name)
};

void Importer::load(onnx::ModelProto& m) {
  parse_file(path_, m, "not an ONNX model (the file does not parse as an ONNX ModelProto; truncated or not ONNX)");
  if (!m.has_graph() || m.ir_version() <= 0)
    throw ImportError(fmt::format("{}: not an ONNX model (no ir_version or no graph)", path_.string()));
  try {
    check_model_read_from(m, path_);
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: the ONNX checker rejects the model: {}", path_.string(), e.what()));
  }
  bool training_ops = false;  // a model of ai.onnx.preview.training's optimizers alone imports no ai.onnx opset
  for (const auto& op : m.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") model_.opset = op.version();
    if (op.domain() == kTrainingDomain) training_ops = true;
  }
  if (model_.opset == 0 && !training_ops)
    throw ImportError(fmt::format("{}: the model imports no ai.onnx opset", path_.string()));
}

// Symbolic dims of the inputs are replaced by the bound shapes before shape inference, so that inference
// computes the concrete shapes the graph has (and check_inferred can compare them with ours).
void Importer::bind_input_dims(onnx::ModelProto& m) {
  for (auto& in : *m.mutable_graph()->mutable_input()) {
    auto b = std::find_if(model_.inputs.begin(), model_.inputs.end(),
                          [&](const IoBinding& x) { return x.onnx_name == in.name(); });
    if (b == model_.inputs.end() || !in.type().has_tensor_type()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : b->shape) shape->add_dim()->set_dim_value(d);
  }
}

graph::Shape Importer::bind_shape(const onnx::ValueInfoProto& in, const std::string& what) const {
  const auto& tt = in.type().tensor_type();
  const std::string hint = opt_.missing_shape_hint.empty()
                               ? fmt::format("give its shape (--input-shape {}=D0,D1,...)", in.name())
                               : opt_.missing_shape_hint;
  std::optional<graph::Shape> given;
  if (auto k = opt_.known_inputs.find(in.name()); k != opt_.known_inputs.end()) given = k->second.shape;
  else if (auto s = opt_.input_shapes.find(in.name()); s != opt_.input_shapes.end()) given = s->second;
  if (!tt.has_shape()) {
    if (!given) throw ImportError(fmt::format("{} has no shape in the model: {}", what, hint));
    return *given;
  }
  // The model's shape as it declares it, symbolic dims by name: "[batch,3,224,224]".
  std::vector<std::string> declared;
  for (const auto& dim : tt.shape().dim())
    declared.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value())
                                           : (dim.dim_param().empty() ? "?" : dim.dim_param()));
  const std::string model_shape = fmt::format("[{}]", fmt::join(declared, ","));
  if (!given && opt_.batch > 0 && tt.shape().dim_size() > 0 && !tt.shape().dim(0).has_dim_value()) {
    given = graph::Shape{opt_.batch};
    for (int d = 1; d < tt.shape().dim_size(); ++d) {
      if (!tt.shape().dim(d).has_dim_value())
        throw ImportError(fmt::format("{} has a symbolic dimension {} ('{}') besides the batch: {}", what, d,
                                      declared[size_t(d)], hint));
      given->push_back(tt.shape().dim(d).dim_value());
    }
  }
  if (!given) {
    for (int d = 0; d < tt.shape().dim_size(); ++d)
      if (!tt.shape().dim(d).has_dim_value())
        throw ImportError(fmt::format("{} has a symbolic dimension {} ('{}'): {}", what, d, declared[size_t(d)], hint));
    given = graph::Shape{};
    for (const auto& dim : tt.shape().dim()) given->push_back(dim.dim_value());
  }
  bool fits = int(given->size()) == tt.shape().dim_size();
  for (int d = 0; fits && d < tt.shape().dim_size(); ++d)
    if (tt.shape().dim(d).has_dim_value() && tt.shape().dim(d).dim_value() != (*given)[size_t(d)]) fits = false;
  if (!fits)
    throw ImportError(fmt::format("{} has shape {} in the model but is given shape {}", what, model_shape,
                                  graph::shape_to_string(*given)));
  // Bounded so that no shape arithmetic downstream can overflow.
  int64_t numel = 1;
  for (int64_t d : *given) {
    if (d < 0 || d > (int64_t(1) << 40) || (d > 0 && numel > (int64_t(1) << 40) / d))
      throw ImportError(fmt::format("{} has shape {}, beyond what spire handles", what, graph::shape_to_string(*given)));
    numel *= d;
  }
  return *given;
}

void Importer::import_inputs(const onnx::GraphProto& gp) {
  const fs::path dir = path_.parent_path();
  // The bytes each initializer holds as stored, for the caller's progress (a type spire lacks is refused here as
  // read_tensor_proto would refuse it).
  auto stored_bytes = [](const onnx::TensorProto& t) {
    uint64_t n = graph::dtype_bytes(dtype_of_onnx(t.data_type(), fmt::format("tensor '{}'", t.name())));
    for (int64_t d : t.dims()) n *= uint64_t(std::max<int64_t>(d, 0));
    return n;
  };
  uint64_t total = 0, done = 0;
  if (opt_.progress) {
    for (const auto& init : gp.initializer()) total += stored_bytes(init);
    opt_.progress(0, total);
  }
  for (const auto& init : gp.initializer()) {
    Entry e;
    e.constant = read_tensor_proto(init, dir, init.name());
    e.type = e.constant->type();
    e.initializer = true;
    env_[init.name()] = std::move(e);
    if (opt_.progress) opt_.progress(done += stored_bytes(init), total);
  }
  if (gp.sparse_initializer_size() > 0)
    throw ImportError(fmt::format("{}: sparse initializers are not supported", path_.string()));
  for (const auto& in : gp.input()) {
    if (env_.count(in.name())) continue;  // an initializer listed as an input (IR < 4): a constant
    const std::string what = fmt::format("{}: input '{}'", path_.string(), in.name());
    if (!in.type().has_tensor_type()) throw ImportError(what + " is not a tensor");
    const DType dtype = dtype_of_onnx(in.type().tensor_type().elem_type(), what);
    const graph::Shape shape = bind_shape(in, what);
    Entry e;
    e.type = {dtype, shape};
    if (auto k = opt_.known_inputs.find(in.name()); k != opt_.known_inputs.end()) {
      if (k->second.dtype != dtype)
        throw ImportError(fmt::format("{} is {} in the model but the given value is {}", what, graph::dtype_name(dtype),
                                      graph::dtype_name(k->second.dtype)));
      e.constant = k->second;
      e.runtime = true;
    }
    const std::string name = unique_name(in.name());
    if (opt_.state_inputs.count(in.name())) {
      if (e.constant) throw ImportError(fmt::format("{} is imported as state, so it cannot also have a known value", what));
      const DType stored = dtype == DType::F32 ? opt_.f32_state_storage : dtype;
      e.value = model_.graph.state(name, stored, shape);
      if (stored != dtype) e.value = model_.graph.cast(e.value, dtype);
      model_.states.push_back({in.name(), name, stored, shape});
    } else {
      e.value = model_.graph.input(name, dtype, shape);
      model_.inputs.push_back({in.name(), name, dtype, shape});
    }
    env_[in.name()] = std::move(e);
  }
}

// The shapes ONNX's inference found for a node's outputs must be the ones our graph has: a mismatch is an
// importer bug, and it is better refused than run wrong.
void Importer::check_inferred(const onnx::NodeProto& n) {
  for (const auto& out : n.output()) {
    auto it = inferred_.find(out);
    auto e = env_.find(out);
    if (it == inferred_.end() || e == env_.end() || !it->second->has_tensor_type()) continue;
    const auto& tt = it->second->tensor_type();
    if (!tt.has_shape()) continue;
    graph::Shape s;
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    if (s != e->second.type.shape)
      refuse_node(n, model_.opset, fmt::format("output '{}' has shape {} here but ONNX shape inference says {}", out,
                                               graph::shape_to_string(e->second.type.shape), graph::shape_to_string(s)));
  }
}

void Importer::import_node(const onnx::NodeProto& n) {
  const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
  if (!default_domain && n.domain() != kTrainingDomain)
    refuse_node(n, model_.opset, fmt::format("unsupported op: domain '{}' is not supported", n.domain()));
  const auto& table = op_table();
  auto row = table.find(default_domain ? n.op_type() : table_key(n.domain(), n.op_type()));
  if (row == table.end())
    refuse_node(n, model_.opset, fmt::format("unsupported op: spire's ONNX importer has no mapping for it{}",
                                             default_domain ? "" : " in domain " + n.domain()));
  NodeContext c(*this, n, model_.opset);
  const int32_t first_new = model_.graph.size();
  try {
    if (row->second.fold && c.all_inputs_constant()) {
      row->second.fold(c);
    } else if (row->second.fold && c.all_inputs_known()) {
      // Inputs known at import only as given inputs' values: the op runs on the device as ever, and its small results
      // are known too, as those inputs are, where a later node needs them at import (an expanded Range's trip count,
      // ceil((limit - start) / delta), for its Loop to unroll). Like a shape, they specialise the graph to the inputs.
      std::vector<std::optional<graph::Tensor>> known(size_t(n.output_size()));
      try {
        row->second.fold(c);
        for (int i = 0; i < n.output_size(); ++i)
          if (auto e = env_.find(n.output(i)); !n.output(i).empty() && e != env_.end() && e->second.constant &&
                                               e->second.constant->numel() <= kMostKnownElements)
            known[size_t(i)] = e->second.constant;
      } catch (const std::exception&) {
        // (what the host cannot fold stays the device's alone)
      }
      row->second.emit(c);
      for (int i = 0; i < n.output_size(); ++i)
        if (auto e = env_.find(n.output(i)); known[size_t(i)] && e != env_.end()) {
          e->second.constant = known[size_t(i)];
          e->second.runtime = true;
        }
    } else {
      row->second.emit(c);
    }
  } catch (const ImportError&) {
    throw;
  } catch (const std::exception& e) {
    refuse_node(n, model_.opset, e.what());
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    auto e = env_.find(n.output(i));
    if (e == env_.end()) refuse_node(n, model_.opset, fmt::format("output {} ('{}') is not supported", i, n.output(i)));
    // Name the new graph value after the ONNX value, so the printed graph reads like the model.
    const graph::Value v = e->second.value;
    if (v.valid() && v.id >= first_new && !graph::is_leaf(model_.graph.node(v).op))
      model_.graph.name(v, unique_name(n.output(i)));
  }
}

std::vector<Entry> Importer::inline_body(const onnx::GraphProto& body, const std::vector<Entry>& inputs,
                                         const onnx::NodeProto& owner, int64_t opset) {
  if (body.input_size() != int(inputs.size()))
    refuse_node(owner, opset, fmt::format("its body '{}' takes {} inputs, the op gives it {}", body.name(),
                                          body.input_size(), inputs.size()));
  if (body.sparse_initializer_size() > 0) refuse_node(owner, opset, "its body has sparse initializers");
  struct Depth {
    int& n;
    explicit Depth(int& d) : n(++d) {}
    ~Depth() { --n; }
  } depth(inlined_bodies_);
  // The outer entries of the names the body defines, put back after it (none, in a model whose names are unique).
  std::map<std::string, std::optional<Entry>> outer;
  auto define = [&](const std::string& name) {
    if (outer.count(name)) return;
    auto it = env_.find(name);
    outer[name] = it == env_.end() ? std::nullopt : std::optional<Entry>(it->second);
  };
  for (int i = 0; i < body.input_size(); ++i) {
    define(body.input(i).name());
    env_[body.input(i).name()] = inputs[size_t(i)];
  }
  for (const auto& init : body.initializer()) {
    define(init.name());
    Entry e;
    e.constant = read_tensor_proto(init, path_.parent_path(), init.name());
    e.type = e.constant->type();
    env_[init.name()] = std::move(e);
  }
  std::vector<Entry> outputs;
  try {
    for (const auto& n : body.node()) {
      for (const auto& out : n.output())
        if (!out.empty()) define(out);
      import_node(n);
    }
    for (const auto& out : body.output()) {
      auto it = env_.find(out.name());
      if (it == env_.end())
        refuse_node(owner, opset, fmt::format("its body's output '{}' is not computed by any node", out.name()));
      outputs.push_back(it->second);
    }
  } catch (...) {
    for (auto& [name, e] : outer) e ? void(env_[name] = std::move(*e)) : void(env_.erase(name));
    throw;
  }
  for (auto& [name, e] : outer) e ? void(env_[name] = std::move(*e)) : void(env_.erase(name));
  return outputs;
}

void Importer::import_outputs(const onnx::GraphProto& gp) {
  std::set<std::string> names;
  for (const auto& out : gp.output()) {
    auto e = env_.find(out.name());
    if (e == env_.end()) throw ImportError(fmt::format("{}: output '{}' is not computed by any node", path_.string(), out.name()));
    const graph::Value v = materialize(out.name());
    const graph::TensorType type = model_.graph.type(v);
    if (out.type().has_tensor_type()) {
      const DType want = dtype_of_onnx(out.type().tensor_type().elem_type(), fmt::format("output '{}'", out.name()));
      if (want != type.dtype)
        throw ImportError(fmt::format("{}: output '{}' is {} in the model but the import computes {}", path_.string(),
                                      out.name(), graph::dtype_name(want), graph::dtype_name(type.dtype)));
    }
    // Output names are their own namespace in the graph: only other outputs can clash.
    std::string name = sanitize(out.name());
    for (int k = 1; names.count(name); ++k) name = fmt::format("{}_{}", sanitize(out.name()), k);
    names.insert(name);
    model_.graph.output(name, v);
    model_.outputs.push_back({out.name(), name, type.dtype, type.shape});
  }
}

ImportedModel Importer::run() {
  onnx::ModelProto m;
  load(m);
  // The nodes are mapped first and ONNX's shape inference runs after, on a model whose every node a
  // handler has accepted: libonnx 1.12's inference reads out of bounds on some malformed attributes (a
  // LayerNormalization axis far out of range crashed it in the fuzz test), which the handlers refuse first.
  const auto& gp = m.graph();
  import_inputs(gp);
  for (const auto& n : gp.node()) import_node(n);
  import_outputs(gp);
  bind_input_dims(m);
  try {
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: ONNX shape inference fails: {}", path_.string(), e.what()));
  }
  for (const auto& vi : m.graph().value_info()) inferred_[vi.name()] = &vi.type();
  for (const auto& vi : m.graph().output()) inferred_[vi.name()] = &vi.type();
  for (const auto& n : m.graph().node()) check_inferred(n);
  move_initializers_into_weights();
  return std::move(model_);
}

ImportedModel import_model(const fs::path& path, const ImportOptions& options) {
  return Importer(path, options).run();
}

// ---------------------------------------------------------------------------------------------------------
// NodeContext

graph::Graph& NodeContext::g() { return imp_.g(); }

const Entry& NodeContext::entry(int i) const {
  if (!has_input(i)) refuse(fmt::format("input {} is required", i));
  auto it = imp_.env().find(node_.input(i));
  if (it == imp_.env().end()) refuse(fmt::format("input '{}' is not defined before this node", node_.input(i)));
  return it->second;
}

const graph::Tensor* NodeContext::constant(int i) const {
  const Entry& e = entry(i);
  return e.constant ? &*e.constant : nullptr;
}

const graph::Tensor& NodeContext::require_constant(int i, const std::string& what) const {
  const graph::Tensor* t = constant(i);
  if (!t) refuse(fmt::format("{} (input '{}') must be known at import (an initializer, a Constant, or computed "
                             "from shapes); it is computed at run time, which spire does not support",
                             what, node_.input(i)));
  return *t;
}

std::vector<int64_t> NodeContext::require_ints(int i, const std::string& what) const {
  const graph::Tensor& t = require_constant(i, what);
  if (!graph::is_int(t.dtype)) refuse(fmt::format("{} must be an integer tensor", what));
  std::vector<int64_t> r;
  for (double v : t.data) r.push_back(to_int64(v));
  return r;
}

graph::Value NodeContext::value(int i) {
  entry(i);
  return imp_.materialize(node_.input(i));
}

void NodeContext::require_float(int i) const {
  if (!graph::is_float(type(i).dtype))
    refuse(fmt::format("input {} is {}; spire runs this op on float tensors only", i, graph::dtype_name(type(i).dtype)));
}

graph::Value NodeContext::float_value(int i) {
  require_float(i);
  return value(i);
}

graph::Value NodeContext::constant_value(const graph::Tensor& t, const std::string& name) {
  // A fresh env entry under a name no ONNX value has ("<node output>/<name>"), materialised like any constant.
  const std::string key = node_.output(0) + "/" + name;
  Entry e;
  e.type = t.type();
  e.constant = t;
  imp_.env()[key] = std::move(e);
  return imp_.materialize(key);
}

bool NodeContext::all_inputs_known() const {
  for (int i = 0; i < num_inputs(); ++i)
    if (has_input(i) && !entry(i).constant) return false;
  return true;
}

bool NodeContext::all_inputs_constant() const {
  for (int i = 0; i < num_inputs(); ++i)
    if (has_input(i) && (!entry(i).constant || entry(i).runtime)) return false;
  return true;
}

void NodeContext::set_output(int i, graph::Value v) {
  if (!output_used(i)) return;
  Entry e;
  e.type = g().type(v);
  e.value = v;
  imp_.env()[node_.output(i)] = std::move(e);
}

void NodeContext::set_output(int i, graph::Tensor t) {
  if (!output_used(i)) return;
  Entry e;
  e.type = t.type();
  e.constant = std::move(t);
  imp_.env()[node_.output(i)] = std::move(e);
}

const onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) refuse(fmt::format("attribute {} must be an int", name));
  return a->i();
}

float NodeContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) refuse(fmt::format("attribute {} must be a float", name));
  return a->f();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INTS) refuse(fmt::format("attribute {} must be a list of ints", name));
  return {a->ints().begin(), a->ints().end()};
}

std::string NodeContext::attr_string(const std::string& name, std::string fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) refuse(fmt::format("attribute {} must be a string", name));
  return a->s();
}

void NodeContext::refuse(const std::string& reason) const { imp_.refuse_node(node_, opset_, reason); }

std::vector<Entry> NodeContext::inline_subgraph(const onnx::GraphProto& body, const std::vector<Entry>& inputs) {
  return imp_.inline_body(body, inputs, node_, opset_);
}

int64_t normalize_axis(const NodeContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) c.refuse(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

// ---------------------------------------------------------------------------------------------------------
// Bindings as metadata

namespace {
nlohmann::json to_json(const std::vector<IoBinding>& bs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& b : bs)
    a.push_back({{"onnx", b.onnx_name}, {"graph", b.graph_name}, {"dtype", graph::dtype_name(b.dtype)}, {"shape", b.shape}});
  return a;
}
std::vector<IoBinding> from_json(const nlohmann::json& a) {
  std::vector<IoBinding> bs;
  for (const auto& j : a) {
    IoBinding b;
    b.onnx_name = j.at("onnx").get<std::string>();
    b.graph_name = j.at("graph").get<std::string>();
    auto dt = graph::dtype_from_name(j.at("dtype").get<std::string>());
    if (!dt) throw ImportError("spire.onnx.io metadata: unknown dtype");
    b.dtype = *dt;
    b.shape = j.at("shape").get<graph::Shape>();
    bs.push_back(std::move(b));
  }
  return bs;
}
}  // namespace

std::map<std::string, std::string> bindings_metadata(const ImportedModel& m) {
  nlohmann::json j = {{"inputs", to_json(m.inputs)}, {"outputs", to_json(m.outputs)}, {"opset", m.opset}};
  return {{"spire.onnx.io", j.dump()}};
}

void read_bindings_metadata(const std::map<std::string, std::string>& metadata, std::vector<IoBinding>& inputs,
                            std::vector<IoBinding>& outputs) {
  auto it = metadata.find("spire.onnx.io");
  if (it == metadata.end()) return;
  try {
    const auto j = nlohmann::json::parse(it->second);
    inputs = from_json(j.at("inputs"));
    outputs = from_json(j.at("outputs"));
  } catch (const nlohmann::json::exception& e) {
    throw ImportError(std::string("spire.onnx.io metadata is malformed: ") + e.what());
  }
}

}  // namespace spire::onnx_import
