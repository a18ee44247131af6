// Custom ops from Python, as `--ops` loads them: an op file, or the same fields as keyword arguments (a reference
// and gradients as graph-op expressions, the kernel as GLSL for Vulkan devices). Once registered, an op builds like a
// built-in one: Graph.op(name, ...), graph text, autograd, lowering.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "extend/custom_op.h"
#include "extend/op_file.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace spire::python {

void bind_custom_ops(py::module_& m) {
  m.def("load_ops", &ext::load_ops, py::arg("path"),
        "Registers every op of an op file, or of every *.op file in a directory (as --ops); returns their names");
  m.def("has_op", [](const std::string& name) { return graph::op_from_name(name).has_value(); }, py::arg("name"),
        "Whether an op of that name (built-in or custom) exists");
  m.def("custom_op",
        [](const std::string& name, const std::vector<std::string>& inputs, const std::string& reference,
           const std::map<std::string, std::string>& gradient, const std::string& glsl, uint32_t elements_per_workgroup,
           const std::string& dtype, bool elementwise, double tolerance, double gradient_tolerance) {
          ext::CustomOp op{.name = name, .inputs = inputs};
          op.reference_expression = reference;
          op.gradient_expressions = gradient;
          op.glsl = glsl;
          op.glsl_name = name + ".comp";
          op.elements_per_workgroup = elements_per_workgroup;
          if (!dtype.empty()) {
            auto d = graph::dtype_from_name(dtype);
            if (!d) throw py::type_error(fmt::format("'{}' is not a spire dtype", dtype));
            op.dtype = *d;
          }
          op.elementwise = elementwise;
          op.tolerance = tolerance;
          op.gradient_tolerance = gradient_tolerance;
          ext::register_custom_op(std::move(op));
          return name;
        },
        py::arg("name"), py::arg("inputs") = std::vector<std::string>{"x"}, py::arg("reference"),
        py::arg("gradient") = std::map<std::string, std::string>{}, py::arg("glsl"),
        py::arg("elements_per_workgroup") = 0, py::arg("dtype") = "f32", py::arg("elementwise") = true,
        py::arg("tolerance") = 1e-6, py::arg("gradient_tolerance") = 1e-5,
        "Registers a custom op: reference and gradients as graph-op expressions over the inputs (gradients also over "
        "y and grad), the kernel as GLSL (glsl_kernel.h's contract; Vulkan devices). Raises spire.GraphError for a "
        "taken name, a bad expression or a GLSL error.");
}

}  // namespace spire::python
