// nn modules: PyTorch-style layers that build graph IR.
//
// A module is an immutable description (Conv2d(1, 6, 5, {.padding = 2})); forward() appends its ops to a
// graph through a Scope, which knows the graph, the dtype and the state_dict prefix. Parameters are graph
// Parameter leaves named exactly as PyTorch's state_dict names them ("convnet.0.weight"), so checkpoints
// move between spire and PyTorch by name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::nn {

using NamedTensors = std::vector<std::pair<std::string, graph::Tensor>>;

// Where a module builds its ops. Graph names start with a letter or '_', so a Sequential whose children
// have parameters needs a prefix ("model.") where PyTorch's bare Sequential would say "0.weight".
class Scope {
 public:
  Scope(graph::Graph& g, graph::DType dtype, std::string prefix = {})
      : g_(&g), dtype_(dtype), prefix_(std::move(prefix)) {}

  graph::Graph& graph() const { return *g_; }
  graph::DType dtype() const { return dtype_; }
  const std::string& prefix() const { return prefix_; }

  // The scope of a child module: prefix "<prefix><name>." (a Sequential's children are named "0", "1", ...).
  Scope child(std::string_view name) const;
  // A new Parameter leaf "<prefix><name>" of this scope's dtype; GraphError if the name is taken.
  graph::Value parameter(std::string_view name, graph::Shape shape) const;

 private:
  graph::Graph* g_;
  graph::DType dtype_;
  std::string prefix_;
};

// A parameter as PyTorch's state_dict lists it, with its default initialisation: U(-init_bound, init_bound).
struct ParameterSpec {
  std::string name;
  graph::Shape shape;
  double init_bound = 0.0;
};

class Module {
 public:
  virtual ~Module() = default;

  // Appends this module's computation on x to s.graph(); returns the result.
  virtual graph::Value forward(const Scope& s, graph::Value x) const = 0;

  // Appends this module's parameters (names prefixed with `prefix`) in state_dict order.
  virtual void collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const {}

  // PyTorch's repr: "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))".
  virtual std::string repr(int indent = 0) const = 0;
};

// Every parameter of `m`, names prefixed with `prefix`, in state_dict order.
std::vector<ParameterSpec> parameters(const Module& m, const std::string& prefix = {});

}  // namespace spire::nn
