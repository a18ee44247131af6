// The layers LeNet-style models need, with PyTorch's names, defaults and parameter layouts:
// Conv2d, Linear, ReLU, SiLU, MaxPool2d, Flatten and Sequential.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "frontend/nn/module.h"

namespace spire::nn {

struct Conv2dOptions {  // torch.nn.Conv2d's keyword arguments, in its order
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = true;
};

// torch.nn.Conv2d with a square kernel: weight [out, in/groups, k, k], bias [out].
// Default init: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * k * k
// (kaiming_uniform_(a=sqrt(5)) gives exactly that bound for the weight).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options = {});
  graph::Value forward(const Scope& s, graph::Value x) const override;
  void collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const override;
  std::string repr(int indent = 0) const override;

  int64_t fan_in() const { return in_channels_ / options_.groups * kernel_size_ * kernel_size_; }

 private:
  int64_t in_channels_, out_channels_, kernel_size_;
  Conv2dOptions options_;
};

// torch.nn.Linear: y = x W^T + b, weight [out, in], bias [out]; init U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  graph::Value forward(const Scope& s, graph::Value x) const override;
  void collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const override;
  std::string repr(int indent = 0) const override;

 private:
  int64_t in_features_, out_features_;
  bool bias_;
};

// ReLU(), or with `op` the name of another op computing it (a custom op such as the seed article's Triton
// ReLU made a spire op): the graph then holds that op where it would hold relu.
class ReLU : public Module {
 public:
  explicit ReLU(std::string op = "relu") : op_(std::move(op)) {}
  graph::Value forward(const Scope& s, graph::Value x) const override;
  std::string repr(int indent = 0) const override { return op_ == "relu" ? "ReLU()" : "ReLU(op=" + op_ + ")"; }

 private:
  std::string op_;
};

class SiLU : public Module {
 public:
  graph::Value forward(const Scope& s, graph::Value x) const override;
  std::string repr(int indent = 0) const override { return "SiLU()"; }
};

// torch.nn.MaxPool2d with a square window; stride 0 means stride = kernel_size (PyTorch's default).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  graph::Value forward(const Scope& s, graph::Value x) const override;
  std::string repr(int indent = 0) const override;

 private:
  int64_t kernel_size_, stride_, padding_;
};

// torch.nn.Flatten: merges dims start_dim..end_dim (defaults 1..-1: everything but the batch).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  graph::Value forward(const Scope& s, graph::Value x) const override;
  std::string repr(int indent = 0) const override;

 private:
  int64_t start_dim_, end_dim_;
};

// torch.nn.Sequential: children applied in order, named "0", "1", ... in the state_dict.
//   Sequential convnet(Conv2d(1, 6, 5, {.padding = 2}), ReLU(), MaxPool2d(2));
// (A single Sequential argument copies it, as for any C++ type; use append() to nest one.)
class Sequential : public Module {
 public:
  Sequential() = default;
  template <typename... Ms>
    requires(sizeof...(Ms) >= 1 && (std::derived_from<std::remove_cvref_t<Ms>, Module> && ...) &&
             !(sizeof...(Ms) == 1 && (std::same_as<std::remove_cvref_t<Ms>, Sequential> && ...)))
  explicit Sequential(Ms&&... modules) {
    (append(std::forward<Ms>(modules)), ...);
  }

  template <typename M>
    requires std::derived_from<std::remove_cvref_t<M>, Module>
  Sequential& append(M&& module) {
    children_.push_back(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(module)));
    return *this;
  }

  size_t size() const { return children_.size(); }
  const Module& operator[](size_t i) const { return *children_.at(i); }

  graph::Value forward(const Scope& s, graph::Value x) const override;
  void collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const override;
  std::string repr(int indent = 0) const override;

 private:
  // Modules are immutable once built, so copies of a Sequential may share them.
  std::vector<std::shared_ptr<const Module>> children_;
};

}  // namespace spire::nn
