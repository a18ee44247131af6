// The canonical passes: one list, in the order canonicalize() runs them, each reported to the observer at
// PassPoint::Canonical, and canonicalize() the same graph as the passes applied one after another by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/lenet.h"
#include "ir/graph/text_form.h"
#include "passes/canonical.h"
#include "passes/compute_in_f32.h"
#include "passes/decompose.h"
#include "passes/fold_transposes.h"
#include "passes/fuse_norms.h"
#include "passes/pool_grad_by_argmax.h"
#include "passes/sum_through_max_pool.h"

namespace spire::passes {
namespace canonical_test {  // named, not anonymous: test executables build as unity batches

TEST(CanonicalPasses, OneListInTheOrderTheyRun) {
  std::vector<std::string> names;
  for (const Pass& p : canonical_passes()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fuse_norms", "compute_in_f32", "decompose", "fold_transposes", "sum_through_max_pool",
                                             "pool_grad_by_argmax"}));
  EXPECT_EQ(pass_point_name(PassPoint::Canonical), "canonical");
  EXPECT_FALSE(pass_point_from_name("canonical")) << "callers add passes at the public points only";
}

TEST(CanonicalPasses, CanonicalizeIsThePassesInOrder) {
  nn::LeNetGraphOptions o;
  o.batch = 2;
  o.sgd = true;
  const graph::Graph step = nn::build_lenet_graph(o);
  std::vector<std::string> seen;
  const graph::Graph canonical =
      canonicalize(step, [&](PassPoint point, const Pass& pass, const graph::Graph&) {
        EXPECT_EQ(point, PassPoint::Canonical);
        seen.push_back(pass.name);
      });
  EXPECT_EQ(seen.size(), canonical_passes().size());
  const graph::Graph by_hand =
      pool_grad_by_argmax(sum_through_max_pool(fold_transposes(decompose(compute_in_f32(fuse_norms(step))))));
  EXPECT_EQ(graph::print(canonical), graph::print(by_hand));
  EXPECT_NE(graph::print(canonical), graph::print(step)) << "LeNet's step has poolings' gradients to rewrite";
}

}  // namespace canonical_test
}  // namespace spire::passes
