#include "lowering/heavy_kernels/split_sum_kernel.h"

namespace spire::lowering::heavy {

using namespace kir;

HeavyKernel split_sum_kernel(std::string name, Type t, uint32_t count, uint32_t splits) {
  if (count == 0) return empty_result(name);
  constexpr uint32_t kThreads = 256;
  KernelBuilder kb(std::move(name), kThreads);
  Buf partial = kb.buffer("partial", t, Access::Read);
  Buf out = kb.buffer("out", t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] {
    Val acc = partial[e];
    for (uint32_t sp = 1; sp < splits; ++sp) acc = acc + partial[e + sp * count];
    out[e] = acc;
  });
  return {kb.finish(), groups_for_threads(count, kThreads)};
}

}  // namespace spire::lowering::heavy
