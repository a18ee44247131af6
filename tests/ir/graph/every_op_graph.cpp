#include "tests/ir/graph/every_op_graph.h"

#include "ir/graph/op_table.h"
#include "tests/support/named_ops.h"

namespace spire::graph::testing {

Graph every_op_graph() {
  Graph g;
  const DType f = DType::F32;
  Value x = g.input("x", f, {2, 3, 8, 8});
  Value labels = g.input("labels", DType::I64, {2});
  Value w = g.parameter("convnet.0.weight", f, {4, 3, 3, 3});
  Value b = g.parameter("convnet.0.bias", f, {4});
  Value fc = g.parameter("fc.weight", f, {5, 16});
  Value mom = g.state("momentum.fc.weight", f, {5, 16}, 0.0);
  Value head_int8 = g.parameter("head.int8", DType::I32, {3, 4});  // 3 channels of 16 int8 weights, 4 a word
  Value head_scale = g.parameter("head.scale", f, {3});
  Value c = g.constant(0.25, f, {1, 4, 1, 1});

  Value conv = g.name(g.conv2d(x, w, {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1}), "conv1");
  Value biased = g.add(conv, g.reshape(b, {1, 4, 1, 1}));
  Value act = g.relu(g.mul(biased, c));
  Value e = g.sub(g.div(g.exp(g.neg(act)), g.add(act, 2.0)), g.sqrt(g.add(act, 1.0)));
  Value t = g.add(g.tanh(e), g.sigmoid(e));
  Value s = g.maximum(g.silu(t), g.minimum(g.gelu(t), g.log(g.add(g.pow(act, g.scalar(2.0, f)), 1.0))));
  Value cond = g.compare(s, act, CompareMode::Gt);
  Value sel = g.where(cond, s, act);
  Value pooled = g.max_pool2d(sel, {.kernel = {2, 2}});
  Value avg = g.avg_pool2d(pooled, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});  // [2,4,2,2]
  Value flat = g.flatten(avg, 1);                                                         // [2,16]
  Value logits = g.linear(flat, fc);                                                      // matmul + permute
  Value sm = softmax(g, logits, 1);
  Value lsm = log_softmax(g, logits, -1);
  Value loss = cross_entropy(g, g.add(sm, lsm), labels);
  Value red = g.add(g.mean(g.max(logits, {1}, true)), g.sum(g.sum_to(g.broadcast_to(flat, {3, 2, 16}), {2, 16})));
  Value total = g.add(loss, g.cast(g.cast(red, DType::F64), f));
  g.output("loss", total);
  g.output("positions", g.op("argmax", {logits}, {{"axis", int64_t(1)}, {"keepdim", false}, {"select_last_index", true}}));

  // Ops without an enumerator: every generated pointwise op (one input, or two same-shape ones) on `flat`, and
  // the indexing ops, so that new op table entries reach the text form's round trip without edits here.
  for (const OpInfo& info : op_table()) {
    if (int(info.kind) < kNumNamedOps || !info.test.generate) continue;
    std::vector<Value> args(size_t(info.arity), flat);
    g.output(std::string("op.") + std::string(info.name), g.add_node(info.kind, args, info.test.attrs));
  }
  Value sliced = g.op("slice", {flat}, {{"starts", std::vector<int64_t>{1, 15}}, {"steps", std::vector<int64_t>{1, -2}},
                                        {"shape", Shape{1, 8}}});
  Value padded = g.op("pad", {sliced}, {{"starts", std::vector<int64_t>{1, 0}}, {"steps", std::vector<int64_t>{1, 2}},
                                        {"shape", Shape{3, 16}}, {"value", 0.5}});
  Value joined = g.op("concat", {flat, padded, flat}, {{"axis", int64_t(0)}});
  Value picked = g.op("gather", {joined, labels}, {{"axis", int64_t(0)}});
  g.output("indexing", g.op("gather_grad", {picked, labels}, {{"axis", int64_t(0)}, {"shape", Shape{7, 16}}}));
  Value row = g.op("slice", {flat}, {{"starts", std::vector<int64_t>{0, 0}}, {"steps", std::vector<int64_t>{1, 1}},
                                     {"shape", Shape{1, 16}}});
  Value slot = g.op("slice", {labels}, {{"starts", std::vector<int64_t>{1}}, {"steps", std::vector<int64_t>{1}},
                                        {"shape", Shape{1}}});
  g.output("written", g.op("write_at", {flat, row, slot}, {{"axis", int64_t(0)}}));

  // Backward-only ops, fed with plausible gradients.
  Value one = g.scalar(1.0, f);
  Value dlogits = cross_entropy_grad(g, one, logits, labels);
  Value dflat = g.permute(dlogits, {1, 0});
  Value dpool = g.avg_pool2d_grad(avg, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {2, 4, 4, 4});
  Value dsel = g.add(g.max_pool2d_grad(dpool, sel, {.kernel = {2, 2}}),
                    g.max_pool2d_grad_argmax(dpool, g.max_pool2d_argmax(sel, {.kernel = {2, 2}}), {.kernel = {2, 2}},
                                             {2, 4, 8, 8}));
  Value dact = g.relu_grad(g.gelu_grad(g.silu_grad(dsel, t), t), act);
  Conv2dOptions opt{.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
  Value dx = g.conv2d_grad_input(dact, w, opt, {2, 3, 8, 8});
  Value dw = g.conv2d_grad_weight(dact, x, opt, {4, 3, 3, 3});
  g.output("dx", dx);
  g.output("dw", dw);
  g.output("dflat", dflat);
  Value int8_logits = g.op("matmul_int8_weight", {flat, head_int8, head_scale});  // [2,16] -> [2,3]
  g.output("int8_logits", int8_logits);
  // The normalizations over the last axis, their scale and bias vectors of the head's 3 channels.
  Value gamma = g.add(head_scale, 1.0);
  g.output("layer_norm", g.op("layer_norm", {int8_logits, gamma, head_scale}, {{"epsilon", 1e-5}}));
  g.output("rms_norm", g.op("rms_norm", {int8_logits, gamma}, {{"epsilon", 1e-6}}));
  Value mom_new = g.add(g.mul(mom, 0.9), g.matmul(dflat, flat));  // [5,2] x [2,16]
  g.state_update(mom, g.broadcast_to(g.sum(mom_new, {0}, true), {5, 16}));
  return g;
}

}  // namespace spire::graph::testing
