// Reductions (sum, mean, max over any axes; sum_to) without atomics, so every run adds in the same order.
//
// The input splits into kept dims (one output element each) and reduced dims (R elements folded into
// each output); each side's element offset comes from an IndexMap. Two templates:
//   * loop: one invocation per output element walks its R elements (small R, or many outputs);
//   * workgroup: one workgroup per output element; each invocation strides over R, then the workgroup combines
//     the partial results (kernels/workgroup_reduce.h: subgroup shuffles where the device has them, a
//     shared-memory tree otherwise, in the same order either way) (large R);
//   * split: few outputs over a very long R (a loss over a whole batch): R is cut into chunks, one workgroup
//     per (output, chunk) writes partial results to scratch, and a second launch reduces those;
//   * rows: the kept dims innermost (R rows of the O outputs' elements side by side: a bias gradient over a batch),
//     a workgroup reads whole rows, one output per invocation, chunks of rows split as above (rows_kernel).
// R == 1 (no axes, or only size-1 axes) moves no data: the result aliases the input.
// Which template, its workgroup size and the split count are tunable (tunable_reduce): "path=0|1|2" (loop |
// workgroup | rows), "wg=N", "chunks=C" (C > 1: the split form, whose second pass keeps the heuristic).
#include <algorithm>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"
#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable_ops.h"
#include "op_harness/cases.h"

namespace spire::lowering {

using kir::Type;
using kir::Val;

namespace {

constexpr uint32_t kReduceWorkgroup = 256;

enum class Combine { Sum, Max };

struct Reduction {
  std::string key;       // "<input shape>_r<reduced dims>": the tuning key's shape
  Combine combine = Combine::Sum;
  bool mean = false;
  int64_t outputs = 0;   // O
  int64_t reduced = 0;   // R
  IndexMap kept;         // output index -> input offset of its first element
  IndexMap over;         // reduced index -> offset from there
  // Every reduced dim (of more than one element) comes before every kept one: the input is R rows of the O outputs'
  // elements side by side (a bias gradient's sum over a batch), which the rows template reads a row at a time.
  bool kept_innermost = false;
};

Reduction describe(const graph::Graph& g, graph::Value v) {
  using K = graph::OpKind;
  const graph::Node& n = g.node(v);
  const graph::Shape& in = g.type(n.inputs[0]).shape;
  std::vector<bool> reduce_dim(in.size(), false);
  if (n.op == K::SumTo) {
    const auto& target = n.attrs.get_ints("shape");
    size_t lead = in.size() - target.size();
    for (size_t d = 0; d < in.size(); ++d)
      reduce_dim[d] = d < lead || (target[d - lead] == 1 && in[d] != 1);
  } else {
    for (int64_t a : n.attrs.get_ints("axes")) reduce_dim[size_t(a)] = true;
  }
  std::vector<int64_t> strides = row_major_strides(in);
  graph::Shape kept_sizes, red_sizes;
  std::vector<int64_t> kept_strides, red_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    (reduce_dim[d] ? red_sizes : kept_sizes).push_back(in[d]);
    (reduce_dim[d] ? red_strides : kept_strides).push_back(strides[d]);
  }
  Reduction r;
  r.key = shape_tag(in) + "_r";
  for (size_t d = 0; d < in.size(); ++d)
    if (reduce_dim[d]) r.key += fmt::format("{}{}", r.key.back() == 'r' ? "" : "_", d);
  r.combine = n.op == K::Max ? Combine::Max : Combine::Sum;
  r.mean = n.op == K::Mean;
  r.outputs = graph::num_elements(kept_sizes);
  r.reduced = graph::num_elements(red_sizes);
  r.kept = IndexMap::strided(kept_sizes, kept_strides);
  r.over = IndexMap::strided(red_sizes, red_strides);
  bool kept_seen = false;
  r.kept_innermost = true;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!reduce_dim[d]) kept_seen = true;
    else if (kept_seen) r.kept_innermost = false;
  }
  return r;
}

Val combine(Combine c, Val a, Val b) { return c == Combine::Sum ? a + b : kir::max(a, b); }

