#include "frontend/nn/layers.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::nn {
namespace {

void require_positive(const char* module, const char* what, int64_t v) {
  if (v <= 0) throw std::invalid_argument(fmt::format("{}: {} must be positive, got {}", module, what, v));
}

// PyTorch's default bound for both weight and bias: 1/sqrt(fan_in) (0 for an empty fan-in).
double default_bound(int64_t fan_in) { return fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0; }

}  // namespace

// ---- Conv2d

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size), options_(options) {
  require_positive("Conv2d", "in_channels", in_channels);
  require_positive("Conv2d", "out_channels", out_channels);
  require_positive("Conv2d", "kernel_size", kernel_size);
  require_positive("Conv2d", "stride", options.stride);
  require_positive("Conv2d", "dilation", options.dilation);
  require_positive("Conv2d", "groups", options.groups);
  if (options.padding < 0) throw std::invalid_argument("Conv2d: padding must not be negative");
  if (in_channels % options.groups != 0 || out_channels % options.groups != 0) {
    throw std::invalid_argument(fmt::format("Conv2d: in_channels {} and out_channels {} must be divisible by groups {}",
                                            in_channels, out_channels, options.groups));
  }
}

graph::Value Conv2d::forward(const Scope& s, graph::Value x) const {
  graph::Graph& g = s.graph();
  const graph::Value w =
      s.parameter("weight", {out_channels_, in_channels_ / options_.groups, kernel_size_, kernel_size_});
  graph::Conv2dOptions opt;
  opt.stride = {options_.stride, options_.stride};
  opt.padding = {options_.padding, options_.padding};
  opt.dilation = {options_.dilation, options_.dilation};
  opt.groups = options_.groups;
  graph::Value y = g.conv2d(x, w, opt);
  if (options_.bias) {
    // The bias broadcasts over batch and space: [C] viewed as [1, C, 1, 1].
    const graph::Value b = s.parameter("bias", {out_channels_});
    y = g.add(y, g.reshape(b, {1, out_channels_, 1, 1}));
  }
  return y;
}

void Conv2d::collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const {
  const double bound = default_bound(fan_in());
  out.push_back({prefix + "weight", {out_channels_, in_channels_ / options_.groups, kernel_size_, kernel_size_}, bound});
  if (options_.bias) out.push_back({prefix + "bias", {out_channels_}, bound});
}

std::string Conv2d::repr(int) const {
  std::string s = fmt::format("Conv2d({}, {}, kernel_size=({}, {}), stride=({}, {})", in_channels_, out_channels_,
                              kernel_size_, kernel_size_, options_.stride, options_.stride);
  if (options_.padding != 0) s += fmt::format(", padding=({}, {})", options_.padding, options_.padding);
  if (options_.dilation != 1) s += fmt::format(", dilation=({}, {})", options_.dilation, options_.dilation);
  if (options_.groups != 1) s += fmt::format(", groups={}", options_.groups);
  if (!options_.bias) s += ", bias=False";
  return s + ")";
}

// ---- Linear

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features_(in_features), out_features_(out_features), bias_(bias) {
  require_positive("Linear", "in_features", in_features);
  require_positive("Linear", "out_features", out_features);
}

graph::Value Linear::forward(const Scope& s, graph::Value x) const {
  const graph::Value w = s.parameter("weight", {out_features_, in_features_});
  const graph::Value b = bias_ ? s.parameter("bias", {out_features_}) : graph::Value{};
  return s.graph().linear(x, w, b);
}

void Linear::collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const {
  const double bound = default_bound(in_features_);
  out.push_back({prefix + "weight", {out_features_, in_features_}, bound});
  if (bias_) out.push_back({prefix + "bias", {out_features_}, bound});
}

std::string Linear::repr(int) const {
  return fmt::format("Linear(in_features={}, out_features={}, bias={})", in_features_, out_features_,
                     bias_ ? "True" : "False");
}

// ---- activations, pooling, flatten

graph::Value ReLU::forward(const Scope& s, graph::Value x) const {
  return op_ == "relu" ? s.graph().relu(x) : s.graph().op(op_, {x});
}
graph::Value SiLU::forward(const Scope& s, graph::Value x) const { return s.graph().silu(x); }

MaxPool2d::MaxPool2d(int64_t kernel_size, int64_t stride, int64_t padding)
    : kernel_size_(kernel_size), stride_(stride == 0 ? kernel_size : stride), padding_(padding) {
  require_positive("MaxPool2d", "kernel_size", kernel_size);
  require_positive("MaxPool2d", "stride", stride_);
  if (padding < 0 || 2 * padding > kernel_size) {
    throw std::invalid_argument(
        fmt::format("MaxPool2d: padding {} must be between 0 and half the kernel size {}", padding, kernel_size));
  }
}

graph::Value MaxPool2d::forward(const Scope& s, graph::Value x) const {
  graph::Pool2dOptions opt;
  opt.kernel = {kernel_size_, kernel_size_};
  opt.stride = {stride_, stride_};
  opt.padding = {padding_, padding_};
  return s.graph().max_pool2d(x, opt);
}

std::string MaxPool2d::repr(int) const {
  return fmt::format("MaxPool2d(kernel_size={}, stride={}, padding={}, dilation=1, ceil_mode=False)", kernel_size_,
                     stride_, padding_);
}

graph::Value Flatten::forward(const Scope& s, graph::Value x) const {
  return s.graph().flatten(x, start_dim_, end_dim_);
}

std::string Flatten::repr(int) const { return fmt::format("Flatten(start_dim={}, end_dim={})", start_dim_, end_dim_); }

// ---- Sequential

graph::Value Sequential::forward(const Scope& s, graph::Value x) const {
  for (size_t i = 0; i < children_.size(); ++i) {
    const std::string index = std::to_string(i);
    const graph::Value y = children_[i]->forward(s.child(index), x);
    // Name each child's result after the child ("convnet.2"), as torch.fx does, so the printed graph reads
    // like the model. A child that returns its input or a leaf creates no value of its own to name; at the
    // top level (no prefix) the name would start with a digit, which the text form does not allow.
    const std::string name = s.prefix() + index;
    const bool nameable = std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_';
    if (nameable && y != x && !graph::is_leaf(s.graph().node(y).op)) s.graph().name(y, name);
    x = y;
  }
  return x;
}

void Sequential::collect_parameters(const std::string& prefix, std::vector<ParameterSpec>& out) const {
  for (size_t i = 0; i < children_.size(); ++i) {
    children_[i]->collect_parameters(prefix + std::to_string(i) + ".", out);
  }
}

std::string Sequential::repr(int indent) const {
  const std::string pad(size_t(indent) + 2, ' ');
  std::string s = "Sequential(\n";
  for (size_t i = 0; i < children_.size(); ++i) {
    s += fmt::format("{}({}): {}\n", pad, i, children_[i]->repr(indent + 2));
  }
  return s + std::string(size_t(indent), ' ') + ")";
}

}  // namespace spire::nn
