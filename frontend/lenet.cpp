#include "frontend/lenet.h"

#include <stdexcept>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "frontend/nn/init.h"

namespace spire::nn {

LeNet make_lenet(const std::string& relu_op) {
  return LeNet{
      Sequential(Conv2d(1, 6, 5, {.padding = 2}), ReLU(relu_op), MaxPool2d(2), Conv2d(6, 16, 5, {.padding = 2}),
                 ReLU(relu_op), MaxPool2d(2)),
      Sequential(Flatten(), Linear(16 * 7 * 7, 120), ReLU(relu_op), Linear(120, 84), ReLU(relu_op), Linear(84, 10)),
  };
}

graph::Value LeNet::forward(const Scope& s, graph::Value x) const {
  return fc.forward(s.child("fc"), convnet.forward(s.child("convnet"), x));
}

std::vector<ParameterSpec> LeNet::parameters() const {
  std::vector<ParameterSpec> out;
  convnet.collect_parameters("convnet.", out);
  fc.collect_parameters("fc.", out);
  return out;
}

std::string LeNet::repr() const {
  return fmt::format("LeNet(\n  (convnet): {}\n  (fc): {}\n)", convnet.repr(2), fc.repr(2));
}

graph::Graph build_lenet_graph(const LeNetGraphOptions& options) {
  if (options.batch <= 0) throw std::invalid_argument(fmt::format("LeNet: batch must be positive, got {}", options.batch));
  if (!graph::is_float(options.dtype)) {
    throw std::invalid_argument(fmt::format("LeNet: dtype must be f32 or f64, not {}", graph::dtype_name(options.dtype)));
  }
  graph::Graph g;
  const graph::Value x = g.input("x", options.dtype, {options.batch, 1, 28, 28});
  const graph::Value y = g.input("y", graph::DType::I64, {options.batch});
  const LeNet model = make_lenet(options.relu_op);
  const graph::Value logits = model.forward(Scope(g, options.dtype), x);
  const graph::Value loss = g.op("cross_entropy", {logits, y});
  g.output("logits", logits);
  g.output("loss", loss);
  if (!options.backward) return g;

  const std::vector<graph::Value> params = g.parameters();
  const std::vector<graph::Value> grads = autograd::grad(g, loss, params);
  for (size_t i = 0; i < params.size(); ++i) g.output("grad." + g.node(params[i]).name, grads[i]);
  if (options.sgd) autograd::sgd_step(g, params, grads, options.sgd_options);
  return g;
}

NamedTensors lenet_initial_parameters(uint64_t seed, graph::DType dtype) {
  return init_parameters(make_lenet().parameters(), dtype, seed);
}

NamedTensors lenet_parameters_from(const std::map<std::string, graph::Tensor>& loaded, const std::string& source,
                                   graph::DType dtype) {
  NamedTensors out;
  for (const ParameterSpec& p : make_lenet().parameters()) {
    auto it = loaded.find(p.name);
    if (it == loaded.end()) throw std::runtime_error(fmt::format("{}: no tensor '{}' (LeNet needs it)", source, p.name));
    graph::Tensor t = it->second;
    if (t.shape != p.shape) {
      // The one mismatch users meet in practice: weights trained before conv2 got its padding.
      const bool old_lenet = p.name == "fc.1.weight" && t.shape == graph::Shape{120, 16 * 5 * 5};
      throw std::runtime_error(fmt::format(
          "{}: parameter '{}' has shape {} but LeNet expects {}{}", source, p.name, graph::shape_to_string(t.shape),
          graph::shape_to_string(p.shape),
          old_lenet ? " (these are weights of spire's earlier LeNet, whose unpadded conv2 gave 16*5*5 = 400 features; "
                      "the seed article's pads both convolutions, giving 16*7*7 = 784: train them again)"
                    : ""));
    }
    if (t.dtype != dtype) {  // e.g. f64 checkpoints from PyTorch's double models, rounded to f32
      t.dtype = dtype;
      t.round_to_dtype();
    }
    out.emplace_back(p.name, std::move(t));
  }
  return out;
}

}  // namespace spire::nn