Val finalize(const Reduction& r, Val acc) { return r.mean ? acc * (1.0 / double(r.reduced)) : acc; }

Val element(kir::KernelBuilder& kb, kir::Buf x, const Reduction& r, Val base, Val k) {
  return x[r.over.terms.empty() ? base : base + r.over.emit(kb, k)];
}

kir::Kernel loop_kernel(const std::string& name, Type t, const Reduction& r, uint32_t wg) {
  kir::KernelBuilder kb(name, wg);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer("y", t, kir::Access::Write);
  Val o = kb.global_id();
  kb.if_(o < kb.u32(uint32_t(r.outputs)), [&] {
    Val base = r.kept.emit(kb, o);
    // max starts from the first element (no -inf needed, and it works for integers); sum from zero.
    bool first = r.combine == Combine::Max;
    kir::Var acc = kb.var("acc", first ? Val(element(kb, x, r, base, kb.u32(0))) : kb.constant(t, 0));
    kb.for_(kb.u32(first ? 1 : 0), kb.u32(uint32_t(r.reduced)),
            [&](Val k) { acc = combine(r.combine, acc, element(kb, x, r, base, k)); });
    y[o] = finalize(r, acc);
  });
  return kb.finish();
}

// One workgroup per (output, chunk): with chunks == 1 a workgroup folds a whole output's R elements and stores
// the result; with chunks > 1 each folds R / chunks of them into partials[output * chunks + chunk], which a
// second launch combines (lower_reduce), so an output over millions of elements still spreads over the device.
kir::Kernel workgroup_kernel(const std::string& name, Type t, const Reduction& r, uint32_t wg, uint32_t subgroup,
                             int64_t chunks = 1) {
  const int64_t chunk_len = (r.reduced + chunks - 1) / chunks;
  kir::KernelBuilder kb(name, wg);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer(chunks == 1 ? "y" : "partials", t, kir::Access::Write);
  kir::Shared tile = kb.shared("tile", t, wg);
  heavy::WorkgroupReduce reduce(kb, wg, heavy::reduce_subgroup_size(subgroup, wg, t));
  Val group = kb.group_id(), lid = reduce.element();
  Val groups = kb.u32(uint32_t(r.outputs * chunks));
  // Groups past the last one (a folded grid launches a few) redo the last group's work but never store, so
  // every invocation reaches every barrier.
  Val g = kir::min(group, groups - 1u);
  Val out = chunks == 1 ? g : g / kb.u32(uint32_t(chunks));
  Val begin = chunks == 1 ? kb.u32(0) : (g % kb.u32(uint32_t(chunks))) * kb.u32(uint32_t(chunk_len));
  Val end = chunks == 1 ? kb.u32(uint32_t(r.reduced)) : kir::min(begin + uint32_t(chunk_len), kb.u32(uint32_t(r.reduced)));
  Val base = r.kept.emit(kb, out);
  // max: invocations past the range start from its last element (max is idempotent, the result is unchanged)
  // and continue one stride on; sum starts from zero.
  bool is_max = r.combine == Combine::Max;
  kir::Var acc = is_max ? kb.var("acc", element(kb, x, r, base, kir::min(begin + lid, end - 1u)))
                        : kb.var("acc", kb.constant(t, 0));
  Val first = is_max ? begin + lid + wg : begin + lid;
  kb.for_(first, end, kb.u32(wg), [&](Val k) { acc = combine(r.combine, acc, element(kb, x, r, base, k)); });
  reduce.reduce(tile, acc.get(), r.combine == Combine::Sum ? heavy::TreeOp::Sum : heavy::TreeOp::Max);
  kb.if_((lid == 0u) & (group < groups), [&] {
    Val v = tile[0u];
    y[group] = chunks == 1 ? finalize(r, v) : v;
  });
  return kb.finish();
}

