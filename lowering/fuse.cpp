#include "lowering/fuse.h"

#include <algorithm>
#include <functional>
#include <set>

#include "ir/graph/op_table.h"
#include "kernels/matvec_kernel.h"
#include "kernels/pool2d_kernels.h"
#include "lowering/lowering_context.h"
#include "lowering/op_lowering.h"
#include "lowering/pointwise_tree.h"
#include "lowering/tunable_ops.h"
#include "lowering/schedule.h"

namespace spire::lowering {

using graph::OpKind;
using graph::Value;

bool is_pointwise(OpKind op) { return graph::op_category(op) == graph::OpCategory::Pointwise; }

bool takes_epilogue(OpKind op) {
  const OpLowering* e = op_lowering(op);
  return e && e->takes_epilogue;
}

namespace {

// How many values read v, or -1 where one of them fails `passes`. Users come after v (the graph is topological);
// scanned directly, since lowering asks once per matmul operand and building the whole users table each time
// would be quadratic in allocations.
int readers_passing(const graph::Graph& g, Value v, const std::function<bool(Value)>& passes) {
  int readers = 0;
  for (int32_t id = v.id + 1; id < g.size(); ++id) {
    const graph::Node& u = g.node(id);
    if (std::find(u.inputs.begin(), u.inputs.end(), v) == u.inputs.end()) continue;
    if (!passes(Value{id})) return -1;
    ++readers;
  }
  return readers;
}

// True when v is no graph output or state update, has at least one user, and every user passes `reads_in_place`:
// a value the products read through, with no buffer of its own.
bool read_in_place_only(const graph::Graph& g, Value v, const std::function<bool(Value)>& reads_in_place) {
  for (const auto& o : g.outputs())
    if (o.value == v) return false;
  for (const auto& u : g.state_updates())
    if (u.value == v) return false;
  return readers_passing(g, v, reads_in_place) > 0;
}

}  // namespace

bool absorbed_transpose(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  const size_t rank = n.type.shape.size();
  if (n.op != OpKind::Permute || rank < 2) return false;
  std::vector<int64_t> swap_last(rank);
  for (size_t d = 0; d < rank; ++d) swap_last[d] = int64_t(d);
  std::swap(swap_last[rank - 2], swap_last[rank - 1]);
  if (n.attrs.get_ints("perm") != swap_last) return false;
  if (rank == 2) return read_in_place_only(g, v, [&](Value u) { return g.node(u).op == OpKind::Matmul; });
  // Batched: only the few-rows kernel reads such a B (attention's keys at one query: q x K^T), so every user must be
  // a product that takes it.
  return read_in_place_only(g, v, [&](Value u) {
    const graph::Node& user = g.node(u);
    if (user.op != OpKind::Matmul || user.inputs[1] != v || user.inputs[0] == v) return false;
    heavy::MatmulShape s = heavy::matmul_shape(g.type(user.inputs[0]).shape, n.type.shape);
    s.b_transposed = true;
    return heavy::matmul_fits_matvec(s, kir::Type::F64, heavy::Limits{});  // (f64: the most workgroup memory)
  });
}

bool absorbed_upcast(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  if (n.op != OpKind::Cast || n.type.dtype != graph::DType::F32 || !graph::is_half(g.type(n.inputs[0]).dtype))
    return false;
  // A convolution reads its input and weights (its only inputs) in place too: on tensor cores as they are, elsewhere
  // through a widening launch of its own program (lower_conv2d.cpp). So does a norm computed in a product's reads of
  // its A (absorbed_norm: the residual stream a half policy stores in half, cast up for the norm autocast keeps f32).
  return read_in_place_only(g, v, [&](Value u) {
    const OpKind op = g.node(u).op;
    return op == OpKind::Matmul || op == OpKind::Conv2d || (op == OpKind::Permute && absorbed_transpose(g, u)) ||
           (absorbed_norm(g, u) && g.node(u).inputs[0] == v &&
            std::count(g.node(u).inputs.begin(), g.node(u).inputs.end(), v) == 1);
  });
}

bool absorbed_slice(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  if (graph::op_name(n.op) != "slice") return false;
  for (int64_t step : n.attrs.get_ints("steps"))
    if (step != 1) return false;
  return read_in_place_only(g, v, [&](Value u) {
    const graph::Node& user = g.node(u);
    return graph::op_name(user.op) == "write_at" && user.inputs[1] == v && user.inputs[0] != v && user.inputs[2] != v;
  });
}

bool absorbed_norm(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  const std::string_view op = graph::op_name(n.op);
  if (op != "layer_norm" && op != "rms_norm") return false;
  return read_in_place_only(g, v, [&](Value u) {
    const graph::Node& user = g.node(u);
    if (user.op != OpKind::Matmul || user.inputs[0] != v || user.inputs[1] == v) return false;
    heavy::MatmulShape s = heavy::matmul_shape(n.type.shape, g.type(user.inputs[1]).shape);
    s.b_transposed = absorbed_transpose(g, user.inputs[1]);
    return heavy::matvec_takes_row_norm(s, kir::Type::F64, heavy::Limits{});  // (f64: the most workgroup memory)
  });
}

InPlaceOperand in_place_operand(const graph::Graph& g, Value v) {
  InPlaceOperand r{v};
  if (absorbed_norm(g, v)) {
    r.norm = v;
    r.source = g.node(v).inputs[0];
    if (absorbed_upcast(g, r.source)) r.source = g.node(r.source).inputs[0];
    if (graph::is_half(g.type(r.source).dtype)) r.half = g.type(r.source).dtype;
    return r;
  }
  if (absorbed_transpose(g, r.source)) {
    r.transposed = true;
    r.source = g.node(r.source).inputs[0];
  }
  if (absorbed_upcast(g, r.source)) {
    r.source = g.node(r.source).inputs[0];
    r.half = g.type(r.source).dtype;
  }
  return r;
}

bool writes_state_in_place(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  const graph::Value data = n.inputs[0];
  if (g.node(data).op != graph::OpKind::State) return false;
  bool updates_data = false;
  for (const graph::StateUpdate& u : g.state_updates())
    if (u.value == v) {
      if (u.target != data) return false;
      updates_data = true;
    }
  if (!updates_data) return false;
  // The result's own readers come after the write, so they may read it where it lives, in the state's buffer.
  const std::vector<std::vector<graph::Value>> users = g.users();
  for (const graph::NamedOutput& o : g.outputs())
    if (o.value == v || o.value == data) return false;
  // The state's other readers must be computed before the write: each an ancestor of the row or the index.
  std::vector<bool> before(size_t(g.size()), false);
  std::vector<graph::Value> stack{n.inputs[1], n.inputs[2]};
  while (!stack.empty()) {
    const graph::Value u = stack.back();
    stack.pop_back();
    if (before[size_t(u.id)]) continue;
    before[size_t(u.id)] = true;
    for (graph::Value in : g.node(u).inputs) stack.push_back(in);
  }
  for (graph::Value reader : users[size_t(data.id)])
    if (reader != v && !before[size_t(reader.id)]) return false;
  return true;
}

std::optional<AbsorbedAttention> absorbed_attention(const graph::Graph& g, Value v) {
  const graph::Node& n = g.node(v);
  if (n.op != OpKind::Matmul || n.inputs[0] == n.inputs[1]) return std::nullopt;
  const Value p = n.inputs[0];
  const graph::Node& pn = g.node(p);
  const OpLowering* weights = op_lowering(pn.op);
  if (!weights || !weights->attention_weights || pn.attrs.get_int("axis") + 1 != int64_t(pn.type.shape.size()))
    return std::nullopt;
  if (!read_in_place_only(g, p, [&](Value u) { return u == v; })) return std::nullopt;
  AbsorbedAttention a;
  a.score = pn.inputs[0];
  if (!read_in_place_only(g, a.score, [&](Value u) { return u == p; })) return std::nullopt;
  const graph::Shape& shape = g.type(a.score).shape;
  if (g.node(a.score).op == OpKind::Matmul) {
    a.scores = a.score;
  } else {
    // The tree over the scores, walked from S down: a value of S's shape read only by values already in the tree
    // (its readers come after it, so are known by then) is in it; anything else is a leaf the tree loads (the mask).
    if (!is_pointwise(g.node(a.score).op)) return std::nullopt;
    std::set<int32_t> tree{a.score.id};
    std::set<int32_t, std::greater<>> pending;
    for (Value in : g.node(a.score).inputs) pending.insert(in.id);
    while (!pending.empty()) {
      const Value w{*pending.begin()};
      pending.erase(pending.begin());
      const graph::Node& wn = g.node(w);
      if (g.type(w).shape != shape || (!is_pointwise(wn.op) && wn.op != OpKind::Matmul) ||
          !read_in_place_only(g, w, [&](Value u) { return tree.count(u.id) > 0; }))
        continue;
      if (wn.op == OpKind::Matmul) {
        if (a.scores.valid()) return std::nullopt;  // two products in one tree
        a.scores = w;
        continue;
      }
      tree.insert(w.id);
      for (Value in : wn.inputs) pending.insert(in.id);
    }
    if (!a.scores.valid()) return std::nullopt;
  }
  const graph::Node& m = g.node(a.scores);
  if (m.inputs[0] == m.inputs[1] || !absorbed_transpose(g, m.inputs[1])) return std::nullopt;
  a.q = in_place_operand(g, m.inputs[0]);
  a.k = in_place_operand(g, m.inputs[1]);
  a.v = in_place_operand(g, n.inputs[1]);
  if (a.q.transposed || a.q.norm.valid() || !a.k.transposed || a.v.transposed || a.v.norm.valid()) return std::nullopt;
  // The keys and values as the products read them (a copy broadcast to every query head, where grouped).
  const graph::Shape &qs = g.type(a.q.source).shape, &ks = g.type(a.k.source).shape, &vs = g.type(a.v.source).shape;
  const size_t rank = qs.size();
  if (rank < 3 || ks.size() != rank || vs.size() != rank || !std::equal(qs.begin(), qs.end() - 2, ks.begin()) ||
      !std::equal(qs.begin(), qs.end() - 2, vs.begin()))
    return std::nullopt;
  const graph::DType t = n.type.dtype;
  if ((t != graph::DType::F32 && t != graph::DType::F64) || m.type.dtype != t || g.type(a.score).dtype != t)
    return std::nullopt;
  heavy::DecodeAttentionShape& s = a.shape;
  for (size_t d = 0; d + 2 < rank; ++d) s.batches *= qs[d];
  s.rows = qs[rank - 2];
  s.depth = qs[rank - 1];
  s.keys = ks[rank - 2];
  s.value_depth = vs[rank - 1];
  if (ks[rank - 1] != s.depth || vs[rank - 2] != s.keys) return std::nullopt;
  // Grouped-query attention: a key or value copied to every query head of its group (reshape [.., H, 1, L, D],
  // broadcast_to [.., H, G, L, D], reshape [.., H * G, L, D]), read by nothing else, is read from the cache itself.
  const Value k_read = m.inputs[1], k_cast = g.node(k_read).inputs[0];
  auto grouped = [&](InPlaceOperand& o, const std::vector<Value>& readers, int64_t& group, std::vector<Value>& chain) {
    const Value x = o.source;
    if (g.node(x).op != OpKind::Reshape) return;
    const Value copy = g.node(x).inputs[0];
    if (g.node(copy).op != OpKind::BroadcastTo || g.node(g.node(copy).inputs[0]).op != OpKind::Reshape) return;
    const Value lifted = g.node(copy).inputs[0];
    Value cache = g.node(lifted).inputs[0];
    // A half cache cast up below the copy (compute_in_f32 moves a half value's moves after its cast) is read as half.
    std::optional<Value> upcast;
    if (!o.half && g.node(cache).op == OpKind::Cast && g.type(cache).dtype == graph::DType::F32 &&
        graph::is_half(g.type(g.node(cache).inputs[0]).dtype)) {
      upcast = cache;
      cache = g.node(cache).inputs[0];
    }
    const graph::Shape &xs = g.type(x).shape, &bs = g.type(copy).shape, &ls = g.type(lifted).shape,
                       &cs = g.type(cache).shape;
    if (cs.size() != rank || ls.size() != rank + 1 || bs.size() != rank + 1) return;
    const size_t h = rank - 3;  // the heads' axis
    if (ls[h + 1] != 1 || bs[h + 1] < 1 || xs[h] != bs[h] * bs[h + 1] || cs[h] != bs[h]) return;
    for (size_t d = 0; d < rank; ++d) {
      if (d != h && xs[d] != cs[d]) return;
      const size_t bd = d < h + 1 ? d : d + 1;  // the broadcast's axes around its group axis
      if (ls[bd] != cs[d] || bs[bd] != cs[d]) return;
    }
    auto only = [&](Value w, const std::vector<Value>& by) {
      return read_in_place_only(g, w, [&](Value u) { return std::find(by.begin(), by.end(), u) != by.end(); });
    };
    if (!only(lifted, {copy}) || !only(copy, {x}) || !only(x, readers) || (upcast && !only(*upcast, {lifted}))) return;
    group = bs[h + 1];
    chain = {lifted, copy, x};
    if (upcast) {
      chain.insert(chain.begin(), *upcast);
      o.half = g.type(cache).dtype;
    }
    o.source = cache;
  };
  grouped(a.k, {k_read, k_cast}, s.key_group, a.key_chain);
  grouped(a.v, {v, n.inputs[1]}, s.value_group, a.value_chain);
  auto half = [](const InPlaceOperand& o) { return o.half ? std::optional(device_type(*o.half)) : std::nullopt; };
  s.q_half = half(a.q);
  s.k_half = half(a.k);
  s.v_half = half(a.v);
  if (!heavy::decode_attention_fits(s, device_type(t))) return std::nullopt;
  // A cache write the launch can do: one new row [batch..., 1, depth] along the keys' axis, in place, the written cache
  // read only through `readers` (the absorbed transpose and cast up in front of the product).
  auto cache_write = [&](Value source, const std::vector<Value>& readers) -> Value {
    const graph::Node& w = g.node(source);
    if (graph::op_name(w.op) != "write_at" || w.attrs.get_int("axis") + 2 != int64_t(rank)) return {};
    const graph::Shape &row = g.type(w.inputs[1]).shape, &cache = g.type(source).shape;
    if (row.size() != rank || row[rank - 2] != 1 || !std::equal(cache.begin(), cache.end() - 2, row.begin()) ||
        absorbed_slice(g, w.inputs[1]) || !writes_state_in_place(g, source))
      return {};
    // (It is its state's update, which writes_state_in_place requires, and no output: that too it checks.)
    const bool only_readers = readers_passing(g, source, [&](Value u) {
      return std::find(readers.begin(), readers.end(), u) != readers.end();
    }) >= 0;
    return only_readers ? source : Value{};
  };
  // The values between a cache and the products: K's transpose (and its cast up), V's cast up, a group's copy.
  std::vector<Value> k_readers{k_read, k_cast}, v_readers{n.inputs[1], v};
  if (!a.key_chain.empty()) k_readers = {a.key_chain.front()};
  if (!a.value_chain.empty()) v_readers = {a.value_chain.front()};
  a.key_write = cache_write(a.k.source, k_readers);
  a.value_write = cache_write(a.v.source, v_readers);
  return a;
}

namespace {

class Planner {
 public:
  explicit Planner(const graph::Graph& g)
      : g_(g), users_(g.users()), must_store_(size_t(g.size()), false), needed_(size_t(g.size()), false) {
    for (const auto& o : g.outputs()) must_store_[size_t(o.value.id)] = true;
    for (const auto& u : g.state_updates()) must_store_[size_t(u.value.id)] = true;
    for (Value v : schedule(g)) needed_[size_t(v.id)] = true;
    f_.fused.assign(size_t(g.size()), false);
    f_.epilogue.assign(size_t(g.size()), -1);
    f_.is_epilogue.assign(size_t(g.size()), false);
    f_.prologue.assign(size_t(g.size()), -1);
    f_.side_pool.assign(size_t(g.size()), -1);
    f_.side_argmax.assign(size_t(g.size()), -1);
    f_.result_unread.assign(size_t(g.size()), false);
    f_.side_bias.assign(size_t(g.size()), -1);
    f_.pair_root.assign(size_t(g.size()), -1);
    f_.is_side_output.assign(size_t(g.size()), false);
    f_.attention.assign(size_t(g.size()), std::nullopt);
  }

