// What an op handler sees of the import: one ONNX node, its inputs as graph values or host constants, its
// attributes, and the graph to append ops to. Handlers live in ops_*.cpp, one file per op family.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::onnx_import {

// The graph types every op mapping names (frontend/onnx/ops_*.cpp), once for all of them.
using graph::CompareMode;
using graph::DType;
using graph::Shape;
using graph::Tensor;
using graph::Value;

// A value of the ONNX graph during import: a graph value, a host constant (known at import), or both
// (a constant that has been materialised as a leaf because a graph op needed it).
struct Entry {
  graph::TensorType type;
  std::optional<graph::Tensor> constant;
  graph::Value value;  // invalid until materialised
  // A graph input whose value was given at import: its constant serves where a value must be known at
  // import (a shape), while the ops that merely compute with it still run on the device.
  bool runtime = false;
  // One of the model's initializers (its weights), not a Constant node's value or a folded result.
  bool initializer = false;
};

class Importer;  // import_model's state (importer.cpp)

class NodeContext {
 public:
  NodeContext(Importer& imp, const onnx::NodeProto& node, int64_t opset) : imp_(imp), node_(node), opset_(opset) {}

  graph::Graph& g();
  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const std::string& op_type() const { return node_.op_type(); }

  // Inputs: an optional input may be absent (missing or named "").
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  const Entry& entry(int i) const;
  graph::TensorType type(int i) const { return entry(i).type; }
  const graph::Tensor* constant(int i) const;                        // nullptr when not known at import
  const graph::Tensor& require_constant(int i, const std::string& what) const;  // refuses when not known
  std::vector<int64_t> require_ints(int i, const std::string& what) const;      // a constant int tensor's values
  graph::Value value(int i);                                         // materialises a constant as a leaf
  // Input i, which must be a float tensor: refuses naming the input and its dtype otherwise.
  void require_float(int i) const;
  graph::Value float_value(int i);                                   // require_float, then value
  graph::Value constant_value(const graph::Tensor& t, const std::string& name);  // a host tensor as a leaf
  bool all_inputs_constant() const;
  // Every present input has a value known at import, given inputs' values included (Entry::runtime).
  bool all_inputs_known() const;

  // Outputs: an optional output may be unused ("" or absent).
  int num_outputs() const { return node_.output_size(); }
  bool output_used(int i) const { return i < node_.output_size() && !node_.output(i).empty(); }
  void set_output(int i, graph::Value v);
  void set_output(int i, graph::Tensor constant);

  // Attributes, with the ONNX default when absent.
  const onnx::AttributeProto* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::string attr_string(const std::string& name, std::string fallback = {}) const;

  // Refuses the node: ImportError "<file>: node '<name>' (<op> , opset N): <reason>".
  [[noreturn]] void refuse(const std::string& reason) const;

  // Control flow (ops_control_flow.cpp): imports `body`, one of this node's graph attributes, into the graph, its
  // inputs bound to `inputs` (one each), the outer scope's names visible, and returns its outputs. The names the body
  // defines are forgotten after, so the same body can be imported again (a loop's next iteration).
  std::vector<Entry> inline_subgraph(const onnx::GraphProto& body, const std::vector<Entry>& inputs);

 private:
  Importer& imp_;
  const onnx::NodeProto& node_;
  int64_t opset_;
};

// One row of the op table. `fold` runs instead of `emit` when every present input is a host constant
// (the result is then a host constant too: how shape subgraphs disappear at import); an op without a
// folder is emitted as graph ops whatever its inputs.
using Handler = std::function<void(NodeContext&)>;
struct OpHandlers {
  Handler emit;
  Handler fold;
};
using OpTable = std::map<std::string, OpHandlers, std::less<>>;
// Adds rows for ops that are always emitted as graph ops (no folder): {name, emit} pairs.
void add_graph_ops(OpTable& t, std::initializer_list<std::pair<const char*, Handler>> rows);

// Ops of a domain other than ai.onnx are rows keyed "<domain>:<op>"; the importer maps this one beside ai.onnx.
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";
inline std::string table_key(const std::string& domain, const std::string& op) { return domain + ":" + op; }

// The families (ops_*.cpp) each add their rows.
void register_elementwise_ops(OpTable& t);
void register_activation_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_shape_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_constant_ops(OpTable& t);
void register_loss_ops(OpTable& t);
void register_indexing_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_trig_ops(OpTable& t);
void register_recurrent_ops(OpTable& t);
void register_topk_ops(OpTable& t);
void register_norm_ops(OpTable& t);
void register_optimizer_ops(OpTable& t);
void register_signal_ops(OpTable& t);
void register_linalg_ops(OpTable& t);
void register_grid_sample_ops(OpTable& t);
void register_einsum_ops(OpTable& t);
void register_roi_align_ops(OpTable& t);
void register_control_flow_ops(OpTable& t);
// Last: the graph's ops along one axis, by rule, where no family maps the ONNX name (ops_along_one_axis.cpp).
void register_ops_along_one_axis(OpTable& t);

const OpTable& op_table();  // every family's rows (op_table.cpp)

// x[start : start + count] along `axis`.
inline Value slice_axis(graph::Graph& g, Value x, int64_t axis, int64_t start, int64_t count) {
  Shape shape = g.type(x).shape;
  std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  starts[size_t(axis)] = start;
  shape[size_t(axis)] = count;
  return g.op("slice", {x}, {{"starts", starts}, {"steps", steps}, {"shape", shape}});
}

// The permutation that moves `axis` to the end, the other axes kept in order, and its inverse (ops that work along one
// axis as a product or a one-hot over the last one).
struct AxisLast {
  std::vector<int64_t> to_last, back;
};
inline AxisLast axis_last(int64_t rank, int64_t axis) {
  AxisLast p;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) p.to_last.push_back(d);
  p.to_last.push_back(axis);
  p.back.resize(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) p.back[static_cast<size_t>(p.to_last[static_cast<size_t>(d)])] = d;
  return p;
}

// A normalised axis in [0, rank) (ONNX allows -rank..rank-1); refuses out-of-range axes.
int64_t normalize_axis(const NodeContext& c, int64_t axis, int64_t rank);

}  // namespace spire::onnx_import
