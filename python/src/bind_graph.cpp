// spire.Graph: the graph IR's builder (every op of the table by name, its shape rule run at once), the text form,
// reverse-mode autograd and the float64 reference evaluator. Values are plain ints (the node's id) on the Python side.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "ir/graph/composites/grid_sample.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"
#include "ir/graph/ops_along_one_axis.h"
#include "ir/graph/text_form.h"
#include "python/src/bindings.h"
#include "python/src/numpy_tensor.h"

namespace py = pybind11;

namespace spire::python {
namespace {

using graph::Graph;
using graph::Value;

graph::DType dtype_of(const std::string& name) {
  auto d = graph::dtype_from_name(name);
  if (!d) throw py::type_error(fmt::format("'{}' is not a spire dtype (bool, i32, i64, f16, bf16, f32, f64)", name));
  return *d;
}

// A Python attribute value as the graph's: bool before int (a Python bool is an int), a sequence as ints.
graph::AttrValue attr_value(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::sequence>(v)) return v.cast<std::vector<int64_t>>();
  throw py::type_error(fmt::format("attribute '{}': {} is not an int, float, bool, str or list of ints", name,
                                   std::string(py::str(v))));
}

Value value_of(const Graph& g, int32_t id) {
  if (id < 0 || id >= g.size()) throw py::index_error(fmt::format("no value {} in a graph of {} values", id, g.size()));
  return Value{id};
}

std::vector<Value> values_of(const Graph& g, const std::vector<int32_t>& ids) {
  std::vector<Value> r;
  for (int32_t id : ids) r.push_back(value_of(g, id));
  return r;
}

std::vector<int32_t> ids(const std::vector<Value>& values) {
  std::vector<int32_t> r;
  for (Value v : values) r.push_back(v.id);
  return r;
}

py::tuple type_of(const Graph& g, int32_t id) {
  const auto t = g.type(value_of(g, id));
  return py::make_tuple(std::string(graph::dtype_name(t.dtype)), t.shape);
}

}  // namespace

