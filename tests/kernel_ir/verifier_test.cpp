// The verifier rejects malformed kernels with a message naming the problem.
#include <gtest/gtest.h>

#include "ir/kernel/builder.h"

using namespace spire::kir;

namespace {

Kernel minimal() {
  KernelBuilder kb("k");
  auto o = kb.buffer("o", Type::F32, Access::Write);
  o[kb.global_id()] = kb.f32(1);
  return kb.finish();
}

TEST(KernelVerifier, AcceptsAWellFormedKernel) { EXPECT_EQ(verify(minimal()), ""); }

TEST(KernelVerifier, RejectsStoreToReadOnlyBuffer) {
  Kernel k = minimal();
  k.buffers[0].access = Access::Read;

  EXPECT_NE(verify(k).find("read-only"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsUndeclaredFeature) {
  Kernel k = minimal();
  k.buffers[0].elem = Type::F64;
  EXPECT_NE(verify(k).find("float64"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsZeroWorkgroup) {
  Kernel k = minimal();
  k.workgroup_size = {0, 1, 1};
  EXPECT_NE(verify(k), "");
}

TEST(KernelVerifier, RejectsDanglingOperand) {
  Kernel k = minimal();
  auto& st = std::get<StoreBuffer>(k.body.stmts.back());
  st.value = 999;
  EXPECT_NE(verify(k).find("does not exist"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsBoolBuffer) {
  Kernel k = minimal();
  k.buffers[0].elem = Type::Bool;
  EXPECT_NE(verify(k).find("bool"), std::string::npos);
}

TEST(KernelVerifier, ScalarLayoutAlignsEachToItsSize) {
  KernelBuilder kb("k");
  kb.scalar("a", Type::U32);
  kb.scalar("b", Type::F64);
  kb.scalar("c", Type::F32);
  Kernel k = kb.finish();
  EXPECT_EQ(k.scalar_offsets(), (std::vector<uint32_t>{0, 8, 16}));
  EXPECT_EQ(k.scalar_block_bytes(), 20u);
}

}  // namespace
