#include "kernels/workgroup_reduce.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using kir::Val;

namespace {

bool pow2(uint32_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Lower element on the left, as the order in the header says (it matters for max's choice between -0 and +0).
Val combine(TreeOp op, Val lower, Val upper) { return op == TreeOp::Sum ? lower + upper : kir::max(lower, upper); }

}  // namespace

uint32_t reduce_subgroup_size(uint32_t device_subgroup, uint32_t wg, kir::Type t) {
  const uint32_t s = device_subgroup;
  return s >= 2 && pow2(s) && wg % s == 0 && dtype_bytes(t) == 4 ? s : 0;
}

WorkgroupReduce::WorkgroupReduce(kir::KernelBuilder& kb, uint32_t wg, uint32_t subgroup_size)
    : kb_(kb), wg_(wg), subgroup_size_(subgroup_size) {
  if (!pow2(wg)) throw std::invalid_argument(fmt::format("workgroup reduction over {} invocations (a power of two)", wg));
  if (subgroup_size && (!pow2(subgroup_size) || wg % subgroup_size != 0))
    throw std::invalid_argument(fmt::format("workgroup reduction: {} invocations are not whole subgroups of {}", wg,
                                            subgroup_size));
  if (!subgroup_size) {
    element_ = kb.local_id();
    return;
  }
  on_subgroups_ = kb.subgroup_size() == subgroup_size;
  lane_ = kb.subgroup_local_id();
  subgroup_ = kb.subgroup_id();
  element_ = kir::select(on_subgroups_, subgroup_ * subgroup_size + lane_, kb.local_id());
}

void WorkgroupReduce::reduce(kir::Shared scratch, Val value, TreeOp op) {
  if (!subgroup_size_) return tree(scratch, value, op);
  kb_.if_else(on_subgroups_, [&] { subgroups(scratch, value, op); }, [&] { tree(scratch, value, op); });
}

// Level by level through shared memory: at stride s, element 2s*i takes in element 2s*i + s. The active
// invocations are the first wg/2s, so whole subgroups drop out as the levels go up.
void WorkgroupReduce::tree(kir::Shared scratch, Val value, TreeOp op) {
  scratch[element_] = value;
  kb_.barrier();
  for (uint32_t s = 1; s < wg_; s *= 2) {
    kb_.if_(element_ < wg_ / (2 * s), [&] {
      Val at = element_ * (2 * s);
      scratch[at] = combine(op, scratch[at], scratch[at + s]);
    });
    kb_.barrier();
  }
}

// The first log2(width) levels among lanes. Every lane combines itself (left) with its partner (right), which is
// the header's order for lanes whose bit m is clear; a lane with bit m set gets the pair the other way round, but
// no lane that matters reads it: lane 0's partner at step m has every bit below m clear, so by induction lane 0
// ends with its block combined exactly in the header's order.
Val WorkgroupReduce::butterfly(Val v, uint32_t width, TreeOp op) {
  for (uint32_t m = 1; m < width; m *= 2) v = combine(op, v, kb_.shuffle_xor(v, m));
  return v;
}

// Each subgroup folds its S elements by shuffles; then the wg/S partials go round again, S at a time, through
// shared memory, until one is left. Lane 0 of subgroup j writes partial j, so element order is kept throughout.
void WorkgroupReduce::subgroups(kir::Shared scratch, Val value, TreeOp op) {
  const uint32_t S = subgroup_size_;
  Val v = butterfly(value, S, op);
  uint32_t count = wg_ / S;  // partials left
  kb_.if_(lane_ == 0u, [&] { scratch[subgroup_] = v; });
  kb_.barrier();
  while (count > 1) {
    const uint32_t width = count < S ? count : S;  // partials one subgroup folds this round
    const uint32_t next = count / width;
    // Every subgroup shuffles (uniformly); those past the partials read a clamped index and store nothing.
    Val r = butterfly(scratch[kir::min(subgroup_ * width + lane_, kb_.u32(count - 1))], width, op);
    kb_.barrier();  // every read of this round happens before any write
    kb_.if_((lane_ == 0u) & (subgroup_ < next), [&] { scratch[subgroup_] = r; });
    kb_.barrier();
    count = next;
  }
}

}  // namespace spire::lowering::heavy