void bind_graph(py::module_& m) {
  // The front ends map ops of one signature by rule rather than one handler each: PyTorch spells a built-in op that
  // takes one tensor and an integer `axis` as f(input, dim) (frontend/torch/torch_ops.py).
  m.def("ops_along_one_axis", [] {
    std::vector<std::string> names;
    for (std::string_view name : graph::ops_along_one_axis()) names.emplace_back(name);
    return names;
  }, "The built-in ops of one tensor input and one integer attribute `axis`, as the graph's op table names them");
  py::class_<Graph>(m, "Graph", "spire's graph IR: SSA values (ints) made by ops, with static shapes and dtypes")
      .def(py::init<>())
      .def_static("parse", [](const std::string& text) { return graph::parse(text); }, py::arg("text"),
                  "Parses graph text (raises spire.GraphError with line and column)")
      .def("text", [](const Graph& g) { return graph::print(g); }, "The canonical text form")
      .def("__str__", [](const Graph& g) { return graph::print(g); })
      .def("__len__", &Graph::size)
      .def("input", [](Graph& g, const std::string& name, const std::string& dtype, const graph::Shape& shape) {
             return g.input(name, dtype_of(dtype), shape).id;
           }, py::arg("name"), py::arg("dtype"), py::arg("shape"))
      .def("parameter", [](Graph& g, const std::string& name, const std::string& dtype, const graph::Shape& shape) {
             return g.parameter(name, dtype_of(dtype), shape).id;
           }, py::arg("name"), py::arg("dtype"), py::arg("shape"))
      .def("constant", [](Graph& g, double value, const std::string& dtype, const graph::Shape& shape) {
             return g.constant(value, dtype_of(dtype), shape).id;
           }, py::arg("value"), py::arg("dtype"), py::arg("shape") = graph::Shape{},
           "A scalar fill value broadcast to `shape` (the IR holds no literal tensors)")
      .def("op", [](Graph& g, const std::string& op, const std::vector<int32_t>& inputs, const py::dict& attrs,
                    const std::string& name) {
             auto kind = graph::op_from_name(op);
             if (!kind) throw graph::GraphError(fmt::format("spire has no op '{}'", op));
             std::vector<Value> in;
             for (int32_t id : inputs) in.push_back(value_of(g, id));
             graph::Attrs a;
             for (const auto& [k, v] : attrs) a.set(k.cast<std::string>(), attr_value(k.cast<std::string>(), v));
             return g.add_node(*kind, in, a, name).id;
           }, py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("name") = "",
           "Appends an op by its table name; its shape rule runs at once (spire.GraphError when inputs do not fit)")
      .def("grid_sample", [](Graph& g, int32_t x, int32_t grid, int32_t image_starts, const std::string& mode,
                             const std::string& padding, bool align_corners) {
             const graph::GridSampleOptions o{mode, padding, align_corners};
             const std::string refusal = graph::grid_sample_refusal(g.type(value_of(g, x)), g.type(value_of(g, grid)), o);
             if (!refusal.empty()) throw py::value_error(refusal);
             return graph::grid_sample(g, value_of(g, x), value_of(g, grid), value_of(g, image_starts), o).id;
           }, py::arg("x"), py::arg("grid"), py::arg("image_starts"), py::arg("mode"), py::arg("padding"),
           py::arg("align_corners"),
           "PyTorch's grid_sample as graph ops (ir/graph/composites/grid_sample.h); image_starts: a [N, 1, 1] f32 value "
           "holding b * H * W for image b. ValueError naming what it does not take")
      .def("output", [](Graph& g, const std::string& name, int32_t v) { g.output(name, value_of(g, v)); })
      .def("rename", [](Graph& g, int32_t v, const std::string& name) { return g.name(value_of(g, v), name).id; })
      .def("type", &type_of, py::arg("value"), "(dtype name, shape) of a value")
      .def("name", [](const Graph& g, int32_t v) { return g.node(value_of(g, v)).name; })
      .def("op_name", [](const Graph& g, int32_t v) { return std::string(graph::op_name(g.node(value_of(g, v)).op)); })
      .def("find", [](const Graph& g, const std::string& name) -> py::object {
             auto v = g.find(name);
             return v ? py::object(py::int_(v->id)) : py::object(py::none());
           })
      .def("inputs", [](const Graph& g) {
             std::vector<std::string> r;
             for (Value v : g.inputs()) r.push_back(g.node(v).name);
             return r;
           })
      .def("parameters", [](const Graph& g) {
             std::vector<std::string> r;
             for (Value v : g.parameters()) r.push_back(g.node(v).name);
             return r;
           })
      .def("output_type", [](const Graph& g, const std::string& name) {
             auto v = g.find_output(name);
             if (!v) throw py::key_error(fmt::format("the graph has no output '{}'", name));
             return type_of(g, v->id);
           }, py::arg("name"), "(dtype name, shape) of an output")
      .def("outputs", [](const Graph& g) {
             std::vector<std::string> r;
             for (const auto& o : g.outputs()) r.push_back(o.name);
             return r;
           })
      .def("grad", [](Graph& g, int32_t loss, const std::vector<int32_t>& wrt) {
             std::vector<Value> w;
             for (int32_t id : wrt) w.push_back(value_of(g, id));
             std::vector<int32_t> r;
             for (Value v : autograd::grad(g, value_of(g, loss), w)) r.push_back(v.id);
             return r;
           }, py::arg("loss"), py::arg("wrt"),
           "Appends the backward graph of `loss` (a float scalar) and returns d loss / d w for each value of `wrt`")
      .def("sgd_step", [](Graph& g, const std::vector<int32_t>& params, const std::vector<int32_t>& grads, double lr,
                          double momentum, double weight_decay) {
             autograd::SgdOptions o{.lr = lr, .momentum = momentum, .weight_decay = weight_decay};
             return ids(autograd::sgd_step(g, values_of(g, params), values_of(g, grads), o));
           }, py::arg("params"), py::arg("grads"), py::arg("lr"), py::arg("momentum") = 0.0,
           py::arg("weight_decay") = 0.0,
           "Appends torch.optim.SGD's update (state momentum.<param>) as state updates; returns the new values")
      .def("adam_step", [](Graph& g, const std::vector<int32_t>& params, const std::vector<int32_t>& grads, double lr,
                           double beta1, double beta2, double eps, double weight_decay, bool f64_scalars) {
             autograd::AdamOptions o{.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                                     .scalar_dtype = f64_scalars ? graph::DType::F64 : graph::DType::F32};
             return ids(autograd::adam_step(g, values_of(g, params), values_of(g, grads), o));
           }, py::arg("params"), py::arg("grads"), py::arg("lr"), py::arg("beta1") = 0.9, py::arg("beta2") = 0.999,
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("f64_scalars") = true,
           "Appends torch.optim.Adam's update (states adam.exp_avg.<param>, adam.exp_avg_sq.<param>, adam.step)")
      .def("states", [](const Graph& g) {
             std::vector<std::string> r;
             for (Value v : g.states()) r.push_back(g.node(v).name);
             return r;
           })
      .def("evaluate", [](const Graph& g, const py::dict& feeds, const std::string& dtype) {
             std::map<std::string, graph::Tensor> in;
             for (const auto& [k, v] : feeds) {
               const std::string name = k.cast<std::string>();
               in[name] = to_tensor(v.cast<py::array>(), g.type(g.at(name)), name);
             }
             std::map<std::string, graph::Tensor> out;
             {
               py::gil_scoped_release release;
               out = graph::evaluate(g, in, dtype_of(dtype));
             }
             py::dict r;
             for (const auto& [k, t] : out) r[py::str(k)] = to_numpy(t);
             return r;
           }, py::arg("feeds"), py::arg("dtype") = "f64",
           "The reference evaluator on the CPU: every output (and state update) by name");
}

}  // namespace spire::python
