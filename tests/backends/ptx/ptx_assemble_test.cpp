// Every coverage kernel, compiled for sm_75, sm_80 and sm_90, must assemble with ptxas.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "backends/ptx/ptx_backend.h"
#include "ir/kernel/printer.h"
#include "tests/backends/ptx/ptxas_runner.h"
#include "tests/backends/ptx/test_kernels.h"

namespace spire::ptx::testing {
namespace {

struct Case {
  NamedKernel kernel;
  uint32_t sm;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.kernel.name << " for sm_" << c.sm; }

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  for (uint32_t sm : {75u, 80u, 90u})
    for (auto& k : coverage_kernels()) cs.push_back({k, sm});
  return cs;
}

class PtxAssembles : public ::testing::TestWithParam<Case> {};

TEST_P(PtxAssembles, WithPtxas) {
  const Case& c = GetParam();
  kir::Kernel k = c.kernel.make();
  std::string ptx = compile(k, Target{c.sm});
  // The header must carry the lowest ISA for the target, whether or not ptxas is here to run.
  EXPECT_NE(ptx.find(fmt::format(".version {}\n", ptx_version_for(c.sm))), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(fmt::format(".target sm_{}\n", c.sm)), std::string::npos) << ptx;
  auto ptxas = find_ptxas();
  if (!ptxas) GTEST_SKIP() << "ptxas not found: PTX not assembled (looked on PATH and in /usr/local/cuda/bin)";
  AssembleResult r = assemble(*ptxas, ptx, c.sm);
  EXPECT_TRUE(r.ok) << "ptxas rejected kernel '" << k.name << "' for sm_" << c.sm << ":\n"
                    << r.log << "\n--- PTX ---\n" << ptx << "\n--- kernel ---\n" << kir::print(k);
}

INSTANTIATE_TEST_SUITE_P(Coverage, PtxAssembles, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return fmt::format("{}_sm{}", info.param.kernel.name, info.param.sm);
                         });

// Every target ptxas 13 knows assembles at the version ptx_version_for picks, and that version is the lowest
// ptxas accepts there (one step lower is rejected).
TEST(PtxVersion, LowestVersionAssemblesOnEveryTarget) {
  auto ptxas = find_ptxas();
  if (!ptxas) GTEST_SKIP() << "ptxas not found: PTX not assembled (looked on PATH and in /usr/local/cuda/bin)";
  const std::vector<std::string> isa = {"6.0", "6.1", "6.2", "6.3", "6.4", "6.5", "7.0", "7.1", "7.2", "7.3",
                                         "7.4", "7.5", "7.6", "7.7", "7.8", "8.0", "8.1", "8.2", "8.3", "8.4",
                                         "8.5", "8.6", "8.7", "8.8", "9.0"};
  kir::Kernel k = vector_add_kernel();
  for (uint32_t sm : {75u, 80u, 86u, 87u, 89u, 90u, 100u, 103u, 110u, 120u, 121u}) {
    std::string version = ptx_version_for(sm);
    std::string ptx = compile(k, Target{sm});
    AssembleResult r = assemble(*ptxas, ptx, sm);
    EXPECT_TRUE(r.ok) << "sm_" << sm << " at .version " << version << ":\n" << r.log;
    auto at = std::find(isa.begin(), isa.end(), version);
    ASSERT_NE(at, isa.end()) << version;
    ASSERT_NE(at, isa.begin());
    std::string older = ptx;
    std::string from = ".version " + version, to = ".version " + *(at - 1);
    older.replace(older.find(from), from.size(), to);
    AssembleResult lower = assemble(*ptxas, older, sm);
    EXPECT_FALSE(lower.ok) << "sm_" << sm << " also assembles at " << to << ", so " << version
                           << " is not the lowest ISA for it";
  }
}

}  // namespace
}  // namespace spire::ptx::testing
