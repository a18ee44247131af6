#include "frontend/nn/module.h"

namespace spire::nn {

Scope Scope::child(std::string_view name) const {
  return Scope(*g_, dtype_, prefix_ + std::string(name) + ".");
}

graph::Value Scope::parameter(std::string_view name, graph::Shape shape) const {
  return g_->parameter(prefix_ + std::string(name), dtype_, std::move(shape));
}

std::vector<ParameterSpec> parameters(const Module& m, const std::string& prefix) {
  std::vector<ParameterSpec> out;
  m.collect_parameters(prefix, out);
  return out;
}

}  // namespace spire::nn