// The rows template (kept_innermost): a workgroup takes `wg / W` rows at a time of W neighbouring outputs (W = min(O,
// wg)), one output per invocation, so that a subgroup reads one row's consecutive elements (the other templates
// stride down a column, one cache line per element); each invocation folds its rows of one chunk of R / chunks rows,
// its loads issued together, and the workgroup adds its row lanes in a fixed order. With chunks > 1 it writes
// partials[output * chunks + chunk] for the second pass, as the split form does.
kir::Kernel rows_kernel(const std::string& name, Type t, const Reduction& r, uint32_t wg, int64_t chunks) {
  const uint32_t O = uint32_t(r.outputs), R = uint32_t(r.reduced);
  const uint32_t W = std::min<uint32_t>(O, wg), lanes = wg / W, col_blocks = (O + W - 1) / W;
  const uint32_t chunk_len = uint32_t((r.reduced + chunks - 1) / chunks);
  const uint32_t steps = (chunk_len + lanes - 1) / lanes;
  kir::KernelBuilder kb(name, wg);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer(chunks == 1 ? "y" : "partials", t, kir::Access::Write);
  kir::Shared tile = kb.shared("tile", t, wg);
  Val lid = kb.local_id();
  Val g = kir::min(kb.group_id(), kb.u32(uint32_t(col_blocks * chunks)) - 1u);  // a folded grid's extras redo the last
  Val col = (g % col_blocks) * W + lid % W, lane = lid / W, chunk = g / col_blocks;
  Val base = r.kept.emit(kb, kir::min(col, O - 1));
  Val begin = chunk * chunk_len, end = kir::min(begin + chunk_len, kb.u32(R));
  // Rows past the chunk (and lanes past the last whole one) load the chunk's last row: max takes it again (it is in
  // the chunk), sum adds zero.
  auto row_value = [&](Val k) {
    Val v = element(kb, x, r, base, kir::min(k, end - 1u));
    return r.combine == Combine::Max ? v : kir::select((k < end) & (lane < lanes), v, kb.constant(t, 0));
  };
  kir::Var acc = kb.var("acc", r.combine == Combine::Max ? row_value(begin) : kb.constant(t, 0));
  auto fold = [&](Val k) { acc = combine(r.combine, acc, row_value(k)); };
  constexpr uint32_t kUnrolledSteps = 32;
  if (steps <= kUnrolledSteps) {
    std::vector<Val> values;  // every load first
    for (uint32_t step = 0; step < steps; ++step) values.push_back(row_value(begin + lane + step * lanes));
    for (Val v : values) acc = combine(r.combine, acc, v);
  } else {
    kb.for_(begin + lane, end, kb.u32(lanes), fold);
  }
  tile[lid] = acc.get();
  kb.barrier();
  kb.if_((lid < W) & (col < O) & (kb.group_id() < uint32_t(col_blocks * chunks)), [&] {
    Val total = tile[lid];
    for (uint32_t j = 1; j < lanes; ++j) total = combine(r.combine, total, tile[lid + j * W]);
    if (chunks == 1) y[col] = finalize(r, total);
    else y[col * uint32_t(chunks) + chunk] = total;
  });
  return kb.finish();
}

uint64_t rows_groups(const Reduction& r, uint32_t wg, int64_t chunks) {
  const uint64_t W = std::min<uint64_t>(uint64_t(r.outputs), wg);
  return (uint64_t(r.outputs) + W - 1) / W * uint64_t(chunks);
}

// One workgroup per output pays off once an output folds enough elements to keep the workgroup busy, or when
// there are too few outputs to fill the device one invocation each.
bool use_workgroup(const Reduction& r) {
  return r.reduced >= 128 || (r.reduced >= 16 && r.outputs <= 1024);
}

// Few outputs over a very long extent would leave most of a GPU idle (one workgroup per output): split each
// output's extent into chunks of about 4096 elements (16 per invocation), at most 1024 chunks.
int64_t split_chunks(const Reduction& r) {
  constexpr int64_t kChunk = 4096, kMaxChunks = 1024, kFewOutputs = 1024;
  if (r.outputs >= kFewOutputs || r.reduced < 4 * kChunk) return 1;
  return std::min(kMaxChunks, (r.reduced + kChunk - 1) / kChunk);
}

