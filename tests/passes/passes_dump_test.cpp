// --dump with rewrite passes: the graph after each pass is a numbered file between the stages of its point
// (01.NN after 01-graph, 02.NN after 02-joint, 03.NN after 03-decomposed), the plan is made from the rewritten
// graph, and a later dump with fewer passes leaves none of the earlier pass files. Planned for a target
// described by data, so no device is needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "ir/graph/text_form.h"
#include "dump/dump.h"
#include "lowering/plan.h"
#include "passes/canonical.h"
#include "lowering/stats.h"
#include "passes/builtin.h"
#include "tests/dump/dump_files.h"
#include "tests/support/h100_like_target.h"

namespace spire::passes {
namespace {

using namespace dump_testing;
using graph::DType;
using graph::Graph;
using graph::Value;

Graph forward() {
  Graph g;
  Value x = g.input("x", DType::F32, {4, 8});
  Value w = g.parameter("w", DType::F32, {3, 8});
  Value h = g.name(g.linear(x, w), "h");
  g.output("loss", g.mean(g.mul(g.sigmoid(h), h)));
  return g;
}

Graph training_step(const Graph& forward_graph) {
  Graph joint = forward_graph;
  const auto params = joint.parameters();
  const auto grads = autograd::grad(joint, *joint.find_output("loss"), params);
  autograd::sgd_step(joint, params, grads, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.0});
  return joint;
}

// Counts the pass files of the folder's top level.
std::vector<std::string> pass_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 6 && n[2] == '.') names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(PassesDump, EachPassIsAFileInPipelineOrder) {
  PassPipeline pipeline;
  pipeline.verify = true;
  add_builtin_passes(pipeline, "silu,silu@after_autograd,silu@before_fusion");
  const Graph built = forward();
  const Graph rewritten = pipeline.run(PassPoint::AfterImport, built);
  const Graph joint = training_step(rewritten);  // what a trainer differentiates: the rewritten forward pass

  const fs::path dir = fs::temp_directory_path() / fmt::format("spire_passes_dump_{}", ::getpid());
  fs::remove_all(dir);
  const auto report = dump::dump_pipeline(dir, built, &joint,
                                              {.target = testing_support::h100_like_target(), .passes = &pipeline});
  EXPECT_TRUE(report.errors.empty());
  check_dump_folder(dir, /*joint=*/true);
  EXPECT_EQ(pass_files(dir), (std::vector<std::string>{"01.01-silu.txt", "02.01-silu.txt", "03.01-silu.txt"}));
  EXPECT_EQ(slurp(dir / "01-graph.txt"), graph::print(built));
  EXPECT_EQ(slurp(dir / "01.01-silu.txt"), graph::print(rewritten));
  EXPECT_NE(slurp(dir / "01.01-silu.txt").find("silu(h)"), std::string::npos);
  EXPECT_EQ(slurp(dir / "02-joint.txt"), graph::print(joint));
  EXPECT_EQ(slurp(dir / "02.01-silu.txt"), graph::print(joint));  // nothing left to rewrite
  EXPECT_EQ(slurp(dir / "03.01-silu.txt"), graph::print(passes::prepare_for_fusion(joint, &pipeline)));
  // Listed by name, the files are in pipeline order.
  std::vector<std::string> all;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) all.push_back(e.path().filename().string());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"01-graph.txt", "01.01-silu.txt", "02-joint.txt", "02.01-silu.txt",
                                           "03-decomposed.txt", "03.01-silu.txt", "04-fused.txt", "05-plan.txt",
                                           "06-stats.txt"}));

  // A dump without passes into the same folder: no pass file of the earlier one stays, the user's files do.
  std::ofstream(dir / "01.01-notes.md") << "the user's own";
  dump::dump_pipeline(dir, built, nullptr, {.target = testing_support::h100_like_target()});
  EXPECT_EQ(pass_files(dir), std::vector<std::string>{"01.01-notes.md"});
  fs::remove_all(dir);
}

TEST(PassesDump, BeforeFusionPassesChangeWhatIsPlanned) {
  // The rewrite inside lowering: the plan's kernels compute silu, and the stats count a silu, no sigmoid.
  PassPipeline pipeline;
  add_builtin_passes(pipeline, "silu@before_fusion");
  const Graph g = forward();
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target(), &pipeline);
  std::string kernels;
  for (const auto& k : plan.kernels) kernels += k.name + "\n";
  EXPECT_NE(kernels.find("silu"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("sigmoid"), std::string::npos) << kernels;
  const std::string stats = lowering::stats_text(lowering::graph_stats(g, &pipeline));
  EXPECT_NE(stats.find("silu"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("sigmoid"), std::string::npos) << stats;
}

}  // namespace
}  // namespace spire::passes
