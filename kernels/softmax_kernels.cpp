#include "kernels/softmax_kernels.h"
#include "kernels/workgroup_reduce.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

Val neg_inf(KernelBuilder& kb, Type t) { return kb.constant(t, -std::numeric_limits<double>::infinity()); }

bool pow2(uint32_t v) { return v > 0 && (v & (v - 1)) == 0; }

void check_config(const RowConfig& c, const std::string& op) {
  if (c.wg < 1 || c.wg > 1024 || (c.per_row && !pow2(c.wg)))
    throw std::invalid_argument(fmt::format("{}: config '{}' needs a workgroup of 1..1024 invocations (a power of two "
                                            "with per_row)", op, c.config().text()));
}

// The config after the kernel's name where it is not the heuristic's, so plans tell two configs apart.
std::string name_suffix(const RowConfig& c, const RowConfig& heuristic) {
  if (c == heuristic || c.per_row) return "";  // a per-row kernel's name carries its workgroup size already
  return fmt::format("_elems_wg{}", c.wg);
}

// One invocation per row: three passes over the row's L elements at stride `inner`.
HeavyKernel softmax_per_invocation(const std::string& name, const SoftmaxShape& s, Type t, bool log, uint32_t wg) {
  const uint32_t L = uint32_t(s.axis), inner = uint32_t(s.inner);
  const uint32_t rows = uint32_t(s.outer * s.inner);
  KernelBuilder kb(name, wg);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Val row = kb.global_id();
  kb.if_(row < rows, [&] {
    Val base = (row / inner) * (L * inner) + row % inner;
    Var m = kb.var("row_max", neg_inf(kb, t));
    kb.for_(kb.u32(0), kb.u32(L), [&](Val j) { m = max(m.get(), x[base + j * inner].load()); });
    Var sum = kb.var("row_sum", kb.constant(t, 0));
    kb.for_(kb.u32(0), kb.u32(L), [&](Val j) { sum += exp(x[base + j * inner].load() - m.get()); });
    if (log) {
      Val shift = m.get() + kir::log(sum.get());
      kb.for_(kb.u32(0), kb.u32(L), [&](Val j) { y[base + j * inner] = x[base + j * inner].load() - shift; });
    } else {
      Val inv = like(sum.get(), 1.0) / sum.get();
      kb.for_(kb.u32(0), kb.u32(L), [&](Val j) { y[base + j * inner] = exp(x[base + j * inner].load() - m.get()) * inv; });
    }
  });
  return {kb.finish(), groups_for_threads(rows, wg)};
}

// Rows of at most this many elements per invocation stay in registers: one read of the row instead of three.
constexpr uint32_t kCachedPerInvocation = 8;

// A row's max and sum of exp(x - max), reduced over a workgroup whose invocations take elements lid, lid + wg, ...
// (workgroup_reduce.h). Up to kCachedPerInvocation elements per invocation are loaded once and kept with their
// exponentials (x, e: element k is lid + k * wg, -inf and 0 past the row) for the pass that writes the row; longer
// rows are read again in each pass (x, e empty). Both forms fold an invocation's elements in the same order, so they
// give the same bits. Every invocation must call it (uniform control flow).
struct RowStats {
  Val max, sum;
  std::vector<Val> x, e;
  bool kept() const { return !x.empty(); }
};

