// Which wait lands which copy on Vulkan (backends/spirv/copy_plan.h): a wait lands the closed batches older than
// its count and leaves the newest ones and the open batch in registers; a loop whose slices are distinct copy
// statements (unrolled by the stage count) keeps its whole pipeline in flight.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/spirv/copy_plan.h"
#include "ir/kernel/builder.h"

namespace spire::spirv {
namespace {

using namespace spire::kir;

// The kernel's copy and wait statements in body order.
struct Statements {
  std::vector<const CopyToShared*> copies;
  std::vector<const CopyWait*> waits;
};

void collect(const Block& b, Statements& out) {
  for (const Stmt& s : b.stmts) {
    if (const auto* c = std::get_if<CopyToShared>(&s)) out.copies.push_back(c);
    else if (const auto* w = std::get_if<CopyWait>(&s)) out.waits.push_back(w);
    else if (const auto* i = std::get_if<If>(&s)) {
      collect(*i->then_body, out);
      if (i->else_body) collect(*i->else_body, out);
    } else if (const auto* f = std::get_if<For>(&s)) {
      collect(*f->body, out);
    }
  }
}

// The sites (numbered by the copies' body order) that wait `w` lands, sorted.
std::vector<uint32_t> landed_at(const CopyPlan& plan, const CopyWait* w) {
  auto it = plan.lands.find(w);
  std::vector<uint32_t> out = it == plan.lands.end() ? std::vector<uint32_t>{} : it->second;
  std::sort(out.begin(), out.end());
  return out;
}

struct CopyKernel {
  KernelBuilder kb{"copies", 32};
  Shared tile = kb.shared("tile", Type::F32, 32 * 4 * 8);
  Buf in = kb.buffer("in", Type::F32, Access::Read);
  Buf out = kb.buffer("out", Type::F32, Access::Write);
  void copy(uint32_t slot) {
    kb.copy_to_shared(tile, kb.local_id() * 4u + slot * 128u, in, kb.local_id() * 4u + slot * 128u, kb.boolean(true));
  }
  void read(uint32_t slot) { out[kb.local_id()] = tile[kb.local_id() + slot * 128u]; }
};

TEST(SpirvCopyPlan, AWaitLandsOnlyTheBatchesOlderThanItsCount) {
  CopyKernel k;
  k.copy(0);  // site 0
  k.kb.copy_commit();
  k.copy(1);  // site 1
  k.kb.copy_commit();
  k.copy(2);           // site 2: the open batch
  k.kb.copy_wait(1);   // lands site 0 only
  k.kb.barrier();
  k.read(0);
  k.kb.copy_wait(0);   // lands site 1; site 2 is still open
  k.kb.copy_commit();
  k.kb.copy_wait(0);   // lands site 2
  k.kb.barrier();
  k.read(1);
  k.read(2);
  const Kernel kernel = k.kb.finish();
  Statements st;
  collect(kernel.body, st);
  ASSERT_EQ(st.waits.size(), 3u);
  const CopyPlan plan = plan_copy_sites(kernel.body);
  EXPECT_EQ(landed_at(plan, st.waits[0]), (std::vector<uint32_t>{0}));
  EXPECT_EQ(landed_at(plan, st.waits[1]), (std::vector<uint32_t>{1}));
  EXPECT_EQ(landed_at(plan, st.waits[2]), (std::vector<uint32_t>{2}));
  EXPECT_TRUE(plan.lands_before_rerun.empty());
}

TEST(SpirvCopyPlan, ACopyInOneBranchIsLandedByTheWaitAfterTheJoin) {
  CopyKernel k;
  k.kb.if_(k.kb.local_id() < 16u, [&] { k.copy(0); });
  k.kb.copy_commit();
  k.kb.copy_wait(0);
  const Kernel kernel = k.kb.finish();
  Statements st;
  collect(kernel.body, st);
  const CopyPlan plan = plan_copy_sites(kernel.body);
  EXPECT_EQ(landed_at(plan, st.waits.at(0)), (std::vector<uint32_t>{0}));
}

// A 3-stage pipeline as the tensor-core matmul builds it: two slices issued before the loop, then each round waits
// for one of the two in flight and issues the next.
TEST(SpirvCopyPlan, ALoopReusingOneCopyStatementLandsItsPreviousCopyWhenItRunsAgain) {
  CopyKernel k;
  k.copy(0);  // site 0
  k.kb.copy_commit();
  k.copy(1);  // site 1
  k.kb.copy_commit();
  k.kb.for_(k.kb.u32(0), k.kb.u32(6), [&](Val) {
    k.kb.copy_wait(1);
    k.kb.barrier();
    k.copy(2);  // site 2, every round
    k.kb.copy_commit();
    k.read(0);
  });
  k.kb.copy_wait(0);
  const Kernel kernel = k.kb.finish();
  Statements st;
  collect(kernel.body, st);
  const CopyPlan plan = plan_copy_sites(kernel.body);
  // The loop's wait lands site 0 and (past the first round) site 1; site 2's copy is always the newest batch
  // there, so it stays in flight until site 2 runs again, which lands it first.
  EXPECT_EQ(landed_at(plan, st.waits.at(0)), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(plan.lands_before_rerun, (std::set<uint32_t>{2}));
}

// The same pipeline with the loop unrolled three rounds deep over whole laps, the last rounds after it: each round's
// copies are their own site, so each wait in the loop lands exactly the slice issued two rounds before and the
// other stays in flight.
TEST(SpirvCopyPlan, ALoopUnrolledByTheStageCountKeepsTwoSlicesInFlight) {
  CopyKernel k;
  k.copy(0);  // site 0
  k.kb.copy_commit();
  k.copy(1);  // site 1
  k.kb.copy_commit();
  auto round = [&](Val kt, uint32_t j) {
    k.kb.copy_wait(1);
    k.kb.barrier();
    k.kb.if_(kt + 2u < 10u, [&] { k.copy((j + 2) % 3); });
    k.kb.copy_commit();
    k.read(j);
  };
  k.kb.for_(k.kb.u32(0), k.kb.u32(3), [&](Val t) {
    for (uint32_t j = 0; j < 3; ++j) round(t * 3u + j, j);  // sites 2, 3, 4
  });
  round(k.kb.u32(9), 0);  // the tenth slice; site 5 copies nothing
  k.kb.copy_wait(0);
  const Kernel kernel = k.kb.finish();
  Statements st;
  collect(kernel.body, st);
  ASSERT_EQ(st.waits.size(), 5u);
  const CopyPlan plan = plan_copy_sites(kernel.body);
  // Round 0 lands site 0 entering the loop, else the previous lap's round 1 (site 3); round 1 site 1 or round 2's
  // (site 4); round 2 round 0's (site 2).
  EXPECT_EQ(landed_at(plan, st.waits[0]), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(landed_at(plan, st.waits[1]), (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(landed_at(plan, st.waits[2]), (std::vector<uint32_t>{2}));
  EXPECT_EQ(landed_at(plan, st.waits[3]), (std::vector<uint32_t>{0, 3}));  // as round 0: a lap ended, or none ran
  EXPECT_TRUE(plan.lands_before_rerun.empty());
}

}  // namespace
}  // namespace spire::spirv
