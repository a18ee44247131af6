#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {

using namespace kir;

Kernel vector_add_kernel() {
  KernelBuilder kb("vector_add", 256);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto b = kb.buffer("b", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { c[i] = a[i] + b[i]; });
  return kb.finish();
}

}  // namespace spire::examples
