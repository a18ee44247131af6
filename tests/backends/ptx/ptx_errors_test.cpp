// Kernels the PTX backend cannot or must not compile fail loudly, naming the kernel and the problem.
#include <gtest/gtest.h>

#include "backends/ptx/ptx_backend.h"
#include "ir/kernel/builder.h"

namespace spire::ptx::testing {
namespace {

using namespace kir;

std::string error_of(const Kernel& k, uint32_t sm = 75) {
  try {
    compile(k, Target{sm});
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(PtxErrors, TooMuchSharedMemory) {
  KernelBuilder kb("big_shared", 64);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  auto s = kb.shared("s", Type::F32, 64 * 1024);  // 256 KiB: more than any CUDA GPU gives a block
  s[kb.local_id()] = kb.f32(1.0f);
  kb.barrier();
  o[kb.global_id()] = s[kb.local_id()];
  std::string msg = error_of(kb.finish());
  EXPECT_NE(msg.find("big_shared"), std::string::npos) << msg;
  EXPECT_NE(msg.find("262144 bytes"), std::string::npos) << msg;
}

TEST(PtxErrors, WorkgroupOverCudaLimit) {
  KernelBuilder kb("huge_group", 2048);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  o[kb.global_id()] = kb.f32(1.0f);
  std::string msg = error_of(kb.finish());
  EXPECT_NE(msg.find("huge_group"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2048x1x1"), std::string::npos) << msg;
}

TEST(PtxErrors, MalformedKernel) {
  Kernel k;
  k.name = "broken";
  k.buffers.push_back({"b", Type::F32, Access::Read});
  StoreBuffer st{0, 7, 8};  // operands that do not exist, into a read-only buffer
  k.body.stmts.emplace_back(st);
  std::string msg = error_of(k);
  EXPECT_NE(msg.find("broken"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed"), std::string::npos) << msg;
}

TEST(PtxErrors, TargetBelowBaseline) {
  KernelBuilder kb("old_gpu", 32);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  o[kb.global_id()] = kb.f32(1.0f);
  std::string msg = error_of(kb.finish(), 70);
  EXPECT_NE(msg.find("sm_70"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spire::ptx::testing