RowStats workgroup_row_stats(KernelBuilder& kb, WorkgroupReduce& reduce, Shared scratch, Val lid, uint32_t L,
                             uint32_t wg, Type t, const std::function<Val(Val j)>& load) {
  RowStats r;
  const uint32_t per_invocation = (L + wg - 1) / wg;
  if (per_invocation <= kCachedPerInvocation) {
    Val m = neg_inf(kb, t);
    for (uint32_t k = 0; k < per_invocation; ++k) {
      Val j = lid + k * wg;
      r.x.push_back(select(j < L, load(min(j, kb.u32(L - 1))), neg_inf(kb, t)));
      m = max(m, r.x.back());
    }
    reduce.reduce(scratch, m, TreeOp::Max);
    r.max = scratch[0u];
    kb.barrier();  // everyone has read the max before the sum reuses the scratch
    Val sum = kb.constant(t, 0);
    for (uint32_t k = 0; k < per_invocation; ++k) {
      r.e.push_back(exp(r.x[k] - r.max));
      sum = sum + r.e.back();
    }
    reduce.reduce(scratch, sum, TreeOp::Sum);
    r.sum = scratch[0u];
    return r;
  }
  Var m = kb.var("part_max", neg_inf(kb, t));
  kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) { m = max(m.get(), load(j)); });
  reduce.reduce(scratch, m.get(), TreeOp::Max);
  r.max = scratch[0u];
  kb.barrier();
  Var sum = kb.var("part_sum", kb.constant(t, 0));
  kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) { sum += exp(load(j) - r.max); });
  reduce.reduce(scratch, sum.get(), TreeOp::Sum);
  r.sum = scratch[0u];
  return r;
}

// Calls write(j, x_j, exp(x_j - max)) for this invocation's elements of the row: from registers when the stats kept
// them, else loading them again.
void for_row_elements(KernelBuilder& kb, const RowStats& r, Val lid, uint32_t L, uint32_t wg,
                      const std::function<Val(Val j)>& load, const std::function<void(Val j, Val x, Val e)>& write) {
  if (r.kept()) {
    for (uint32_t k = 0; k < r.x.size(); ++k) {
      Val j = lid + k * wg;
      kb.if_(j < L, [&] { write(j, r.x[k], r.e[k]); });
    }
    return;
  }
  kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) {
    Val x = load(j);
    write(j, x, exp(x - r.max));
  });
}

// A kernel of one workgroup per row (softmax and the loss gradient over long rows): the workgroup's scratch and
// reduction, this invocation's element and the row the workgroup owns. Declared after the kernel's buffers.
struct RowWorkgroup {
  RowWorkgroup(KernelBuilder& kb, Type t, uint32_t wg, uint32_t subgroup)
      : kb(kb), t(t), wg(wg), scratch(kb.shared("scratch", t, wg)),
        reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t)), lid(reduce.element()), row(kb.group_id()) {}
  // The row's max and sum (workgroup_row_stats), its L values read through `load`.
  RowStats stats(uint32_t L, const std::function<Val(Val j)>& load) {
    return workgroup_row_stats(kb, reduce, scratch, lid, L, wg, t, load);
  }
  // This invocation's values of the row, handed to `write` (for_row_elements).
  void write_row(const RowStats& r, uint32_t L, const std::function<Val(Val j)>& load,
                 const std::function<void(Val j, Val x, Val e)>& write) {
    for_row_elements(kb, r, lid, L, wg, load, write);
  }

  KernelBuilder& kb;
  const Type t;
  const uint32_t wg;
  Shared scratch;
  WorkgroupReduce reduce;
  Val lid, row;
};

// One workgroup per row: workgroup_row_stats, then the row's values.
HeavyKernel softmax_per_workgroup(const std::string& name, const SoftmaxShape& s, Type t, bool log, uint32_t wg,
                                  uint32_t subgroup) {
  const uint32_t L = uint32_t(s.axis), inner = uint32_t(s.inner);
  const uint32_t rows = uint32_t(s.outer * s.inner);
  KernelBuilder kb(name + fmt::format("_wg{}", wg), wg);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  RowWorkgroup rw(kb, t, wg, subgroup);
  kb.if_(rw.row < rows, [&] {  // uniform per workgroup
    Val base = (rw.row / inner) * (L * inner) + rw.row % inner;
    auto load = [&](Val j) { return x[base + j * inner].load(); };
    RowStats r = rw.stats(L, load);
    // log_softmax never needs the exponentials: where they are not kept, the write pass computes none (the
    // device compiler drops an unused exp).
    Val shift = log ? r.max + kir::log(r.sum) : Val();
    Val inv = log ? Val() : like(r.sum, 1.0) / r.sum;
    rw.write_row(r, L, load, [&](Val j, Val xj, Val ej) { y[base + j * inner] = log ? xj - shift : ej * inv; });
  });
  return {kb.finish(), rows};
}

