// A kernel that reads one buffer before its wait for the kernel launched before it (kir::WaitForPriorKernels), as a
// few-rows product reads its weights: out[i] = w[i] + x[i], w marked read_before_wait and read first, x after the wait.
// Shared by the PTX text tests, the coverage kernels ptxas assembles and the CUDA runtime's launch-order test.
#pragma once

#include "ir/kernel/builder.h"

namespace spire::testing {

inline kir::Kernel early_read_kernel() {
  using namespace kir;
  KernelBuilder kb("early_read", 64);
  auto w = kb.buffer("w", Type::F32, Access::Read);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  Val i = kb.global_id();
  kb.read_before_wait(w);
  Val early = w[i].load();
  kb.wait_for_prior_kernels();
  out[i] = early + x[i].load();
  return kb.finish();
}

}  // namespace spire::testing
