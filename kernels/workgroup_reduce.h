// Combining one value per invocation over a workgroup, in one fixed order on every device.
//
// The order: element e (0 .. wg-1) is first combined with element e^1 (lower element on the left), those pairs
// with the neighbouring pairs (e^2), and so on up to the highest bit. A subgroup of S invocations gets the
// first log2(S) levels from shuffle-xor butterflies, which pair exactly those elements, so a device with
// subgroups and one without add in the same order and agree bit for bit: the subgroup size changes the speed
// (one barrier instead of log2(wg)), never the result.
//
// The subgroup path is baked for the size S the device reports, with the tree beside it: the kernel checks the
// size it actually runs at (Intel may run a smaller one than it reports) and takes the tree when they differ.
#pragma once

#include <cstdint>

#include "ir/kernel/builder.h"
#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

// The subgroup size a workgroup of `wg` invocations reduces values of type `t` with on a device whose
// Limits::subgroup_size is `device_subgroup`: that size where wg is a multiple of it (whole subgroups) and t is a
// 32-bit type, else 0 (the shared-memory tree). 64-bit values would take two shuffles a step on every device, and
// f64 reductions serve reference checks, not speed.
uint32_t reduce_subgroup_size(uint32_t device_subgroup, uint32_t wg, kir::Type t);

class WorkgroupReduce {
 public:
  // wg: a power of two; subgroup_size: from reduce_subgroup_size (0: tree only).
  WorkgroupReduce(kir::KernelBuilder& kb, uint32_t wg, uint32_t subgroup_size);

  // This invocation's element, 0 .. wg-1: the index a kernel strides its own loop with, in place of local_id,
  // so that element e's value is the same on both paths (subgroups need not be laid out by local id).
  kir::Val element() const { return element_; }

  // Bool: whether this run takes the subgroup path (false where the kernel has none). Tests store it to show
  // that a device ran the path they meant to test.
  kir::Val on_subgroups() const { return subgroup_size_ ? on_subgroups_ : kb_.boolean(false); }

  // Combines every invocation's `value` (scratch holds >= wg elements of its type). Every invocation must call it,
  // in uniform control flow (it contains barriers and shuffles). On return every invocation may read the result in
  // scratch[0]; write `scratch` again only after another barrier.
  void reduce(kir::Shared scratch, kir::Val value, TreeOp op);

 private:
  void tree(kir::Shared scratch, kir::Val value, TreeOp op);
  void subgroups(kir::Shared scratch, kir::Val value, TreeOp op);
  kir::Val butterfly(kir::Val v, uint32_t width, TreeOp op);

  kir::KernelBuilder& kb_;
  uint32_t wg_;
  uint32_t subgroup_size_;
  kir::Val on_subgroups_;  // Bool: the device runs subgroups of the baked size (only with subgroup_size_ > 0)
  kir::Val lane_, subgroup_;
  kir::Val element_;
};

}  // namespace spire::lowering::heavy