// The max and the sum of exp(x - max) of row `row_base .. + C` of the logits.
std::pair<Val, Val> row_stats(KernelBuilder& kb, Buf logits, Val row_base, uint32_t C, Type t) {
  Var m = kb.var("row_max", neg_inf(kb, t));
  kb.for_(kb.u32(0), kb.u32(C), [&](Val j) { m = max(m.get(), logits[row_base + j].load()); });
  Val row_max = m.get();
  Var sum = kb.var("row_sum", kb.constant(t, 0));
  kb.for_(kb.u32(0), kb.u32(C), [&](Val j) { sum += exp(logits[row_base + j].load() - row_max); });
  return {row_max, sum.get()};
}

}  // namespace

Config RowConfig::config() const { return Config{{"per_row", per_row ? 1 : 0}, {"wg", wg}}; }

RowConfig RowConfig::from(const Config& c) {
  int64_t per_row = c.get("per_row"), wg = c.get("wg");
  if ((per_row != 0 && per_row != 1) || wg < 1 || wg > 1024)
    throw std::invalid_argument(fmt::format("row config '{}': per_row 0 or 1, wg 1..1024", c.text()));
  return RowConfig{per_row == 1, uint32_t(wg)};
}

RowConfig softmax_heuristic(const SoftmaxShape& s) {
  if (s.axis >= kSoftmaxWorkgroupRowFrom) return {true, pow2_clamped(uint64_t(s.axis), 32, 256)};
  // Few rows of 32 or more: one invocation per row would leave a single workgroup walking each row three times
  // (attention's 12 heads at one query, 96 positions: 25 us a launch on an H200, a fifth of GPT-2's decode step);
  // a workgroup per row reads each row once, across its invocations.
  if (s.outer * s.inner < kFewRows && s.axis >= 32) return {true, pow2_clamped(uint64_t(s.axis), 32, 256)};
  return {false, kElementWorkgroup};
}

RowConfig cross_entropy_grad_heuristic(int64_t n, int64_t c) {
  if (c >= kSoftmaxWorkgroupRowFrom) return {true, pow2_clamped(uint64_t(c), 32, 256)};
  return {false, kElementWorkgroup};
}

