#include "bundle/compiler/compile_bundle.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/graph/text_form.h"
#include "lowering/device_bytes.h"
#include "lowering/device_plan.h"
#include "lowering/plan.h"

namespace spire::bundle {

namespace {

// The graph type of a model tensor: an input is a leaf, an output a named graph output.
graph::TensorType type_of(const graph::Graph& g, const ModelTensor& t, bool input) {
  if (input) {
    for (graph::Value v : g.inputs())
      if (g.node(v).name == t.graph_name) return g.node(v).type;
    throw std::invalid_argument(fmt::format("the graph has no input '{}'", t.graph_name));
  }
  for (const auto& o : g.outputs())
    if (o.name == t.graph_name) return g.type(o.value);
  throw std::invalid_argument(fmt::format("the graph has no output '{}'", t.graph_name));
}

// The named inputs' and outputs' types of the model at one batch.
struct IoTypes {
  std::vector<std::pair<std::string, graph::TensorType>> inputs, outputs;
  explicit IoTypes(const ModelAtBatch& m) {
    for (const ModelTensor& t : m.inputs) inputs.push_back({t.name, type_of(m.graph, t, true)});
    for (const ModelTensor& t : m.outputs) outputs.push_back({t.name, type_of(m.graph, t, false)});
  }
};

class BundleBuilder {
 public:
  explicit BundleBuilder(const CompileBundleOptions& o) : o_(o) {
    b_.model = o.model_name;
    b_.producer = "spire";
    b_.dynamic_batch = o.dynamic_batch;
    b_.max_batch = o.dynamic_batch ? o.max_batch : 0;
    b_.precision = o.precision;
  }

  // The io specs from the model's io types at its smallest and largest batch: what varies is the batch dimension.
  void describe_io(const IoTypes& small, int64_t small_batch, const IoTypes& large, int64_t large_batch) {
    for (int io = 0; io < 2; ++io) {
      const auto& a = io == 0 ? small.inputs : small.outputs;
      const auto& z = io == 0 ? large.inputs : large.outputs;
      for (size_t i = 0; i < z.size(); ++i) {
        const auto& [name, tz] = z[i];
        TensorSpec spec{name, tz.dtype, tz.shape, false};
        const graph::TensorType& ta = a.at(i).second;
        if (o_.dynamic_batch && ta.shape != tz.shape) {
          std::vector<int64_t> expect = tz.shape;
          if (!expect.empty()) expect[0] = small_batch;
          if (tz.shape.empty() || tz.shape[0] != large_batch || ta.shape != expect)
            throw std::invalid_argument(fmt::format(
                "{} '{}' is {} at batch {} and {} at batch {}: only the first dimension may follow the batch",
                io == 0 ? "input" : "output", name, graph::shape_to_string(ta.shape), small_batch,
                graph::shape_to_string(tz.shape), large_batch));
          spec.batched = true;
        }
        (io == 0 ? b_.inputs : b_.outputs).push_back(std::move(spec));
      }
    }
  }

  void add_plan(const ModelAtBatch& m, const rt::DeviceInfo& target, int64_t batch) {
    const lowering::Plan plan = lowering::lower(m.graph, target, nullptr, nullptr, o_.parameters_once, o_.precision);
    DevicePlan p = lowering::to_device_plan(plan, target);
    p.batch = o_.dynamic_batch ? batch : 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i)
      if (plan.buffers[i].role == BufferRole::Parameter) p.buffers[i].weight = weight_index(m, plan.buffers[i]);
    for (const ModelTensor& t : m.inputs) {
      auto it = plan.leaves.find(t.graph_name);
      if (it == plan.leaves.end()) throw std::invalid_argument(fmt::format("the plan has no input '{}'", t.name));
      p.input_buffers.push_back(uint32_t(it->second.buffer));
    }
    for (const ModelTensor& t : m.outputs) {
      auto it = plan.outputs.find(t.graph_name);
      if (it == plan.outputs.end()) throw std::invalid_argument(fmt::format("the plan has no output '{}'", t.name));
      p.output_buffers.push_back(uint32_t(it->second.buffer));
    }
    b_.plans.push_back(std::move(p));
  }

