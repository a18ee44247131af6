#include "kernels/zero_fill_kernel.h"

namespace spire::lowering::heavy {

using namespace kir;

HeavyKernel zero_fill_kernel(std::string name, Type t, uint32_t count) {
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kElementWorkgroup);
  Buf out = kb.buffer("out", t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] { out[e] = kb.constant(t, 0); });
  return {kb.finish(), groups_for_threads(count, kElementWorkgroup)};
}

}  // namespace spire::lowering::heavy