std::vector<RowConfig> row_candidates(const RowConfig& heuristic, int64_t row_length, const Limits& limits) {
  std::vector<RowConfig> out{heuristic};
  auto add = [&](RowConfig c) {
    if (c.wg <= limits.max_invocations && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  for (uint32_t wg : {64u, 128u, 256u, 512u}) add({false, wg});
  // A workgroup wider than the row (rounded up to a power of two, 32 at least) only idles.
  const uint32_t widest = pow2_clamped(uint64_t(std::max<int64_t>(row_length, 1)), 32, 1024);
  for (uint32_t wg = 32; wg <= widest; wg *= 2) add({true, wg});
  return out;
}

HeavyKernel softmax_kernel(const SoftmaxShape& s, Type t, bool log, const RowConfig& c, uint32_t subgroup) {
  std::string op = log ? "log_softmax" : "softmax";
  std::string name = fmt::format("{}_o{}_l{}_i{}_{}", op, s.outer, s.axis, s.inner, float_suffix(t, op)) +
                     name_suffix(c, softmax_heuristic(s));
  index_u32(s.outer * s.axis * s.inner, op + " elements");
  if (s.outer * s.axis * s.inner == 0) return empty_result(name);
  check_config(c, op);
  if (c.per_row) return softmax_per_workgroup(name, s, t, log, c.wg, subgroup);
  return softmax_per_invocation(name, s, t, log, c.wg);
}

uint32_t cross_entropy_heuristic(int64_t n) { return pow2_clamped(uint64_t(std::max<int64_t>(n, 1)), 32, 256); }

uint32_t cross_entropy_heuristic(int64_t n, const Limits& limits) {
  if (limits.cpu) return cross_entropy_heuristic(n);
  const uint32_t widest = std::max<uint32_t>(256, std::min<uint32_t>(1024, limits.max_invocations));
  return pow2_clamped(uint64_t(std::max<int64_t>(n, 1)), 32, widest);
}

std::vector<uint32_t> cross_entropy_candidates(int64_t n, const Limits& limits) {
  std::vector<uint32_t> out{cross_entropy_heuristic(n, limits)};
  const uint32_t widest = pow2_clamped(uint64_t(std::max<int64_t>(n, 1)), 32, 1024);
  for (uint32_t wg = 32; wg <= widest && wg <= limits.max_invocations; wg *= 2)
    if (std::find(out.begin(), out.end(), wg) == out.end()) out.push_back(wg);
  return out;
}

uint32_t cross_entropy_splits(int64_t n, const Limits& limits) {
  if (limits.cpu || n < 2048) return 1;
  return uint32_t(std::min<int64_t>((n + 255) / 256, 1024));
}

HeavyKernel cross_entropy_kernel(int64_t n, int64_t c, Type t, uint32_t wg, uint32_t subgroup, uint32_t splits) {
  std::string name = fmt::format("cross_entropy_n{}_c{}_{}", n, c, float_suffix(t, "cross_entropy"));
  if (wg != cross_entropy_heuristic(n)) name += fmt::format("_wg{}", wg);
  if (splits > 1) name += fmt::format("_s{}", splits);
  index_u32(n * c, "cross_entropy logits elements");
  if (c < 1) throw std::invalid_argument(fmt::format("cross_entropy: logits [{}, {}] have no classes", n, c));
  if (!pow2(wg) || wg > 1024)
    throw std::invalid_argument(fmt::format("cross_entropy: a workgroup of {} invocations (a power of two up to 1024)", wg));
  if (splits < 1 || splits > 1024 || (splits > 1 && int64_t(splits) > n))
    throw std::invalid_argument(fmt::format("cross_entropy: {} splits of {} rows (1..1024, at most the rows)", splits, n));
  const uint32_t N = uint32_t(n), C = uint32_t(c), rows = (N + splits - 1) / splits;  // rows per split
  KernelBuilder kb(name, wg);
  Buf logits = kb.buffer("logits", t, Access::Read);
  Buf labels = kb.buffer("labels", Type::I32, Access::Read);
  Buf loss = kb.buffer(splits > 1 ? "partial_loss" : "loss", t, Access::Write);
  Shared scratch = kb.shared("partial", t, wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  Val lid = reduce.element();
  Val split = kb.group_id();
  kb.if_(split < splits, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Var partial = kb.var("partial", kb.constant(t, 0));
    if (N > 0) {
      Val begin = split * rows, end = min(begin + rows, N);
      kb.for_(begin + lid, end, kb.u32(wg), [&](Val row) {
        Val row_base = row * C;
        auto [row_max, row_sum] = row_stats(kb, logits, row_base, C, t);
        Val label = labels[row].load();
        Val in_range = (label >= 0) & (label < int32_t(C));
        Val picked = logits[row_base + cast(min(max(label, 0), int32_t(C - 1)), Type::U32)].load();
        Val nll = row_max + kir::log(row_sum) - picked;
        partial += select(in_range, nll, kb.constant(t, std::numeric_limits<double>::quiet_NaN()));
      });
    }
    reduce.reduce(scratch, partial.get(), TreeOp::Sum);
    // The mean of no rows is NaN, as PyTorch's is. Split: each workgroup's sum, which the combine divides.
    kb.if_(lid == 0u, [&] {
      if (splits > 1) loss[split] = scratch[0u].load();
      else loss[0u] = scratch[0u].load() / double(N);
    });
  });
  return {kb.finish(), splits};
}

HeavyKernel cross_entropy_combine_kernel(int64_t n, Type t, uint32_t splits, uint32_t subgroup) {
  const uint32_t wg = pow2_clamped(splits, 32, 1024);
  KernelBuilder kb(fmt::format("cross_entropy_combine_n{}_s{}_{}", n, splits, float_suffix(t, "cross_entropy")), wg);
  Buf partial = kb.buffer("partial_loss", t, Access::Read);
  Buf loss = kb.buffer("loss", t, Access::Write);
  Shared scratch = kb.shared("partial", t, wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  Val lid = reduce.element();
  Var sum = kb.var("sum", kb.constant(t, 0));
  kb.for_(lid, kb.u32(splits), kb.u32(wg), [&](Val i) { sum += partial[i].load(); });
  reduce.reduce(scratch, sum.get(), TreeOp::Sum);
  kb.if_(lid == 0u, [&] { loss[0u] = scratch[0u].load() / double(n); });
  return {kb.finish(), 1};
}

HeavyKernel cross_entropy_grad_kernel(int64_t n, int64_t c, Type t, const RowConfig& cfg, uint32_t subgroup) {
  std::string name = fmt::format("cross_entropy_grad_n{}_c{}_{}", n, c, float_suffix(t, "cross_entropy_grad")) +
                     name_suffix(cfg, cross_entropy_grad_heuristic(n, c));
  index_u32(n * c, "cross_entropy_grad logits elements");
  const uint32_t N = uint32_t(n), C = uint32_t(c);
  const uint32_t total = N * C;
  if (total == 0) return empty_result(name);
  check_config(cfg, "cross_entropy_grad");
  auto value = [&](KernelBuilder& kb, Val x, Val col, Val label, Val row_max, Val row_sum, Val g) {
    Val p = exp(x - row_max) / row_sum;
    Val one_hot = select(cast(col, Type::I32) == label, kb.constant(t, 1), kb.constant(t, 0));
    return g * (p - one_hot) / double(N);
  };
  if (cfg.per_row) {
    // Long rows: one workgroup per row computes the row's max and sum once (workgroup_row_stats), then writes it.
    const uint32_t wg = cfg.wg;
    KernelBuilder kb(name + fmt::format("_wg{}", wg), wg);
    Buf grad_loss = kb.buffer("grad_loss", t, Access::Read);
    Buf logits = kb.buffer("logits", t, Access::Read);
    Buf labels = kb.buffer("labels", Type::I32, Access::Read);
    Buf grad = kb.buffer("grad_logits", t, Access::Write);
    RowWorkgroup rw(kb, t, wg, subgroup);
    kb.if_(rw.row < N, [&] {  // uniform per workgroup
      Val base = rw.row * C;
      auto load = [&](Val j) { return logits[base + j].load(); };
      RowStats r = rw.stats(C, load);
      Val label = labels[rw.row].load();
      Val g = grad_loss[0u].load();
      rw.write_row(r, C, load, [&](Val j, Val xj, Val) { grad[base + j] = value(kb, xj, j, label, r.max, r.sum, g); });
    });
    return {kb.finish(), N};
  }
  KernelBuilder kb(name, cfg.wg);
  Buf grad_loss = kb.buffer("grad_loss", t, Access::Read);
  Buf logits = kb.buffer("logits", t, Access::Read);
  Buf labels = kb.buffer("labels", Type::I32, Access::Read);
  Buf grad = kb.buffer("grad_logits", t, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    Val row = o / C, col = o % C;
    auto [row_max, row_sum] = row_stats(kb, logits, row * C, C, t);
    grad[o] = value(kb, logits[o].load(), col, labels[row].load(), row_max, row_sum, grad_loss[0u].load());
  });
  return {kb.finish(), groups_for_threads(total, cfg.wg)};
}

}  // namespace spire::lowering::heavy