  bool any_batched() const {
    for (const auto* list : {&b_.inputs, &b_.outputs})
      for (const TensorSpec& t : *list)
        if (t.batched) return true;
    return false;
  }

  // The graph of the largest batch's model, for tools that compare the bundle's values (bundle.h, source_graph).
  void keep_source(const ModelAtBatch& m) {
    b_.source_graph = graph::print(m.graph);
    b_.input_graph_names.clear();
    b_.output_graph_names.clear();
    for (const ModelTensor& t : m.inputs) b_.input_graph_names.push_back(t.graph_name);
    for (const ModelTensor& t : m.outputs) b_.output_graph_names.push_back(t.graph_name);
  }

  Bundle take() {
    validate(b_, o_.model_name);
    return std::move(b_);
  }

 private:
  // Weights are stored once by name, in the device type the plan gives them; every plan's parameter buffer of
  // that name shares them, so they must agree.
  int32_t weight_index(const ModelAtBatch& m, const lowering::PlannedBuffer& pb) {
    const std::string& name = pb.values.empty() ? pb.slot.name : pb.values.front();
    auto it = m.weights.find(name);
    if (it == m.weights.end()) throw std::invalid_argument(fmt::format("parameter '{}' has no weight", name));
    std::vector<uint8_t> bytes = lowering::to_device_bytes(it->second, pb.slot.type, name);
    for (size_t i = 0; i < b_.weights.size(); ++i)
      if (b_.weights[i].name == name) {
        if (b_.weights[i].bytes != bytes || b_.weights[i].type != pb.slot.type)
          throw std::invalid_argument(fmt::format("parameter '{}' differs between the plans", name));
        return int32_t(i);
      }
    b_.weights.push_back({name, pb.slot.type, std::move(bytes), {}});
    return int32_t(b_.weights.size() - 1);
  }

  const CompileBundleOptions& o_;
  Bundle b_;
};

}  // namespace

std::vector<int64_t> plan_batches(int64_t max_batch, bool exact) {
  std::vector<int64_t> out;
  if (exact) {
    for (int64_t b = 1; b <= max_batch; ++b) out.push_back(b);
    return out;
  }
  for (int64_t b = 1; b < max_batch; b *= 2) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

Bundle compile_bundle(const std::function<ModelAtBatch(int64_t)>& model, const CompileBundleOptions& o) {
  if (o.targets.empty()) throw std::invalid_argument("no target to compile for");
  if (o.dynamic_batch && o.max_batch < 2)
    throw std::invalid_argument(fmt::format("--dynamic-batch needs a largest batch of at least 2 (--batch N), not {}",
                                            o.max_batch));
  const std::vector<int64_t> batches = o.dynamic_batch ? plan_batches(o.max_batch, o.exact_batches) : std::vector<int64_t>{0};
  BundleBuilder builder(o);
  // One batch at a time, lowered for every target, then dropped: a model's weights are large.
  std::vector<IoTypes> io;
  size_t done = 0;
  const size_t total = batches.size() * o.targets.size();
  for (int64_t b : batches) {
    const ModelAtBatch m = model(b);
    io.emplace_back(m);
    if (b == batches.back()) builder.keep_source(m);
    for (const rt::DeviceInfo& target : o.targets) {
      if (o.progress) o.progress(done++, total, target.id, b);
      builder.add_plan(m, target, b);
    }
  }
  builder.describe_io(io.front(), batches.front(), io.back(), batches.back());
  if (o.dynamic_batch && !builder.any_batched())
    throw std::invalid_argument(fmt::format(
        "{}: no input or output changes shape with the batch, so there is no batch to make dynamic (export the model "
        "with a symbolic first dimension, e.g. torch.onnx.export(..., dynamic_axes={{'input': {{0: 'batch'}}}}))",
        o.model_name));
  return builder.take();
}

}  // namespace spire::bundle
