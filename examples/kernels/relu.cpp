#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {

using namespace kir;

Kernel relu_kernel() {
  constexpr uint32_t kThreads = 256;
  constexpr uint32_t kPerThread = kReluBlock / kThreads;
  KernelBuilder kb("relu", kThreads);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto block_start = kb.group_id() * kReluBlock;
  auto lane = kb.local_id();
  // Four independent loads per invocation keep enough memory requests in flight to approach bandwidth.
  for (uint32_t k = 0; k < kPerThread; ++k) {
    auto i = block_start + (lane + k * kThreads);
    kb.if_(i < n, [&] { y[i] = max(x[i], 0.0f); });
  }
  return kb.finish();
}

}  // namespace spire::examples
