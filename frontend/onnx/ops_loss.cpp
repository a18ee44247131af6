// The loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX 12 and 13), over [N, C] or
// [N, C, d1.., dk] inputs with class indices [N] or [N, d1.., dk]. Both import as ops spire has: the picked
// log-probability is a sum over the class axis against a one-hot mask (class index == target), which also gives the
// weight of each target (weights absent: 1) and leaves targets equal to ignore_index, or outside [0, C), out of both
// the loss and the mean's denominator.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// loss from log-probabilities `logp` [N, C, d..] (input `target_input` holds the targets, `weight_input` the class
// weights when present); sets output 0.
void nll_loss(NodeContext& c, Value logp, int target_input, int weight_input) {
  auto& g = c.g();
  const graph::TensorType x = g.type(logp), t = c.type(target_input);
  if (x.rank() < 2) c.refuse(fmt::format("the input has rank {}; it must be [N, C] or [N, C, d1, ..]", x.rank()));
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    c.refuse(fmt::format("the target is {}; it must hold class indices (int32 or int64)", graph::dtype_name(t.dtype)));
  graph::Shape expect = x.shape;
  expect.erase(expect.begin() + 1);
  if (t.shape != expect)
    c.refuse(fmt::format("the target has shape {}; the input {} needs {}", graph::shape_to_string(t.shape),
                         graph::shape_to_string(x.shape), graph::shape_to_string(expect)));
  const int64_t classes = x.shape[1];
  // The class index along axis 1: [1, C, 1, ..].
  graph::Shape along(size_t(x.rank()), 1);
  along[1] = classes;
  graph::Tensor iota;
  iota.dtype = t.dtype;
  iota.shape = along;
  for (int64_t k = 0; k < classes; ++k) iota.data.push_back(double(k));
  graph::Shape unsqueezed = t.shape;
  unsqueezed.insert(unsqueezed.begin() + 1, 1);
  const Value target = g.reshape(c.value(target_input), unsqueezed);
  const Value one_hot = g.cast(g.compare(c.constant_value(iota, "class_index"), target, CompareMode::Eq), x.dtype);
  Value weight_of_class = one_hot;
  if (c.has_input(weight_input)) {
    if (c.type(weight_input).shape != graph::Shape{classes})
      c.refuse(fmt::format("the weights have shape {}; they need [{}]",
                           graph::shape_to_string(c.type(weight_input).shape), classes));
    weight_of_class = g.mul(one_hot, g.reshape(c.value(weight_input), along));
  }
  Value weight = g.sum(weight_of_class, {1});  // each target's weight; 0 outside [0, C)
  if (c.attr("ignore_index")) {  // a target equal to it counts nowhere (one outside [0, C) has no class already)
    const Value kept = g.compare(c.value(target_input), g.scalar(double(c.attr_int("ignore_index", 0)), t.dtype),
                                 CompareMode::Ne);
    weight = g.mul(weight, g.cast(kept, x.dtype));
  }
  const Value picked = g.sum(g.mul(logp, one_hot), {1});
  const Value loss = g.neg(g.mul(picked, weight));
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction == "none") return c.set_output(0, loss);
  if (reduction == "sum") return c.set_output(0, g.sum(loss));
  if (reduction != "mean") c.refuse(fmt::format("reduction '{}' (ONNX has none, sum and mean)", reduction));
  c.set_output(0, g.div(g.sum(loss), g.sum(weight)));
}


}  // namespace

void register_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = {[](NodeContext& c) { nll_loss(c, c.float_value(0), 1, 2); }, {}};
  t["SoftmaxCrossEntropyLoss"] = {[](NodeContext& c) {
                                    const Value scores = c.float_value(0);
                                    if (c.type(0).rank() < 2)
                                      c.refuse("the scores must be [N, C] or [N, C, d1, ..]");
                                    const Value logp = c.g().op("log_softmax", {scores}, {{"axis", int64_t(1)}});
                                    nll_loss(c, logp, 1, 2);
                                    if (c.output_used(1)) c.set_output(1, logp);
                                  },
                                  {}};
}

}  // namespace spire::onnx_import
