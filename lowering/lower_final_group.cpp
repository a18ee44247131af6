// The final group (fuse.h): pointwise roots whose results nothing reads but memory, typically an optimizer's
// update of every parameter and its momentum, run after everything else as one launch instead of one or two
// per parameter.
//
// Roots of one shape form a segment. Segments lie one after another in the launch's index range, each starting
// at a workgroup boundary, so every workgroup runs one segment's arithmetic (no divergence). Within a segment the
// roots share loads and subexpressions: a momentum's new value is computed once, stored, and used for the
// parameter it updates. A root that reads another root of the group recomputes it rather than loading it: the
// launch may not have stored it yet.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"
#include "lowering/pointwise_tree.h"

namespace spire::lowering {

namespace {

struct Segment {
  graph::Shape shape;
  int64_t count = 0;
  std::vector<graph::Value> roots;
  std::set<int32_t> values_bound;  // the roots and every value their trees load
};

bool in(const std::vector<graph::Value>& vs, graph::Value v) { return std::find(vs.begin(), vs.end(), v) != vs.end(); }

// The values a tree loads: what PointwiseTree binds for it.
void collect_loads(const LoweringContext& ctx, const std::vector<graph::Value>& group, graph::Value v,
                   std::set<int32_t>& out) {
  for (graph::Value i : ctx.graph().node(v).inputs) {
    if (ctx.graph().node(i).op == graph::OpKind::Constant) continue;
    if (ctx.fused(i) || in(group, i)) collect_loads(ctx, group, i, out);
    else out.insert(i.id);
  }
}

// Roots of one shape, in graph order, as long as one kernel can bind what they touch (`limit` buffers); a
// shape whose roots bind more takes several segments.
std::vector<Segment> segments_of(const LoweringContext& ctx, const std::vector<graph::Value>& group, size_t limit) {
  std::vector<Segment> out;
  for (graph::Value r : group) {
    const graph::TensorType& t = ctx.graph().type(r);
    std::set<int32_t> bound{r.id};
    collect_loads(ctx, group, r, bound);
    auto fits = [&](const Segment& s) {
      if (s.shape != t.shape) return false;
      std::set<int32_t> with = s.values_bound;
      with.insert(bound.begin(), bound.end());
      return with.size() <= limit;
    };
    auto s = std::find_if(out.begin(), out.end(), fits);
    if (s == out.end()) s = out.insert(out.end(), Segment{t.shape, t.numel(), {}, {}});
    s->roots.push_back(r);
    s->values_bound.insert(bound.begin(), bound.end());
  }
  return out;
}

void launch_segments(LoweringContext& ctx, const std::vector<graph::Value>& group, const std::vector<Segment>& segs) {
  const graph::Graph& g = ctx.graph();
  size_t roots = 0;
  for (const Segment& s : segs) roots += s.roots.size();
  kir::KernelBuilder kb("final_group", kPointwiseWorkgroup);
  std::vector<kir::Buf> outs;
  std::vector<int32_t> bindings;
  for (const Segment& s : segs)
    for (graph::Value r : s.roots) {
      outs.push_back(kb.buffer(g.node(r).name, device_type(g.type(r).dtype), kir::Access::Write));
      bindings.push_back(ctx.buffer_of(r));
    }
  PointwiseTree tree(ctx, kb);
  for (graph::Value r : group) tree.compute_in_place(r);
  const kir::Val gid = kb.global_id();
  int64_t begin = 0;
  size_t out = 0;
  for (const Segment& s : segs) {
    const int64_t end = begin + s.count;
    if (end > int64_t(UINT32_MAX))
      throw graph::GraphError(fmt::format("the final group of {} updates exceeds the 2^32 elements a kernel indexes", roots));
    kir::Val inside = gid < kb.u32(uint32_t(end));
    if (begin > 0) inside = inside & (gid >= kb.u32(uint32_t(begin)));
    kb.if_(inside, [&] {
      const kir::Val local = begin > 0 ? gid - kb.u32(uint32_t(begin)) : gid;
      tree.forget_computed();  // values of the previous segment live in its own block
      for (graph::Value r : s.roots) outs[out++][local] = tree.root(r, local);
    });
    begin = (end + kPointwiseWorkgroup - 1) / kPointwiseWorkgroup * kPointwiseWorkgroup;
  }
  kir::Kernel k = kb.finish();
  k.name = fmt::format("final_group_{}_results_{}_elements", roots, begin);
  for (int32_t b : tree.bindings()) bindings.push_back(b);
  ctx.launch(std::move(k), std::move(bindings), {}, groups_for(begin, kPointwiseWorkgroup));
}

}  // namespace

void lower_final_group(LoweringContext& ctx, const std::vector<graph::Value>& group) {
  // As many segments per launch as the device lets one kernel bind.
  const size_t limit = std::max<uint32_t>(ctx.device().max_kernel_buffers, 1);
  const std::vector<Segment> segs = segments_of(ctx, group, limit);
  std::vector<Segment> batch;
  std::set<int32_t> bound;
  for (const Segment& s : segs) {
    std::set<int32_t> with = bound;
    with.insert(s.values_bound.begin(), s.values_bound.end());
    if (!batch.empty() && with.size() > limit) {
      launch_segments(ctx, group, batch);
      batch.clear();
      with = s.values_bound;
    }
    batch.push_back(s);
    bound = std::move(with);
  }
  if (!batch.empty()) launch_segments(ctx, group, batch);
}

}  // namespace spire::lowering
