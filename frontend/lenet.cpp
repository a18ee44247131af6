#include "frontend/lenet.h"

#include <stdexcept>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "frontend/nn/init.h"

namespace spire::nn {

LeNet make_lenet() {
  return LeNet{
      Sequential(Conv2d(1, 6, 5, {.padding = 2}), ReLU(), MaxPool2d(2), Conv2d(6, 16, 5), ReLU(), MaxPool2d(2)),
      Sequential(Flatten(), Linear(16 * 5 * 5, 120), ReLU(), Linear(120, 84), ReLU(), Linear(84, 10)),
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
  const LeNet model = make_lenet();
  const graph::Value logits = model.forward(Scope(g, options.dtype), x);
  const graph::Value loss = g.cross_entropy(logits, y);
  g.output("logits", logits);
  g.output("loss", loss);

  const std::vector<graph::Value> params = g.parameters();
  const std::vector<graph::Value> grads = autograd::grad(g, loss, params);
  for (size_t i = 0; i < params.size(); ++i) g.output("grad." + g.node(params[i]).name, grads[i]);
  if (options.sgd) autograd::sgd_step(g, params, grads, options.sgd_options);
  return g;
}

NamedTensors lenet_initial_parameters(uint64_t seed, graph::DType dtype) {
  return init_parameters(make_lenet().parameters(), dtype, seed);
}

}  // namespace spire::nn
