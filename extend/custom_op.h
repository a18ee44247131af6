// Custom ops: a user's op, defined outside spire's sources, that every layer sees like a built-in one.
//
// The op has a name, inputs, a float64 CPU reference (the evaluator's and the op harness's oracle, like the
// seed articles' CPU fallback), a gradient written with graph ops (built-in or other custom ops), and a
// kernel: written with spire's kernel builder in C++ (runs on every backend) or as a GLSL compute shader
// (Vulkan devices only; compiling for cuda:N is refused naming the op and the devices that can run it).
// It then appears in graph text by its name, goes through autograd, the op harness, fusion (as an opaque
// node), memory planning and the recorded stream like any op.
//
//   ext::CustomOp relu{.name = "my_relu", .inputs = {"x"}};
//   relu.reference_expression = "maximum(x, 0)";
//   relu.gradient_expressions = {{"x", "where(compare(x, 0, mode=gt), grad, 0)"}};
//   relu.kernel = [](const lowering::CustomKernelRequest& r) { ... return kb.finish(); };
//   ext::register_custom_op(std::move(relu));
//   // g.op("my_relu", {x}) now builds it
//
// Users without a C++ toolchain write the same thing as an op file (op_file.h) and load it with --ops.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "lowering/custom_kernels.h"

namespace spire::ext {

// Members default-initialized with {} so that designated initializers may leave them out without a
// -Wmissing-field-initializers warning.
struct CustomOp {
  std::string name;                           // its name in graph text: letters, digits, '_'
  std::vector<std::string> inputs = {"x"};    // input names (their count is the op's arity)

  // Result type from the input types. Empty: the type the reference expression yields, else input 0's type.
  std::function<graph::TensorType(std::span<const graph::TensorType>)> shape{};

  // The float64 CPU reference: exactly one of a C++ function (returns a tensor of `result`'s type) or an
  // expression over the inputs in graph ops (op_expression.h).
  std::function<graph::Tensor(std::span<const graph::Tensor* const> inputs, const graph::TensorType& result)> reference{};
  std::string reference_expression{};

  // The gradient: a C++ VJP (appends ops to g; one Value per input, invalid for none), or one expression per
  // input name over the inputs, `y` (the result) and `grad` (the result's gradient). Neither: not differentiable.
  std::function<std::vector<graph::Value>(graph::Graph& g, std::span<const graph::Value> inputs, graph::Value y,
                                          graph::Value grad)>
      vjp{};
  std::map<std::string, std::string> gradient_expressions{};

  // The kernel: exactly one of a kernel-builder function or GLSL source (see glsl_kernel.h for its contract).
  std::function<kir::Kernel(const lowering::CustomKernelRequest&)> kernel{};
  std::string glsl{};
  std::string glsl_name = "kernel.comp";      // the GLSL file's name, for messages
  uint32_t elements_per_workgroup = 0;        // 0: one element per invocation
  // As triton.autotune's configs: the candidates `--tune` times (a kernel function reads request.config; a GLSL
  // kernel is compiled once per config, each value a macro SPIRE_CONFIG_<name>); the first is used until tuned.
  // Example: {{"wg", 64}}, {{"wg", 256}}.
  std::vector<lowering::heavy::Config> configs{};
  // Optional: the workgroup count when it does not follow from the element count.
  std::function<uint64_t(const lowering::CustomKernelRequest&)> groups{};

  // The kernel indexes every input at the result's index: inputs must have the result's shape (broadcast them
  // first). False for kernels that index otherwise (give `shape` then).
  bool elementwise = true;
  // The one dtype the kernel is written for (inputs and result), as a GLSL kernel is; empty: any.
  std::optional<graph::DType> dtype{};

  // Max-norm relative tolerance (op_table.h's Tolerance) of the result and of the gradients in float32.
  double tolerance = 1e-6, gradient_tolerance = 1e-5;
  std::string tolerance_why = "the custom op's author's bound";
  // The op harness's cases: one input type per input each. Empty: one case of f32[7,33] per input.
  std::vector<std::vector<graph::TensorType>> test_cases{};
  double test_lo = -1, test_hi = 1;           // where the harness draws inputs from
};

// Registers the op (graph rules and kernel); returns its OpKind. Throws graph::GraphError naming the op and
// the problem: a taken name, a bad expression or one naming an unknown input, a GLSL compile error, neither
// or both kinds of reference or kernel. For start-up: not while other threads compile graphs.
graph::OpKind register_custom_op(CustomOp op);

}  // namespace spire::ext