struct ReduceConfig {
  bool workgroup = false;   // the workgroup template (else the loop)
  uint32_t wg = kReduceWorkgroup;
  int64_t chunks = 1;       // > 1: the split form (workgroup or rows template, then a heuristic second pass)
  bool rows = false;        // the rows template (path 2; kept_innermost reductions)
  heavy::Config config() const { return {{"path", rows ? 2 : workgroup ? 1 : 0}, {"wg", wg}, {"chunks", chunks}}; }
  static ReduceConfig from(const heavy::Config& c) {
    int64_t path = c.get("path"), wg = c.get("wg"), chunks = c.get("chunks");
    if (path < 0 || path > 2 || wg < 1 || wg > 1024 || chunks < 1 || chunks > 4096 || (chunks > 1 && path == 0) ||
        (path >= 1 && (wg & (wg - 1)) != 0))
      throw std::invalid_argument(fmt::format("reduction config '{}': path 0 (loop), 1 (workgroup) or 2 (rows; wg a "
                                              "power of two for 1 and 2), wg 1..1024, chunks 1..4096 (more than 1 only "
                                              "with paths 1 and 2)", c.text()));
    return ReduceConfig{path == 1, uint32_t(wg), chunks, path == 2};
  }
  friend bool operator==(const ReduceConfig&, const ReduceConfig&) = default;
};

// The rows template's chunks for R rows of O outputs: rows_per_chunk rows each (a workgroup's row lanes share them, each
// invocation loading its few rows at once), at most 4096 chunks and 2^20 partial sums in all.
int64_t rows_chunks(const Reduction& r, int64_t rows_per_chunk) {
  const int64_t most = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, r.outputs));
  return std::clamp<int64_t>((r.reduced + rows_per_chunk - 1) / rows_per_chunk, 1, std::min<int64_t>(most, 4096));
}

// Without tuning: the split form for few outputs over a very long extent, else the workgroup template where
// use_workgroup() says so, 256 invocations per workgroup either way.
ReduceConfig heuristic(const Reduction& r) {
  if (int64_t chunks = split_chunks(r); chunks > 1) return {true, kReduceWorkgroup, chunks};
  return {r.reduced > 0 && use_workgroup(r), kReduceWorkgroup, 1};
}

std::vector<ReduceConfig> candidates(const Reduction& r, const heavy::Limits& limits) {
  std::vector<ReduceConfig> out{heuristic(r)};
  auto add = [&](ReduceConfig c) {
    if (c.wg <= limits.max_invocations && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  for (uint32_t wg : {64u, 128u, 256u, 512u}) add({false, wg, 1});
  if (r.reduced > 0)
    for (uint32_t wg : {32u, 64u, 128u, 256u, 512u}) add({true, wg, 1});
  // The rows template, a candidate only: LeNet's fully connected bias sums at batch 8192 on the H100 took 0.0049 +
  // 0.0043 ms for [8192, 120] against the workgroup template's 0.0106, but its second launches made vulkan:0's step
  // 0.02 ms slower (docs/PERFORMANCE.md).
  if (r.kept_innermost && r.reduced > 1)
    for (int64_t rows_per_chunk : {int64_t(8), int64_t(32), int64_t(128), int64_t(1) << 40})  // the last: one chunk
      for (uint32_t wg : {128u, 256u}) add({false, wg, rows_chunks(r, rows_per_chunk), true});
  // Splits of about 1024, 4096 and 16384 elements per chunk, where there are few outputs to spread.
  if (r.outputs < 1024)
    for (int64_t per_chunk : {1024, 4096, 16384}) {
      int64_t chunks = (r.reduced + per_chunk - 1) / per_chunk;
      if (chunks >= 2 && chunks <= 1024) add({true, kReduceWorkgroup, chunks});
    }
  return out;
}

// The launches of one reduction from buffer `in` to buffer `out` (program buffer indices).
void add_reduction(KernelProgram& p, const std::string& stem, const std::string& suffix, Type t, const Reduction& r,
                   const ReduceConfig& c, uint32_t subgroup, int32_t in, int32_t out) {
  if (c.rows)
    p.launches.push_back({rows_kernel(stem + "_rows" + suffix, t, r, c.wg, 1), {in, out}, rows_groups(r, c.wg, 1), {}});
  else if (c.workgroup)
    p.launches.push_back({workgroup_kernel(stem + "_wg" + suffix, t, r, c.wg, subgroup), {in, out}, uint64_t(r.outputs), {}});
  else
    p.launches.push_back({loop_kernel(stem + "_loop" + suffix, t, r, c.wg), {in, out}, groups_for(r.outputs, c.wg), {}});
}

KernelProgram reduction_program(const std::string& stem, Type t, const Reduction& r, const ReduceConfig& c,
                                uint32_t subgroup, std::vector<ProgramBuffer> io) {
  // Two configs' kernels must differ in name where they differ at all: the heuristic's keep their old names.
  const std::string suffix = c == heuristic(r) ? "" : fmt::format("_w{}", c.wg);
  KernelProgram p;
  if (c.chunks == 1) {
    p.buffers = std::move(io);  // x, y
    add_reduction(p, stem, suffix, t, r, c, subgroup, 0, 1);
    return p;
  }
  // Pass 1: partial results [outputs, chunks] in scratch; pass 2 reduces them like any other reduction. The
  // scratch is the program's first buffer, so the plan numbers it before x and y, as it always has.
  p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, r.outputs * c.chunks});
  p.buffers.insert(p.buffers.end(), io.begin(), io.end());  // then x, y
  if (c.rows)
    p.launches.push_back({rows_kernel(stem + fmt::format("_rows{}", c.chunks) + suffix, t, r, c.wg, c.chunks), {1, 0},
                          rows_groups(r, c.wg, c.chunks), {}});
  else
    p.launches.push_back({workgroup_kernel(stem + fmt::format("_split{}", c.chunks) + suffix, t, r, c.wg, subgroup, c.chunks),
                          {1, 0}, uint64_t(r.outputs * c.chunks), {}});
  Reduction second = r;
  second.reduced = c.chunks;
  second.kept = IndexMap::strided({r.outputs}, {c.chunks});
  second.over = IndexMap::strided({c.chunks}, {1});
  add_reduction(p, stem + "_combine", "", t, second, heuristic(second), subgroup, 0, 2);
  return p;
}

}  // namespace

