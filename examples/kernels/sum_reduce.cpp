#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {

using namespace kir;

Kernel sum_reduce_pass_kernel() {
  constexpr uint32_t wg = kReduceWorkgroup;
  KernelBuilder kb("sum_reduce_pass", wg);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto partial = kb.buffer("partial", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto tile = kb.shared("tile", Type::F32, wg);
  auto lid = kb.local_id();
  auto group = kb.group_id();
  auto i = kb.global_id();
  // Out-of-range lanes contribute zero, so every lane reaches every barrier (barriers need uniform flow).
  auto v = kb.var("v", kb.f32(0.0f));
  kb.if_(i < n, [&] { v = x[i]; });
  tile[lid] = v.get();
  kb.barrier();
  // Tree levels unrolled in C++: 128, 64, ..., 1.
  for (uint32_t stride = wg / 2; stride > 0; stride /= 2) {
    kb.if_(lid < stride, [&] { tile[lid] = tile[lid] + tile[lid + stride]; });
    kb.barrier();
  }
  // A folded grid may launch groups past ceil(n / wg); they hold only zeros and must not write.
  auto groups_needed = (n + (wg - 1)) / wg;
  kb.if_((lid == 0u) & (group < groups_needed), [&] { partial[group] = tile[0u]; });
  return kb.finish();
}

}  // namespace spire::examples
