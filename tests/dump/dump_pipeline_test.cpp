// dump_pipeline() without a device: a small training step (linear, ReLU, sum loss, SGD) planned for an
// H100-like target described by data, so the joint graph's file and the PTX are checked on any machine.
#include "tests/support/h100_like_target.h"
#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "ir/graph/text_form.h"
#include "dump/dump.h"
#include "lowering/fuse.h"
#include "passes/decompose.h"
#include "tests/dump/dump_files.h"

#include <unistd.h>

#include <fmt/format.h>

namespace spire {
namespace {

using namespace dump_testing;

rt::DeviceInfo h100_like() { return testing_support::h100_like_target("compile-only:0"); }

graph::Graph forward() {
  graph::Graph g;
  graph::Value x = g.input("x", graph::DType::F32, {4, 8});
  graph::Value w = g.parameter("w", graph::DType::F32, {3, 8});
  graph::Value b = g.parameter("b", graph::DType::F32, {3});
  g.output("loss", g.sum(g.relu(g.linear(x, w, b))));
  return g;
}

TEST(DumpPipeline, TrainingStepForACompileOnlyTarget) {
  const graph::Graph built = forward();
  graph::Graph joint = built;
  const auto params = joint.parameters();
  const auto grads = autograd::grad(joint, *joint.find_output("loss"), params);
  autograd::sgd_step(joint, params, grads, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.0});

  const fs::path dir = fs::temp_directory_path() / fmt::format("spire_dump_pipeline_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "kernels");
  std::ofstream(dir / "kernels" / "999-stale.kir") << "from an earlier, bigger dump";
  std::ofstream(dir / "kernels" / "notes.txt") << "the user's own";
  const auto report = dump::dump_pipeline(dir, built, &joint, {.target = h100_like()});
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  EXPECT_FALSE(fs::exists(dir / "kernels" / "999-stale.kir"));
  EXPECT_TRUE(fs::exists(dir / "kernels" / "notes.txt"));
  fs::remove(dir / "kernels" / "notes.txt");
  check_dump_folder(dir, /*joint=*/true);
  EXPECT_EQ(slurp(dir / "01-graph.txt"), graph::print(built));
  EXPECT_EQ(slurp(dir / "02-joint.txt"), graph::print(joint));
  EXPECT_NE(slurp(dir / "05-plan.txt").find("state updates"), std::string::npos);
  EXPECT_NE(dump::dump_summary(report, dir).find("dump: wrote"), std::string::npos);
  check_modules_with_tools(dir);
  fs::remove_all(dir);
}

TEST(DumpPipeline, FusionTextNamesRootsAndWhatTheyFold) {
  const graph::Graph g = passes::decompose(forward());
  const std::string text = dump::fusion_text(g, lowering::plan_fusion(g));
  // linear's bias add is folded into the ReLU.
  EXPECT_NE(text.find("= relu f32[4,3]\n    folds "), std::string::npos) << text;
  EXPECT_NE(text.find("= add f32[4,3]"), std::string::npos) << text;
  // The product under them stores the ReLU directly (an epilogue).
  EXPECT_NE(text.find("= matmul f32[4,3]\n    stores "), std::string::npos) << text;
}

}  // namespace
}  // namespace spire
