// A training step from a graph text file: the file's graph with the gradient of its output named "loss" with
// respect to every parameter appended as outputs "grad.<parameter>". For tests that run example models.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "autograd/grad.h"
#include "ir/graph/text_form.h"

namespace spire::testing_support {

inline graph::Graph graph_file_step(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream text;
  text << f.rdbuf();
  graph::Graph g = graph::parse(text.str());
  graph::Value loss;
  for (const auto& o : g.outputs())
    if (o.name == "loss") loss = o.value;
  if (!loss.valid()) throw std::runtime_error(path + " has no output named loss");
  const auto params = g.parameters();
  const auto grads = autograd::grad(g, loss, params);
  for (size_t i = 0; i < params.size(); ++i) g.output("grad." + g.node(params[i]).name, grads[i]);
  return g;
}

}  // namespace spire::testing_support