  Fusion run() {
    fuse_chains();
    limit_tree_inputs();
    find_attention();
    for (int32_t id = 0; id < g_.size(); ++id) find_epilogue(Value{id});
    for (int32_t id = 0; id < g_.size(); ++id) find_paired_epilogue(Value{id});
    for (int32_t id = 0; id < g_.size(); ++id) find_prologue(Value{id});
    for (int32_t id = 0; id < g_.size(); ++id) find_side_pool(Value{id});
    for (int32_t id = 0; id < g_.size(); ++id) find_side_argmax(Value{id});
    for (int32_t id = 0; id < g_.size(); ++id) find_side_bias(Value{id});
    find_final_group();
    return std::move(f_);
  }

 private:
  // The users that run (a dead node's reads do not count).
  std::vector<Value> live_users(Value v) const {
    std::vector<Value> out;
    for (Value u : users_[size_t(v.id)])
      if (needed_[size_t(u.id)] && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    return out;
  }

  // Slices (unit steps), concats of two pieces and gathers read once by a pointwise op of their shape, or a slice by
  // such a concat, are computed in that op's tree (pointwise_tree.h's computes_by_index): a rotary embedding's
  // x * cos + concat(-x[h:], x[:h]) * sin is one launch, not five, and a decoder's token and position embeddings and
  // their sum one, not three. A fused concat reads every piece at each element
  // and keeps one, so only two: densenet's concats of up to 32 feature maps stay copies. Walked from the last value
  // back, so that a concat's fusion is known when its slices are reached.
  static constexpr size_t kMostFusedPieces = 2;
  void fuse_index_maps() {
    for (int32_t id = g_.size(); id-- > 0;) {
      const Value v{id};
      if (must_store_[size_t(id)] || !computes_by_index(g_, v)) continue;
      if (g_.node(v).inputs.size() > kMostFusedPieces) continue;
      // (A tree's index arithmetic is 32-bit.)
      if (graph::op_name(g_.node(v).op) == "gather" && g_.type(g_.node(v).inputs[0]).numel() >= (int64_t(1) << 31)) continue;
      const std::optional<Value> u = sole_user(v);
      if (!u) continue;
      const bool into_pointwise = is_pointwise(g_.node(*u).op) && g_.type(*u).shape == g_.type(v).shape;
      const bool into_concat = graph::op_name(g_.node(v).op) == "slice" && f_.fused[size_t(u->id)] &&
                               graph::op_name(g_.node(*u).op) == "concat";
      if (into_pointwise || into_concat) f_.fused[size_t(id)] = true;
    }
  }

  // A fused concat computes its pieces in place (at each element's index in the piece), whatever their shape.
  bool fused_concat(Value u) const { return f_.fused[size_t(u.id)] && graph::op_name(g_.node(u).op) == "concat"; }

  void fuse_chains() {
    fuse_index_maps();
    for (int32_t id = 0; id < g_.size(); ++id) {
      const graph::Node& n = g_.node(id);
      if ((n.op == OpKind::Permute && absorbed_transpose(g_, Value{id})) ||
          (n.op == OpKind::Cast && absorbed_upcast(g_, Value{id})) || absorbed_slice(g_, Value{id}) ||
          absorbed_norm(g_, Value{id})) {
        f_.fused[size_t(id)] = true;
        continue;
      }
      if (!is_pointwise(n.op) || must_store_[size_t(id)]) continue;
      if (const auto chain = cast_read_through_broadcast(Value{id})) {
        for (Value c : *chain) f_.fused[size_t(c.id)] = true;
        continue;
      }
      const std::optional<Value> u = sole_user(Value{id});
      if (u && ((computes_its_inputs(*u) && g_.type(*u).shape == n.type.shape) || fused_concat(*u)))
        f_.fused[size_t(id)] = true;
    }
    fuse_shared_values();
  }

  // A pointwise value read by several pointwise ops of one tree (GELU's x, read four times by its tanh form; SiLU's x,
  // by x * sigmoid(x)) is computed inside that tree too: the tree computes each value once per element
  // (pointwise_tree.h), so nothing is computed twice, and it saves the value's launch and its round trip through
  // memory. Walked from the last value back, so that each user's root is known.
  void fuse_shared_values() {
    std::vector<int32_t> root(size_t(g_.size()));
    for (int32_t id = g_.size(); id-- > 0;) {
      root[size_t(id)] = f_.fused[size_t(id)] ? root[size_t(users_[size_t(id)][0].id)] : id;
      const graph::Node& n = g_.node(id);
      if (f_.fused[size_t(id)] || !is_pointwise(n.op) || must_store_[size_t(id)] || lowered_as_alias(n)) continue;
      const auto& us = users_[size_t(id)];
      if (us.size() < 2) continue;
      const bool one_tree = std::all_of(us.begin(), us.end(), [&](Value u) {
        return computes_its_inputs(u) && g_.type(u).shape == n.type.shape && root[size_t(u.id)] == root[size_t(us[0].id)];
      });
      if (!one_tree) continue;
      f_.fused[size_t(id)] = true;
      root[size_t(id)] = root[size_t(us[0].id)];
    }
  }

  // A pointwise tree's kernel binds every value it loads: a tree grown over a wide sum (an unrolled recurrence, a
  // decomposed op of many inputs) could bind more buffers than a device allows a kernel (32 on lavapipe; Vulkan
  // guarantees 4, mobile GPUs offer 24). Walking the values in order, a tree whose loaded values outnumber
  // kMaxTreeInputs stores its widest fused input in a buffer of its own until it fits: that input's tree then has a
  // launch of its own and counts as one value. Each kernel of a tree then binds at most kMaxTreeInputs + 1 buffers,
  // leaving room for a heavy op's own when the tree becomes its epilogue.
  static constexpr size_t kMaxTreeInputs = 16;
  void limit_tree_inputs() {
    std::vector<std::vector<int32_t>> loads(size_t(g_.size()));  // sorted ids each value's tree loads
    auto loads_of = [&](Value in) -> std::vector<int32_t> {
      if (g_.node(in).op == OpKind::Constant) return {};
      return f_.fused[size_t(in.id)] ? loads[size_t(in.id)] : std::vector<int32_t>{in.id};
    };
    for (int32_t id = 0; id < g_.size(); ++id) {
      const graph::Node& n = g_.node(id);
      for (;;) {
        std::vector<int32_t> all;
        for (Value in : n.inputs) {
          const std::vector<int32_t> l = loads_of(in);
          all.insert(all.end(), l.begin(), l.end());
        }
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        Value widest{-1};
        for (Value in : n.inputs)
          // (Only a pointwise value can take a launch of its own here: a fused slice or concat reads other elements.)
          if (f_.fused[size_t(in.id)] && is_pointwise(g_.node(in).op) && loads[size_t(in.id)].size() > 1 &&
              (widest.id < 0 || loads[size_t(in.id)].size() > loads[size_t(widest.id)].size()))
            widest = in;
        // (The reshapes of a cast read through a broadcast are fused too, and only pass their loads on.)
        if (!is_pointwise(n.op) || all.size() <= kMaxTreeInputs || widest.id < 0) {
          loads[size_t(id)] = std::move(all);
          break;
        }
        f_.fused[size_t(widest.id)] = false;
      }
    }
  }

  // Whether u is a pointwise op with a kernel that can compute its inputs in place (an absorbed cast has none: the
  // product reading it loads its input from memory).
  bool computes_its_inputs(Value u) const {
    return is_pointwise(g_.node(u).op) && !(g_.node(u).op == OpKind::Cast && absorbed_upcast(g_, u));
  }

  // v's one user, read once, where v is no output; else nothing.
  std::optional<Value> sole_user(Value v) const {
    const auto& us = users_[size_t(v.id)];
    if (us.empty() || must_store_[size_t(v.id)] || std::any_of(us.begin(), us.end(), [&](Value u) { return u != us[0]; }))
      return std::nullopt;
    const graph::Node& user = g_.node(us[0]);
    if (std::count(user.inputs.begin(), user.inputs.end(), v) != 1) return std::nullopt;
    return us[0];
  }

  // A cast of a value that is not fused itself (or of casts of one), read by one pointwise op through a broadcast, maybe
  // through reshapes: a layer's bias cast up by compute_in_f32.h and reshaped to [1, C, 1, 1] for the add in a
  // convolution's epilogue.
  // The reader converts each element it loads, which costs it a conversion per element and saves the cast a launch
  // of its own (21 per inference of a half-precision resnet18; a constant bias, as the ONNX importer makes of one
  // whose elements are all equal, is then folded into the reader). Returns the cast and the reshapes, or nothing.
  // The cast may read other casts fused into it (a half policy's position, cast to f32, to bf16 and back up, in a
  // rotary embedding's table): each converts in the reader too.
  std::optional<std::vector<Value>> cast_read_through_broadcast(Value v) const {
    const graph::Node& n = g_.node(v);
    if (n.op != OpKind::Cast || lowered_as_alias(n)) return std::nullopt;
    for (Value in = n.inputs[0]; f_.fused[size_t(in.id)]; in = g_.node(in).inputs[0])
      if (g_.node(in).op != OpKind::Cast || lowered_as_alias(g_.node(in))) return std::nullopt;
    std::vector<Value> chain{v};
    std::optional<Value> u = sole_user(v);
    while (u && (g_.node(*u).op == OpKind::Reshape || g_.node(*u).op == OpKind::Flatten)) {
      chain.push_back(*u);
      u = sole_user(*u);
    }
    if (!u || !computes_its_inputs(*u) || g_.type(chain.back()).shape == g_.type(*u).shape) return std::nullopt;
    return chain;
  }

  // The root whose kernel computes v (v itself when it is not fused).
  Value root_of(Value v) const {
    while (f_.fused[size_t(v.id)]) v = users_[size_t(v.id)][0];
    return v;
  }

  // Every value root r's kernel loads (not fused into it, not a constant), besides `except`.
  void loaded_leaves(Value r, Value except, std::vector<Value>& out) const {
    for (Value in : g_.node(r).inputs) {
      if (in == except || g_.node(in).op == OpKind::Constant) continue;
      if (f_.fused[size_t(in.id)]) loaded_leaves(in, except, out);
      else out.push_back(in);
    }
  }

  // True when l holds its value before v's kernel runs: a leaf, a value scheduled before v, or a reshape (an alias,
  // lower_reshape) of such a value, as a layer's bias reshaped to [1, C, 1, 1] is.
  bool ready_before(Value l, Value v) const {
    while (g_.node(l).op == OpKind::Reshape || g_.node(l).op == OpKind::Flatten) l = g_.node(l).inputs[0];
    return graph::is_leaf(g_.node(l).op) || l.id < v.id;
  }

  // A cast lower_elementwise turns into an alias (same device type): no kernel, no arithmetic to fold anywhere.
  bool lowered_as_alias(const graph::Node& n) const {
    return n.op == OpKind::Cast && device_type(n.type.dtype) == device_type(g_.type(n.inputs[0]).dtype);
  }

  // An attention's scores' product, the tree over it and its weights are computed by the launch of its product with the
  // values (absorbed_attention): none of them has a launch.
  void find_attention() {
    for (int32_t id = 0; id < g_.size(); ++id) {
      if (!needed_[size_t(id)] || g_.node(id).op != OpKind::Matmul) continue;
      std::optional<AbsorbedAttention> a = absorbed_attention(g_, Value{id});
      if (!a) continue;
      for (Value w : {a->scores, a->score, g_.node(id).inputs[0]}) f_.fused[size_t(w.id)] = true;
      a->q_tree = computed_by_attention(a->q.source, g_.node(a->scores).inputs[0], a->scores);
      if (a->key_write.valid()) {
        const Value row = g_.node(a->key_write).inputs[1];
        a->key_row_tree = computed_by_attention(row, row, a->key_write);
      }
      for (Value w : {a->q_tree, a->key_row_tree})
        if (w.valid()) f_.fused[size_t(w.id)] = true;
      for (Value w : {a->key_write, a->value_write})
        if (w.valid()) f_.is_side_output[size_t(w.id)] = true;
      for (const auto* chain : {&a->key_chain, &a->value_chain})
        for (Value w : *chain) f_.fused[size_t(w.id)] = true;
      f_.attention[size_t(id)] = std::move(a);
    }
  }

  // `source` where it is a pointwise root that the attention's launch can compute as it reads it: nothing else reads it
  // (but `reader`, the cast up the launch reads in place, where it is not `source` itself) and nothing stores it, and
  // `consumer` (the scores' product, or the cache's write_at) alone reads `reader`. Else invalid.
  Value computed_by_attention(Value source, Value reader, Value consumer) const {
    const graph::Node& n = g_.node(source);
    if (!is_pointwise(n.op) || f_.fused[size_t(source.id)] || must_store_[size_t(source.id)] || lowered_as_alias(n))
      return {};
    if (live_users(reader) != std::vector<Value>{consumer}) return {};
    if (reader != source && live_users(source) != std::vector<Value>{reader}) return {};
    return source;
  }

  // Paired epilogues (fuse.h): v a product of at most kMatvecMostRows rows by one B read transposed, its result (or
  // its epilogue's root e) read only by two slices along the last axis, [0, H) and [H, 2H), read only within one
  // pointwise tree of their shape whose root r's other leaves are ready before v. e and the slices then are computed in
  // v's launch too, and r is stored by it (a side output).
  void find_paired_epilogue(Value v) {
    const graph::Node& n = g_.node(v);
    if (!needed_[size_t(v.id)] || n.op != OpKind::Matmul || must_store_[size_t(v.id)] || f_.fused[size_t(v.id)] ||
        f_.attention[size_t(v.id)])
      return;
    const graph::Shape& shape = n.type.shape;
    if (shape.empty() || shape.back() % 2 != 0 || n.type.numel() / shape.back() > heavy::kMatvecMostRows) return;
    const InPlaceOperand b = in_place_operand(g_, n.inputs[1]);
    if (!b.transposed || g_.type(b.source).shape.size() != 2) return;
    const Value e = f_.epilogue[size_t(v.id)] >= 0 ? Value{f_.epilogue[size_t(v.id)]} : v;
    if (must_store_[size_t(e.id)]) return;
    const std::vector<Value> halves = live_users(e);
    const int64_t half = shape.back() / 2;
    auto slice_from = [&](Value s) -> int64_t {  // the slice's first column, or -1 where it is no half
      const graph::Node& sn = g_.node(s);
      if (graph::op_name(sn.op) != "slice" || must_store_[size_t(s.id)] || sn.type.shape.back() != half) return -1;
      const std::vector<int64_t> starts = sn.attrs.get_ints("starts"), steps = sn.attrs.get_ints("steps");
      for (size_t a = 0; a + 1 < starts.size(); ++a)
        if (starts[a] != 0 || sn.type.shape[a] != shape[a]) return -1;
      if (std::any_of(steps.begin(), steps.end(), [](int64_t st) { return st != 1; })) return -1;
      return starts.back();
    };
    if (halves.size() != 2) return;
    const int64_t a = slice_from(halves[0]), c = slice_from(halves[1]);
    if (!((a == 0 && c == half) || (a == half && c == 0))) return;
    // The root of the tree a half is computed in (fused), or that all its readers are in (a slice read twice, as
    // SiLU's gate is, is a window of the product's buffer), or invalid.
    auto tree_of = [&](Value s) -> Value {
      if (f_.fused[size_t(s.id)]) return root_of(s);
      const std::vector<Value> us = live_users(s);
      if (us.empty()) return {};
      for (Value u : us)
        if (!is_pointwise(g_.node(u).op) || g_.type(u).shape != g_.type(s).shape || root_of(u) != root_of(us[0])) return {};
      return root_of(us[0]);
    };
    const Value r = tree_of(halves[0]);
    if (!r.valid() || tree_of(halves[1]) != r || !is_pointwise(g_.node(r).op) || f_.is_epilogue[size_t(r.id)] ||
        f_.is_side_output[size_t(r.id)] || g_.type(r).shape != g_.type(halves[0]).shape || lowered_as_alias(g_.node(r)))
      return;
    std::vector<Value> leaves;
    loaded_leaves(r, e, leaves);
    for (Value l : leaves)
      if (l != halves[0] && l != halves[1] && !ready_before(l, v)) return;
    for (Value h : halves) f_.fused[size_t(h.id)] = true;  // (a window no more: the launch substitutes its value)
    if (e != v) {
      f_.epilogue[size_t(v.id)] = -1;
      f_.is_epilogue[size_t(e.id)] = false;
      f_.fused[size_t(e.id)] = true;
    }
    f_.pair_root[size_t(v.id)] = r.id;
    f_.is_side_output[size_t(r.id)] = true;
  }

  void find_epilogue(Value v) {
    const graph::Node& n = g_.node(v);
    if (!needed_[size_t(v.id)] || !takes_epilogue(n.op) || must_store_[size_t(v.id)] || f_.fused[size_t(v.id)]) return;
    // Every reader a pointwise op of the result's shape in one tree (SiLU reads the product twice: h * sigmoid(h)); the
    // epilogue substitutes the accumulator wherever the tree reads the result.
    const std::vector<Value> us = live_users(v);
    if (us.empty()) return;
    for (Value u : us)
      if (!is_pointwise(g_.node(u).op) || g_.type(u).shape != n.type.shape || root_of(u) != root_of(us[0])) return;
    const Value r = root_of(us[0]);
    const graph::Node& root = g_.node(r);
    if (!is_pointwise(root.op)) return;  // (a tree an attention's launch computes leads to that launch, fuse.h)
    // The epilogue writes the root's elements through the heavy kernel's stores: the same type, or a half one (the
    // result rounded to f16/bf16, as compute_in_f32.h leaves every half op), and not a cast lowered as an alias.
    if ((root.type.dtype != n.type.dtype && !graph::is_half(root.type.dtype)) || f_.is_epilogue[size_t(r.id)]) return;
    if (lowered_as_alias(root)) return;
    std::vector<Value> leaves;
    loaded_leaves(r, v, leaves);
    for (Value l : leaves)
      if (!ready_before(l, v)) return;
    f_.epilogue[size_t(v.id)] = r.id;
    f_.is_epilogue[size_t(r.id)] = true;
  }

  // After the epilogues (a root one of them stores is no prologue): reduction v's input, a pointwise root read by
  // nothing else and not stored, is computed in v's loads.
  void find_prologue(Value v) {
    const graph::Node& n = g_.node(v);
    if (needed_[size_t(v.id)] && n.op == OpKind::Conv2dGradWeight) return find_gathered_prologue(v);
    const bool pool_grad = n.op == OpKind::MaxPool2dGradArgmax;  // reads each window's gradient once (per window)
    if (!needed_[size_t(v.id)] || (n.op != OpKind::Sum && n.op != OpKind::SumTo && n.op != OpKind::Max && !pool_grad))
      return;
    const Value x = n.inputs[0];
    const graph::Node& root = g_.node(x);
    if (!is_pointwise(root.op) || f_.fused[size_t(x.id)] || f_.is_epilogue[size_t(x.id)] || must_store_[size_t(x.id)] ||
        f_.is_side_output[size_t(x.id)])
      return;
    if (lowered_as_alias(root)) return;
    const std::vector<Value> us = live_users(x);
    if (us.size() != 1 || us[0] != v || std::count(n.inputs.begin(), n.inputs.end(), x) != 1) return;
    // A reduction that folds nothing aliases its input (lower_reduce), which then needs a buffer.
    if (!pool_grad && (root.type.numel() == n.type.numel() || n.type.numel() == 0)) return;
    f_.prologue[size_t(v.id)] = x.id;
    f_.fused[size_t(x.id)] = true;
  }

  // A convolution's weight gradient (direct kernels) whose grad_out is a max pooling's gradient over windows that
  // tile it, maybe under the ReLU's mask, read by nothing else: the pooling gradient gets no launch of its own and the
  // weight gradient's kernels compute it from the pooled gradient and the pooling's input, or its positions and the
  // pooled values (lower_conv2d.cpp).
  void find_gathered_prologue(Value v) {
    const std::optional<PooledGradOutSource> src = pooled_grad_out(g_, v);
    if (!src) return;
    const Value x = src->grad_out, pool = src->pool;
    if (f_.fused[size_t(x.id)] || must_store_[size_t(x.id)] || must_store_[size_t(pool.id)]) return;
    const std::vector<Value> us = live_users(x);
    if (us.size() != 1 || us[0] != v || g_.node(v).inputs[1] == x || !conv2d_grad_weight_direct(g_, v)) return;
    // Under the mask, the pooling gradient's only user is the mask, its epilogue; without it, nothing else.
    if (f_.epilogue[size_t(pool.id)] != (pool == x ? -1 : x.id)) return;
    // From the positions under the mask: the mask, the pooling gradient's prologue so far, is read here instead.
    if (src->mask.valid()) {
      if (f_.prologue[size_t(pool.id)] != src->mask.id) return;
      f_.prologue[size_t(pool.id)] = -1;
    }
    f_.epilogue[size_t(pool.id)] = -1;
    f_.is_epilogue[size_t(x.id)] = false;
    f_.fused[size_t(pool.id)] = true;
    f_.fused[size_t(x.id)] = true;
    f_.prologue[size_t(v.id)] = x.id;
  }

  // A max pooling over windows that tile its input (f32, no epilogue of its own) of a convolution's result, or of its
  // epilogue's root: the convolution's launch stores it.
  void find_side_pool(Value p) {
    const graph::Node& n = g_.node(p);
    if (!needed_[size_t(p.id)] || n.op != OpKind::MaxPool2d || n.type.dtype != graph::DType::F32 ||
        f_.epilogue[size_t(p.id)] >= 0 || n.type.shape.size() != 4)
      return;
    const graph::Pool2dOptions o = graph::pool2d_options(n);
    const graph::Shape& in_shape = g_.type(n.inputs[0]).shape;
    if (o.padding != std::vector<int64_t>{0, 0} || o.stride != o.kernel || in_shape[2] % o.kernel[0] != 0 ||
        in_shape[3] % o.kernel[1] != 0)
      return;
    const Value in = n.inputs[0];
    Value conv = in;
    if (f_.is_epilogue[size_t(in.id)]) {
      for (int32_t id = 0; id < in.id; ++id)
        if (f_.epilogue[size_t(id)] == in.id) conv = Value{id};
      if (conv == in) return;
    }
    const graph::Node& c = g_.node(conv);
    if (c.op != OpKind::Conv2d || c.type.dtype != graph::DType::F32 || f_.side_pool[size_t(conv.id)] >= 0) return;
    f_.side_pool[size_t(conv.id)] = p.id;
    f_.is_side_output[size_t(p.id)] = true;
  }

  // A max pooling's positions (max_pool2d_argmax of the same input and window) are stored by the launch that stores the
  // pooling: the convolution's, whose result is then not stored where only the two read it, or the pooling's own.
  void find_side_argmax(Value a) {
    const graph::Node& n = g_.node(a);
    if (!needed_[size_t(a.id)] || n.op != OpKind::MaxPool2dArgmax) return;
    const Value in = n.inputs[0];
    const std::vector<Value> readers = live_users(in);
    Value pool;
    for (Value u : readers)
      if (g_.node(u).op == OpKind::MaxPool2d && g_.node(u).attrs == n.attrs && f_.epilogue[size_t(u.id)] < 0) pool = u;
    if (!pool.valid()) return;
    Value host = pool;
    for (int32_t id = 0; id < g_.size(); ++id)
      if (f_.side_pool[size_t(id)] == pool.id) host = Value{id};
    if (f_.side_argmax[size_t(host.id)] >= 0) return;
    f_.side_argmax[size_t(host.id)] = a.id;
    f_.is_side_output[size_t(a.id)] = true;
    if (host == pool || must_store_[size_t(in.id)]) return;
    f_.result_unread[size_t(host.id)] =
        std::all_of(readers.begin(), readers.end(), [&](Value u) { return bool(f_.is_side_output[size_t(u.id)]); });
  }

  // A weight gradient gathered from a pooling's positions (find_gathered_prologue) also sums its grad_out per output
  // channel where the graph does: a sum_to [1, C, 1, 1] (or a sum over axes 0, 2, 3) of the pooled gradient under the
  // same mask (its prologue) or without one, whose readers all run after the weight gradient.
  //
  // The same for a max pooling's gradient from positions over windows that tile (f32) whose gradient (maybe a
  // prologue's mask) the sum reads: its launch adds what it reads per channel (LeNet's second convolution, whose
  // weight and input gradients read the stored pooling gradient).
  void find_side_bias(Value v) {
    if (!needed_[size_t(v.id)]) return;
    const graph::Node& n = g_.node(v);
    if (n.op == OpKind::Matmul) return find_side_row_sum(v);
    Value grad, pooled;  // the pooled gradient the sum must read, and the pooled values of its mask (or none)
    int64_t channels = 0;
    if (n.op == OpKind::Conv2dGradWeight && f_.prologue[size_t(v.id)] >= 0) {
      const std::optional<PooledGradOutSource> src = pooled_grad_out(g_, v);
      if (!src || !src->pooled.positions) return;
      grad = src->grad, pooled = src->pooled_values, channels = n.type.shape[0];
    } else if (n.op == OpKind::MaxPool2dGradArgmax && !f_.fused[size_t(v.id)] && n.type.dtype == graph::DType::F32 &&
               n.type.shape.size() == 4 && tiling_windows(n)) {  // not computed inside a weight gradient's staging
      grad = n.inputs[0], channels = n.type.shape[1];
      const graph::Node& m = g_.node(grad);
      if (f_.prologue[size_t(v.id)] == grad.id && m.op == OpKind::ReluGrad) grad = m.inputs[0], pooled = m.inputs[1];
      else if (f_.fused[size_t(grad.id)]) return;
    } else {
      return;
    }
    // The sum reads the pooled gradient masked by a relu_grad of the same inputs (its prologue), or unmasked.
    std::vector<Value> sums;
    if (pooled.valid()) {
      for (Value m : live_users(grad)) {
        const graph::Node& mn = g_.node(m);
        if (mn.op != OpKind::ReluGrad || mn.inputs[0] != grad || mn.inputs[1] != pooled) continue;
        for (Value r : live_users(m))
          if (f_.prologue[size_t(r.id)] == m.id) sums.push_back(r);
      }
    } else {
      sums = live_users(grad);
    }
    for (Value r : sums) {
      if (!channel_sum(r, channels) || f_.is_side_output[size_t(r.id)] || !read_after(r, v)) continue;
      f_.side_bias[size_t(v.id)] = r.id;
      f_.is_side_output[size_t(r.id)] = true;
      return;
    }
  }

  // A linear layer's weight gradient, grad_y^T x [M, N] (f32, unbatched, its A read in place from grad_y [K, M] through
  // an absorbed transpose, no half operands: the SIMT kernel), stores the layer's bias gradient too where the graph
  // sums grad_y over its rows (sum_to [M] or [1, M], or sum over axis 0) and nothing reads the sum before the product
  // runs: the kernel adds A's rows as it stages them (matmul_kernel.h's row_sums).
  void find_side_row_sum(Value v) {
    const graph::Node& n = g_.node(v);
    const InPlaceOperand a = in_place_operand(g_, n.inputs[0]), b = in_place_operand(g_, n.inputs[1]);
    if (n.type.dtype != graph::DType::F32 || n.type.shape.size() != 2 || !a.transposed || a.half || b.half ||
        g_.type(n.inputs[1]).shape.size() != 2)
      return;
    const int64_t rows = n.type.shape[0];
    for (Value r : live_users(a.source)) {
      const graph::Node& rn = g_.node(r);
      if (rn.type.dtype != graph::DType::F32 || rn.type.numel() != rows || f_.is_side_output[size_t(r.id)]) continue;
      bool over_rows = false;
      if (rn.op == OpKind::SumTo) {
        const std::vector<int64_t> target = rn.attrs.get_ints("shape");
        over_rows = target == std::vector<int64_t>{rows} || target == std::vector<int64_t>{1, rows};
      } else if (rn.op == OpKind::Sum) {
        over_rows = rn.attrs.get_ints("axes") == std::vector<int64_t>{0};
      }
      if (!over_rows || f_.prologue[size_t(r.id)] >= 0 || !read_after(r, v)) continue;
      f_.side_bias[size_t(v.id)] = r.id;
      f_.is_side_output[size_t(r.id)] = true;
      return;
    }
  }

  // r sums a 4D [N, C, H, W] input to its C channels: sum_to [1, C, 1, 1] (or [C, 1, 1]), or sum over axes 0, 2, 3.
  bool channel_sum(Value r, int64_t channels) const {
    const graph::Node& n = g_.node(r);
    const graph::Shape& in = g_.type(n.inputs[0]).shape;
    if (in.size() != 4 || in[1] != channels || n.type.numel() != channels || n.type.dtype != graph::DType::F32) return false;
    if (n.op == OpKind::SumTo) {
      const std::vector<int64_t> target = n.attrs.get_ints("shape");
      return target == std::vector<int64_t>{1, channels, 1, 1} || target == std::vector<int64_t>{channels, 1, 1};
    }
    if (n.op != OpKind::Sum) return false;
    std::vector<int64_t> axes = n.attrs.get_ints("axes");
    std::sort(axes.begin(), axes.end());
    return axes == std::vector<int64_t>{0, 2, 3};
  }

  // A pooling gradient's windows tile its result (pool2d_kernels.h: the only pooling whose gradient sums channels).
  static bool tiling_windows(const graph::Node& n) {
    const graph::Pool2dOptions o = graph::pool2d_options(n);
    return heavy::pool2d_windows_tile(heavy::pool2d_shape(n.type.shape, o.kernel, o.stride, o.padding));
  }

  // Every launch that reads r (directly or through reshapes, which alias it) comes after v's.
  bool read_after(Value r, Value v) const {
    for (Value u : live_users(r)) {
      const OpKind op = g_.node(u).op;
      if (op == OpKind::Reshape || op == OpKind::Flatten) {
        if (!read_after(u, v)) return false;
      } else if (u.id <= v.id) {
        return false;
      }
    }
    return true;
  }

  // Roots that are state updates' new values or read only by such roots (recursively), and are no graph output;
  // scanned from the end, since users come after their inputs. Graph outputs stay where they are: moving an
  // inference graph's results to the end would only keep their inputs alive longer.
  void find_final_group() {
    std::vector<bool> in(size_t(g_.size()), false), output(size_t(g_.size()), false);
    for (const auto& o : g_.outputs()) output[size_t(o.value.id)] = true;
    for (int32_t id = g_.size(); id-- > 0;) {
      const Value v{id};
      const graph::Node& n = g_.node(id);
      if (!needed_[size_t(id)] || !is_pointwise(n.op) || f_.fused[size_t(id)] || f_.is_epilogue[size_t(id)] ||
          f_.is_side_output[size_t(id)] || n.op == OpKind::Cast || output[size_t(id)])
        continue;
      const std::vector<Value> us = live_users(v);
      if (us.empty() && !must_store_[size_t(id)]) continue;
      // A user fused into a root is computed by that root's kernel: v is in the group when that root is.
      in[size_t(id)] = std::all_of(us.begin(), us.end(), [&](Value u) { return bool(in[size_t(root_of(u).id)]); });
    }
    for (int32_t id = 0; id < g_.size(); ++id)
      if (in[size_t(id)]) f_.final_group.push_back(Value{id});
    if (f_.final_group.size() < 2) f_.final_group.clear();  // one root is simply launched where it stands
  }

  const graph::Graph& g_;
  std::vector<std::vector<Value>> users_;
  std::vector<bool> must_store_, needed_;
  Fusion f_;
};

}  // namespace

bool Fusion::in_final_group(Value v) const {
  return std::find(final_group.begin(), final_group.end(), v) != final_group.end();
}

SideOutputs Fusion::side_outputs(Value v) const {
  return {Value{side_pool.at(size_t(v.id))}, Value{side_argmax.at(size_t(v.id))}, result_unread.at(size_t(v.id)),
          Value{side_bias.at(size_t(v.id))}, Value{pair_root.at(size_t(v.id))}};
}

Fusion plan_fusion(const graph::Graph& g) { return Planner(g).run(); }

std::vector<bool> fuse_pointwise(const graph::Graph& g) { return plan_fusion(g).fused; }

}  // namespace spire::lowering
