// One element of a pointwise expression tree, emitted into any kernel: the pointwise op's own kernel
// (lower_pointwise.cpp), the one launch that runs a step's final updates (lower_final_group.cpp), and a heavy
// kernel's epilogue (lower_graph.cpp, fuse.h), which computes the tree from its result before storing it.
//
// Values fused into their user (fuse.h) are computed in place; other inputs are loaded, one buffer binding per
// distinct value, through numpy broadcasting's index maps; scalar constants are folded.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel/builder.h"
#include "lowering/lowering_context.h"

namespace spire::lowering {

// A slice with unit steps, a concat or a gather, which a tree computes element by element where fuse.h fuses it (the
// element's index moved into its input, into the piece it falls in, or into the row its index names).
bool computes_by_index(const graph::Graph& g, graph::Value v);

class PointwiseTree {
 public:
  PointwiseTree(LoweringContext& ctx, kir::KernelBuilder& kb) : ctx_(ctx), g_(ctx.graph()), kb_(kb) {}

  // `v` is also computed in place, though it has a buffer: in the final group a root may read another root,
  // which the same launch is writing (maybe in another workgroup), so it recomputes it instead of loading it.
  void compute_in_place(graph::Value v) { in_place_.insert(v.id); }
  // Wherever the tree reads `v` at the root's own element, it takes `value` (an epilogue's accumulator, which
  // is v's element there). Reaching v through a broadcast is a logic error: no other element of v exists.
  void substitute(graph::Value v, kir::Val value) { substitutes_[v.id] = value; }
  // Forgets the values computed so far: call when the next root is emitted in another block of the kernel,
  // where the earlier ones are not visible.
  void forget_computed() { computed_.clear(); }

  // Root `v`'s element `index` (an element index in v's shape). Values reached at that same element are
  // computed once and reused, across calls, until forget_computed().
  kir::Val root(graph::Value v, kir::Val index) { return compute(v, index, true); }

  // The slots of the buffers loaded, in declaration order (after whatever the kernel declared before).
  const std::vector<int32_t>& bindings() const { return bindings_; }
  // The ops computed, root first (for the kernel's name).
  const std::vector<std::string>& ops() const { return ops_; }
  const std::vector<graph::Value>& loaded() const { return loaded_; }

 private:
  kir::Val value(graph::Value v, kir::Val index, bool at_root_element);
  kir::Val compute(graph::Value v, kir::Val index, bool at_root_element);
  kir::Val gathered(graph::Value v, kir::Val index);
  kir::Buf buffer(graph::Value v);

  LoweringContext& ctx_;
  const graph::Graph& g_;
  kir::KernelBuilder& kb_;
  std::set<int32_t> in_place_;
  std::map<int32_t, kir::Val> substitutes_;
  std::map<int32_t, kir::Val> computed_;  // at the root's element
  std::map<int32_t, kir::Buf> bufs_;
  std::vector<int32_t> bindings_;
  std::vector<graph::Value> loaded_;
  std::vector<std::string> ops_;
};

// Rewrites each load of `kernel`'s buffer `index` into `root`'s element at the loaded index, for each (index, root) of
// `loads` (every load another element), computed by one tree: the kernel computes those values where it reads them
// (fuse.h's prologues: a reduction's input, an attention's rotary embeddings). Their buffers stay declared, unread, for
// the caller to bind; the kernel's name takes the ops computed. Returns the slots of the buffers the trees load, to bind
// after the kernel's own. Throws std::invalid_argument where such a buffer is written or read other than element by
// element.
std::vector<int32_t> compute_loads_in_place(LoweringContext& ctx, kir::Kernel& kernel,
                                            const std::vector<std::pair<uint32_t, graph::Value>>& loads);

}  // namespace spire::lowering
