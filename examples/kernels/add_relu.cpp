#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {

using namespace kir;

// Fused add + ReLU: one pass over memory instead of two.
Kernel add_relu_kernel() {
  KernelBuilder kb("add_relu", 256);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto b = kb.buffer("b", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = max(a[i] + b[i], 0.0f); });
  return kb.finish();
}

}  // namespace spire::examples
