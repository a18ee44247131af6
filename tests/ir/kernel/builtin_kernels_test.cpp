// Every built-in kernel builds, verifies, and is findable by name.
#include <gtest/gtest.h>

#include <set>

#include "examples/builtin_kernels.h"

using namespace spire;

TEST(BuiltinKernels, EachBuildsAndVerifiesUnderAUniqueName) {
  std::set<std::string> names;
  ASSERT_GE(examples::builtin_kernels().size(), 5u);
  for (const auto& bk : examples::builtin_kernels()) {
    kir::Kernel k = bk.build();
    EXPECT_EQ(kir::verify(k), "") << bk.name;
    EXPECT_EQ(k.name, bk.name);
    EXPECT_TRUE(names.insert(bk.name).second) << "duplicate " << bk.name;
    EXPECT_EQ(examples::find_builtin_kernel(bk.name), &bk);
  }
  EXPECT_EQ(examples::find_builtin_kernel("no_such_kernel"), nullptr);
}

TEST(BuiltinKernels, SumReductionUsesSharedMemoryAndBarriers) {
  kir::Kernel k = examples::sum_reduce_pass_kernel();
  EXPECT_EQ(k.shared.size(), 1u);
  size_t barriers = 0;
  for (const auto& s : k.body.stmts) barriers += std::holds_alternative<kir::Barrier>(s);
  EXPECT_EQ(barriers, 9u);  // after the load, then one per tree level (128 .. 1)
}
