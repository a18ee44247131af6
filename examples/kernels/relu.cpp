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
  auto first = block_start + kb.local_id();
  // Full blocks issue all four loads before any store, so four memory requests per invocation are in flight
  // at once (a store between loads would make the compiler keep them in order, one round trip each).
  auto full = (block_start < n) & (n - block_start >= kReluBlock);
  kb.if_else(
      full,
      [&] {
        Val v[kPerThread];
        for (uint32_t k = 0; k < kPerThread; ++k) v[k] = x[first + k * kThreads];
        for (uint32_t k = 0; k < kPerThread; ++k) y[first + k * kThreads] = max(v[k], 0.0f);
      },
      [&] {  // the masked tail: the last, partial block
        for (uint32_t k = 0; k < kPerThread; ++k) {
          auto i = first + k * kThreads;
          kb.if_(i < n, [&] { y[i] = max(x[i], 0.0f); });
        }
      });
  return kb.finish();
}

}  // namespace spire::examples