std::optional<TunableOp> tunable_reduce(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& n = g.node(v);
  graph::Value x = n.inputs[0];
  Reduction r = describe(g, v);
  if (r.reduced == 1 || r.outputs == 0) return std::nullopt;
  Type t = device_type(n.type.dtype);
  std::string stem = fmt::format("{}_{}_{}_to_{}", graph::op_name(n.op), graph::dtype_name(n.type.dtype),
                                 shape_tag(g.type(x).shape), shape_tag(n.type.shape));
  TunableOp op;
  op.key = {std::string("reduce_") + (r.combine == Combine::Max ? "max" : r.mean ? "mean" : "sum"), r.key,
            std::string(dtype_name(t))};
  op.heuristic = heuristic(r).config();
  for (const ReduceConfig& c : candidates(r, limits)) op.candidates.push_back(c.config());
  op.build = [stem, t, r, sg = limits.subgroup_size, io = io_buffers(g, v)](const heavy::Config& c) {
    return reduction_program(stem, t, r, ReduceConfig::from(c), sg, io);
  };
  return op;
}

namespace {

void lower_reduce(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  Reduction r = describe(g, v);
  if (r.reduced == 1) {  // nothing is combined: same elements, same order
    ctx.alias(v, n.inputs[0]);
    return;
  }
  if (r.outputs == 0) return;
  lower_tunable(ctx, v, [&] { return *tunable_reduce(g, v, ctx.limits()); });
}

}  // namespace

std::vector<OpLowering> reduce_lowerings() {
  return {
      {.op = "sum", .lower = lower_reduce, .tunable = tunable_reduce, .cases = harness::reduction_cases},
      {.op = "mean", .lower = lower_reduce, .tunable = tunable_reduce, .cases = harness::reduction_cases},
      {.op = "max", .lower = lower_reduce, .tunable = tunable_reduce, .cases = harness::reduction_cases},
      // sum_to's cases sit with broadcast_to's, whose adjoint it is.
      {.op = "sum_to", .lower = lower_reduce, .tunable = tunable_reduce, .cases = harness::layout_cases},
  };
}

}  // namespace spire::lowering
