// register_custom_op: turns a CustomOp into the op table's closures (graph::UserOpRules) and a lowering kernel.
#include "extend/custom_op.h"

#include <fmt/format.h>

#include <algorithm>

#include "extend/glsl_kernel.h"
#include "extend/op_expression.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"

namespace spire::ext {

namespace {

std::string types_text(std::span<const graph::TensorType> types) {
  std::string s;
  for (const auto& t : types) s += (s.empty() ? "" : ", ") + t.to_string();
  return s;
}

// The expression applied to inputs of the given types, on a scratch graph whose inputs carry the op's names.
graph::Graph expression_graph(const std::vector<std::string>& names, std::span<const graph::TensorType> types,
                              const OpExpression& e) {
  graph::Graph g;
  std::map<std::string, graph::Value> bound;
  for (size_t i = 0; i < names.size(); ++i) bound[names[i]] = g.input(names[i], types[i].dtype, types[i].shape);
  g.output("result", e.build(g, bound));
  return g;
}

void check_names(const CustomOp& op, const OpExpression& e, const std::vector<std::string>& allowed, const std::string& what) {
  for (const std::string& n : e.names())
    if (std::find(allowed.begin(), allowed.end(), n) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw graph::GraphError(fmt::format("custom op {}: its {} `{}` reads '{}', which is not one of {}", op.name, what,
                                          e.text(), n, list));
    }
}

graph::UserOpRules rules_for(const CustomOp& op) {
  graph::UserOpRules r;
  r.name = op.name;
  r.arity = int(op.inputs.size());
  r.forward_f32 = op.tolerance;
  r.backward_f32 = op.gradient_tolerance;
  r.tolerance_why = op.tolerance_why;
  r.test_cases = op.test_cases;
  r.test_domain = {op.test_lo, op.test_hi};

  std::optional<OpExpression> reference_expr;
  if (!op.reference_expression.empty()) {
    try {
      reference_expr = OpExpression::parse(op.reference_expression);
    } catch (const ExpressionError& e) {
      throw graph::GraphError(fmt::format("custom op {}: reference `{}`: {}", op.name, op.reference_expression, e.what()));
    }
    check_names(op, *reference_expr, op.inputs, "reference");
  }
  if (bool(op.reference) == reference_expr.has_value())
    throw graph::GraphError(fmt::format("custom op {}: give exactly one CPU reference, a C++ function or an expression", op.name));

  // Shape: the user's rule, or what the reference expression yields, or input 0's type.
  const std::string name = op.name;
  const std::vector<std::string> inputs = op.inputs;
  if (op.shape) {
    r.shape = [shape = op.shape](const graph::ShapeContext& c) { return shape(c.inputs); };
  } else if (reference_expr) {
    r.shape = [inputs, e = *reference_expr](const graph::ShapeContext& c) {
      try {
        graph::Graph g = expression_graph(inputs, c.inputs, e);
        return g.type(g.outputs().at(0).value);
      } catch (const graph::GraphError& err) {
        c.fail(fmt::format("its reference `{}` does not take inputs ({}): {}", e.text(), types_text(c.inputs), err.what()));
      }
    };
  } else {
    r.shape = [](const graph::ShapeContext& c) { return c.inputs[0]; };
  }

  if (op.reference) {
    r.reference = [name, f = op.reference](const graph::Node& n, std::span<const graph::Tensor* const> in) {
      graph::Tensor t = f(in, n.type);
      if (t.type() != n.type)
        throw graph::GraphError(fmt::format("custom op {} (node '{}'): its CPU reference returned {}, the result is {}", name,
                                            n.name, t.type().to_string(), n.type.to_string()));
      return t;
    };
  } else {
    r.reference = [inputs, e = *reference_expr](const graph::Node& n, std::span<const graph::Tensor* const> in) {
      std::vector<graph::TensorType> types;
      std::map<std::string, graph::Tensor> feed;
      for (size_t i = 0; i < in.size(); ++i) {
        types.push_back(in[i]->type());
        feed[inputs[i]] = *in[i];
      }
      graph::Graph g = expression_graph(inputs, types, e);
      return graph::evaluate(g, feed, graph::DType::F64).at("result");
    };
  }

  if (op.vjp && !op.gradient_expressions.empty())
    throw graph::GraphError(fmt::format("custom op {}: give its gradient once, as a C++ VJP or as expressions", op.name));
  if (op.vjp) {
    r.vjp = [f = op.vjp](graph::VjpContext& c) {
      const std::vector<graph::Value> in = c.g.node(c.out).inputs;
      return f(c.g, in, c.out, c.grad_out);
    };
  } else if (!op.gradient_expressions.empty()) {
    std::vector<std::optional<OpExpression>> grads(op.inputs.size());
    std::vector<std::string> allowed = op.inputs;
    allowed.push_back("y");
    allowed.push_back("grad");
    for (const auto& [input, text] : op.gradient_expressions) {
      auto it = std::find(op.inputs.begin(), op.inputs.end(), input);
      if (it == op.inputs.end())
        throw graph::GraphError(fmt::format("custom op {}: a gradient for '{}', which is not an input", op.name, input));
      try {
        grads[size_t(it - op.inputs.begin())] = OpExpression::parse(text);
      } catch (const ExpressionError& e) {
        throw graph::GraphError(fmt::format("custom op {}: gradient of {} `{}`: {}", op.name, input, text, e.what()));
      }
      check_names(op, *grads[size_t(it - op.inputs.begin())], allowed, "gradient of " + input);
    }
    r.vjp = [name, inputs, grads](graph::VjpContext& c) {
      const graph::Node node = c.g.node(c.out);
      std::map<std::string, graph::Value> bound{{"y", c.out}, {"grad", c.grad_out}};
      for (size_t i = 0; i < inputs.size(); ++i) bound[inputs[i]] = node.inputs[i];
      std::vector<graph::Value> out(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!grads[i] || !c.wants(i)) continue;
        out[i] = grads[i]->build(c.g, bound);
        if (c.g.type(out[i]) != c.g.type(node.inputs[i]))
          throw graph::GraphError(fmt::format("custom op {} (node '{}'): the gradient of {} `{}` is {}, the input is {}", name,
                                              node.name, inputs[i], grads[i]->text(), c.g.type(out[i]).to_string(),
                                              c.g.type(node.inputs[i]).to_string()));
      }
      return out;
    };
  }
  // What the kernel can take, checked on every node before any rule of the author's runs on it.
  r.shape = [name, inner = std::move(r.shape), elementwise = op.elementwise, dtype = op.dtype](const graph::ShapeContext& c) {
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (dtype && c.inputs[i].dtype != *dtype)
        c.fail(fmt::format("its kernel is written for {}; {} is not", graph::dtype_name(*dtype), c.describe_input(i)));
    graph::TensorType t = inner(c);
    if (dtype && t.dtype != *dtype)
      c.fail(fmt::format("its kernel is written for {}, but its result would be {}", graph::dtype_name(*dtype), t.to_string()));
    if (elementwise)
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (c.inputs[i].shape != t.shape)
          c.fail(fmt::format("its kernel reads every input at the result's index, so {} must have the result's shape {} "
                             "(broadcast it first)",
                             c.describe_input(i), graph::shape_to_string(t.shape)));
    return t;
  };
  return r;
}

lowering::CustomKernel kernel_for(const CustomOp& op) {
  if (bool(op.kernel) == !op.glsl.empty())
    throw graph::GraphError(fmt::format("custom op {}: give exactly one kernel, a kernel-builder function or GLSL", op.name));
  lowering::CustomKernel k;
  k.elements_per_workgroup = op.elements_per_workgroup;
  k.configs = op.configs;
  k.groups = op.groups;
  if (op.kernel) {
    k.build = op.kernel;
    k.source = "a C++ kernel-builder function";
  } else {
    const uint32_t bindings = uint32_t(op.inputs.size() + 1);
    for (const lowering::heavy::Config& c : op.configs) {
      GlslModule each = compile_glsl_kernel(op.glsl, op.glsl_name + " (" + c.text() + ")", bindings, &c);
      k.spirv_config_modules.push_back(std::move(each.words));
      k.spirv_config_workgroup_sizes.push_back(each.workgroup_size);
    }
    if (op.configs.empty()) {
      GlslModule m = compile_glsl_kernel(op.glsl, op.glsl_name, bindings);
      k.spirv_module = std::move(m.words);
      k.spirv_workgroup_size = m.workgroup_size;
    } else {  // the first config's, the untuned default
      k.spirv_module = k.spirv_config_modules.front();
      k.spirv_workgroup_size = k.spirv_config_workgroup_sizes.front();
    }
    k.source = "GLSL " + op.glsl_name;
  }
  return k;
}

}  // namespace

graph::OpKind register_custom_op(CustomOp op) {
  if (op.inputs.empty()) throw graph::GraphError(fmt::format("custom op {}: it takes no inputs", op.name));
  for (const std::string& in : op.inputs)
    if (!op.gradient_expressions.empty() && (in == "y" || in == "grad"))
      throw graph::GraphError(fmt::format("custom op {}: '{}' names the result or its gradient in expressions; call the "
                                          "input something else",
                                          op.name, in));
  // Everything that can fail does so before the op enters the table, so a bad op leaves no trace.
  graph::UserOpRules rules = rules_for(op);
  lowering::CustomKernel kernel = kernel_for(op);
  const graph::OpKind kind = graph::register_user_op(std::move(rules));
  lowering::register_custom_kernel(kind, std::move(kernel));
  return kind;
}

}  // namespace spire::ext
