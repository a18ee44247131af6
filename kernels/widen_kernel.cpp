#include "kernels/widen_kernel.h"

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

HeavyKernel widen_kernel(Type half, uint32_t count) {
  std::string name = fmt::format("widen_{}_{}", dtype_name(half), count);
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kElementWorkgroup);
  Buf x = kb.buffer("x", half, Access::Read);
  Buf y = kb.buffer("y", Type::F32, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] { y[e] = cast(Val(x[e]), Type::F32); });
  return {kb.finish(), groups_for_threads(count, kElementWorkgroup)};
}

}  // namespace spire::lowering::heavy
