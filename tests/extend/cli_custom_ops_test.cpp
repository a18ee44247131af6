// The CLI with custom ops, as a user without a C++ toolchain uses it: --ops on graph grad and graph eval,
// test-ops, and train's --relu; wrong input gives a message and a non-zero exit.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/spire_cli.h"

namespace {

const std::string kOps = SPIRE_SOURCE_DIR "/examples/custom_ops";
const std::string kMlp = SPIRE_SOURCE_DIR "/examples/custom_ops/silu_mlp.graph";

TEST(CliCustomOps, GraphGradDifferentiatesThroughTheCustomOpsOwnGradient) {
  const auto out = std::filesystem::temp_directory_path() / "spire_cli_mlp_step.graph";
  auto r = spire::spire("graph grad --ops " + kOps + "/seed_silu.op " + kMlp + " --loss loss --parameters -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("custom ops from " + kOps + "/seed_silu.op: seed_silu_grad, seed_silu"), std::string::npos) << r.out;
  // The backward graph calls the op the gradient expression names, and the result parses again with --ops.
  auto printed = spire::spire("graph print --ops " + kOps + "/seed_silu.op " + out.string());
  ASSERT_EQ(printed.exit_code, 0) << printed.out;
  EXPECT_NE(printed.out.find("= seed_silu_grad("), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("output grad.linear1.weight ="), std::string::npos);
  // Without --ops the op is unknown, and the parser says which.
  auto without = spire::spire("graph print " + out.string());
  EXPECT_NE(without.exit_code, 0);
  EXPECT_NE(without.out.find("seed_silu"), std::string::npos) << without.out;
  std::filesystem::remove(out);
}

TEST(CliCustomOps, TestOpsRunsTheLoadedOpsCases) {
  auto r = spire::spire("test-ops --ops " + kOps + " --op seed_add_relu --device vulkan:0");
  if (r.out.find("unknown device") != std::string::npos || r.out.find("no compute device") != std::string::npos)
    GTEST_SKIP() << "no vulkan:0 here";
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("6 passed, 0 failed, 0 skipped"), std::string::npos) << r.out;
}

TEST(CliCustomOps, BadOpsAndReluChoicesAreRefused) {
  auto missing = spire::spire("graph print --ops /nonexistent/x.op " + kMlp);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("--ops /nonexistent/x.op: no such file or directory"), std::string::npos) << missing.out;
  auto relu = spire::spire("train lenet --relu sparkly --epochs 1 --limit 64");
  EXPECT_EQ(relu.exit_code, 2);
  EXPECT_NE(relu.out.find("'sparkly' is not builtin, custom, custom-builder or a custom op loaded with --ops"),
            std::string::npos)
      << relu.out;
}

}  // namespace
