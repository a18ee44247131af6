#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {

using namespace kir;

// silu(x) = x * sigmoid(x) = x / (1 + exp(-x)), in float32.
Kernel silu_kernel() {
  KernelBuilder kb("silu", 256);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    Val v = x[i];
    y[i] = v / (1.0f + exp(-v));
  });
  return kb.finish();
}

}  // namespace spire::examples
