// Lowering's op table (lowering/op_lowering.h) against the graph's (ir/graph/op_table.h): every op that is not
// pointwise, custom or a fed leaf has exactly one entry, with the parts its category needs, and each entry's
// harness cases test its op.
#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ir/graph/op_table.h"
#include "lowering/op_lowering.h"
#include "op_harness/op_case.h"

namespace spire::lowering {
namespace {

using graph::OpCategory;

bool fed_leaf(graph::OpKind op) {
  return op == graph::OpKind::Input || op == graph::OpKind::Parameter || op == graph::OpKind::State;
}

TEST(OpLoweringTable, EveryEntryNamesOneOpOfTheGraphTable) {
  std::set<std::string_view> seen;
  for (const OpLowering& e : op_lowerings()) {
    EXPECT_TRUE(seen.insert(e.op).second) << e.op << " has two entries";
    const std::optional<graph::OpKind> op = graph::op_from_name(e.op);
    ASSERT_TRUE(op.has_value()) << e.op << " is no op of the graph's table";
    EXPECT_EQ(op_lowering(*op), &e) << e.op;
    EXPECT_NE(e.lower, nullptr) << e.op << " has no lowering";
  }
}

// Pointwise ops have no entry (their kernel is generated from their formulas); every other op does, and a heavy,
// reduction or layout op names the harness cases that reach its kernel's paths.
TEST(OpLoweringTable, EveryOpHasTheLoweringPartsItsCategoryNeeds) {
  for (const graph::OpInfo& info : graph::op_table()) {
    const OpLowering* e = op_lowering(info.kind);
    switch (info.category) {
      case OpCategory::Pointwise:
      case OpCategory::Custom:
        EXPECT_EQ(e, nullptr) << info.name << ": " << graph::op_category_name(info.category) << " ops need no entry";
        break;
      case OpCategory::Leaf:
        if (fed_leaf(info.kind)) {
          EXPECT_EQ(e, nullptr) << info.name << " is fed by the caller";
        } else {
          EXPECT_NE(e, nullptr) << info.name << " (a constant) has no lowering entry";
        }
        break;
      case OpCategory::Reduction:
      case OpCategory::Layout:
      case OpCategory::Heavy:
        ASSERT_NE(e, nullptr) << info.name << " has no lowering entry";
        EXPECT_NE(e->cases, nullptr) << info.name << "'s lowering entry names no harness cases";
        break;
    }
    if (e && e->takes_epilogue) {
      EXPECT_EQ(info.category, OpCategory::Heavy) << info.name << ": only a heavy op's kernel takes an epilogue";
    }
  }
}

// An entry's cases exercise its own op: a list shared by a family covers each of its ops.
TEST(OpLoweringTable, EachEntrysCasesTestItsOp) {
  for (const OpLowering& e : op_lowerings()) {
    if (!e.cases) continue;
    harness::CaseList cl;
    e.cases(cl);
    const graph::OpKind op = *graph::op_from_name(e.op);
    bool found = false;
    for (const harness::OpCase& c : cl.take()) found = found || c.op == op;
    EXPECT_TRUE(found) << e.op << "'s harness cases never test " << e.op;
  }
}

// The tunable ops are the ones whose templates have a config space; a node's TunableOp comes from its entry.
TEST(OpLoweringTable, TunableOpsHaveTheirTemplatesConfigSpace) {
  for (const char* name : {"matmul", "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "sum", "sum_to"})
    EXPECT_NE(op_lowering(*graph::op_from_name(name))->tunable, nullptr) << name;
  for (const char* name : {"max_pool2d", "avg_pool2d_grad", "reshape", "gather"})
    EXPECT_EQ(op_lowering(*graph::op_from_name(name))->tunable, nullptr) << name;
}

// --tune's help names the tunable ops from the table: each tunable entry once, no other op.
TEST(OpLoweringTable, TunableOpNamesListEachTunableEntry) {
  const std::string names = ", " + tunable_op_names() + ",";
  size_t tunable = 0;
  for (const OpLowering& e : op_lowerings()) {
    const bool listed = names.find(", " + std::string(e.op) + ",") != std::string::npos;
    EXPECT_EQ(listed, e.tunable != nullptr) << e.op;
    tunable += e.tunable != nullptr;
  }
  EXPECT_EQ(size_t(std::count(names.begin(), names.end(), ',')), tunable + 1) << names;
  EXPECT_NE(names.find(", softmax,"), std::string::npos) << names;
}

}  // namespace
}  // namespace spire::lowering
