#include "lowering/lower_decode_attention.h"

#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/heavy_lowering.h"
#include "lowering/pointwise_tree.h"

namespace spire::lowering {

void lower_decode_attention(LoweringContext& ctx, graph::Value v, const AbsorbedAttention& a) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Limits limits = ctx.limits();
  uint32_t wg = heavy::kDecodeAttentionWorkgroup;
  while (wg > 32 && wg > limits.max_invocations) wg /= 2;
  // The tree over the scores is built into the kernel as it asks for each score: its loads become the kernel's buffers
  // after q, k, v and o.
  std::optional<PointwiseTree> tree;
  heavy::AttentionScore score;
  if (a.score != a.scores)
    score = [&](kir::KernelBuilder& kb, kir::Val index, kir::Val dot) {
      if (!tree) tree.emplace(ctx, kb);
      tree->substitute(a.scores, dot);
      tree->forget_computed();  // each score is another element
      return tree->root(a.score, index);
    };
  // The cache writes it computes (fuse.h): the write_at's result lives in the state's buffer, as lower_write_at makes it.
  const heavy::AttentionCacheWrites writes{a.key_write.valid(), a.value_write.valid()};
  for (graph::Value w : {a.key_write, a.value_write})
    if (w.valid()) ctx.alias(w, g.node(w).inputs[0]);
  heavy::HeavyKernel k;
  try {
    k = heavy::decode_attention_kernel(a.shape, t, wg, heavy::choose_decode_attention_columns(a.shape, wg, limits.cpu),
                                      limits.subgroup_size, score, writes);
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("matmul '{}' (attention): {}", node.name, e.what()));
  }
  // The queries and the new key row, where the launch computes them (fuse.h's q_tree, key_row_tree), have no buffer:
  // each of the kernel's loads from theirs (one element at a time) becomes the tree's value there.
  constexpr int32_t kComputed = -1;
  std::vector<int32_t> buffers{a.q_tree.valid() ? kComputed : ctx.buffer_of(a.q.source), ctx.buffer_of(a.k.source),
                               ctx.buffer_of(a.v.source), ctx.buffer_of(v)};
  for (graph::Value w : {a.key_write, a.value_write})
    if (w.valid()) {
      const graph::Value row = g.node(w).inputs[1];
      buffers.push_back(w == a.key_write && a.key_row_tree.valid() ? kComputed : ctx.buffer_of(row));
      buffers.push_back(ctx.buffer_of(g.node(w).inputs[2]));  // its position
    }
  if (tree) {
    for (int32_t b : tree->bindings()) buffers.push_back(b);
    for (const std::string& op : tree->ops()) k.kernel.name += "_" + op;
  }
  std::vector<std::pair<uint32_t, graph::Value>> computed;
  if (a.q_tree.valid()) computed.emplace_back(0, a.q_tree);
  if (a.key_row_tree.valid()) computed.emplace_back(4, a.key_row_tree);  // (q, k, v, o, then the key row)
  if (!computed.empty()) {
    for (int32_t b : compute_loads_in_place(ctx, k.kernel, computed)) buffers.push_back(b);
    // A computed operand's buffer stays declared, unread: a one-element scratch of its type.
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i] == kComputed) buffers[i] = ctx.scratch(k.kernel.buffers[i].elem, 1);
  }
  ctx.launch(std::move(k.kernel), std::move(buffers), {}, k.groups);
}

}  // namespace spire::lowering
