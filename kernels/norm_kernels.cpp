#include "kernels/norm_kernels.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

// Elements per invocation kept in registers between the passes.
constexpr uint32_t kKeptPerInvocation = 8;

}  // namespace

Config NormConfig::config() const { return Config{{"wg", wg}}; }

NormConfig NormConfig::from(const Config& c) {
  const int64_t wg = c.get("wg");
  if (wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0)
    throw std::invalid_argument(fmt::format("norm config '{}': wg must be a power of two from 32 to 1024", c.text()));
  return {uint32_t(wg)};
}

NormConfig norm_heuristic(const NormShape& s) {
  uint32_t wg = 32;
  while (wg < 256 && int64_t(wg) * 4 < s.length) wg *= 2;
  return {wg};
}

std::vector<NormConfig> norm_candidates(const NormShape& s, const Limits& limits) {
  std::vector<NormConfig> out{norm_heuristic(s)};
  for (uint32_t wg = 32; wg <= std::min<uint32_t>(256, limits.max_invocations); wg *= 2)
    if (wg != out[0].wg) out.push_back({wg});
  return out;
}

HeavyKernel norm_kernel(const NormShape& s, Type t, const NormConfig& c, uint32_t subgroup) {
  const std::string name = fmt::format("{}_r{}_l{}_wg{}_{}", s.center ? "layer_norm" : "rms_norm", s.rows, s.length, c.wg,
                                       float_suffix(t, s.center ? "layer_norm" : "rms_norm"));
  NormConfig::from(c.config());  // checks the workgroup size
  const uint32_t rows = index_u32(s.rows, name + " rows"), L = index_u32(s.length, name + " row length");
  index_u32(s.rows * s.length, name + " elements");
  if (rows == 0 || L == 0) return empty_result(name);
  const uint32_t wg = c.wg, per = (L + wg - 1) / wg;

  KernelBuilder kb(name, wg);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf scale = kb.buffer("scale", t, Access::Read);
  std::optional<Buf> bias;
  if (s.center) bias = kb.buffer("bias", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Shared scratch = kb.shared("partial", t, wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  Val lid = reduce.element();
  Val row = kb.group_id();
  kb.if_(row < rows, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val base = row * L;
    Val zero = kb.constant(t, 0);
    auto load = [&](Val j) { return x[base + j].load(); };
    const bool kept = per <= kKeptPerInvocation;
    // The elements this invocation holds (kept rows), zero past the row's end.
    std::vector<Val> v;
    if (kept)
      for (uint32_t k = 0; k < per; ++k) {
        Val j = lid + k * wg;
        v.push_back(per * wg == L ? load(j) : select(j < L, load(min(j, kb.u32(L - 1))), zero));
      }
    // The mean (layer_norm), then the second moment about it.
    Val mean = zero;
    if (s.center) {
      Val part = zero;
      if (kept) {
        for (Val e : v) part = part + e;
      } else {
        Var acc = kb.var("part_sum", zero);
        kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) { acc += load(j); });
        part = acc.get();
      }
      reduce.reduce(scratch, part, TreeOp::Sum);
      mean = scratch[0u].load() / kb.constant(t, double(L));
      kb.barrier();  // every invocation has read the sum before the next reduction writes the scratch
    }
    Val part = zero;
    if (kept) {
      for (uint32_t k = 0; k < per; ++k) {
        Val d = v[k] - mean;
        Val sq = d * d;
        part = part + (per * wg == L ? sq : select(lid + k * wg < L, sq, zero));
      }
    } else {
      Var acc = kb.var("part_moment", zero);
      kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) {
        Val d = load(j) - mean;
        acc += d * d;
      });
      part = acc.get();
    }
    reduce.reduce(scratch, part, TreeOp::Sum);
    Val r = kb.constant(t, 1.0) / sqrt(scratch[0u].load() / kb.constant(t, double(L)) + kb.constant(t, s.epsilon));
    auto write = [&](Val j, Val value) {
      Val out = (value - mean) * r * scale[j].load();
      if (bias) out = out + (*bias)[j].load();
      y[base + j] = out;
    };
    if (kept) {
      for (uint32_t k = 0; k < per; ++k) {
        Val j = lid + k * wg;
        if ((k + 1) * wg <= L) write(j, v[k]);
        else kb.if_(j < L, [&] { write(j, v[k]); });
      }
    } else {
      kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) { write(j, load(j)); });
    }
  });
  return {kb.finish(), rows};
}

}  // namespace spire::lowering::heavy
