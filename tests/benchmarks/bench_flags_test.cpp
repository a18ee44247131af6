// The benchmarks' common flags (benchmarks/support/bench_flags.h): the warm-up before timed runs is a count and a
// wall time, both lowered by --small (a CPU driver has no clock to settle) unless given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "benchmarks/support/bench_flags.h"

using namespace spire;

namespace {

bench::BenchFlags parse(std::vector<std::string> args) {
  args.insert(args.begin(), "spire_bench_test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return bench::parse_bench_flags(int(argv.size()), argv.data(), "usage\n", {});
}

}  // namespace

TEST(BenchFlags, WarmUpLastsHalfASecondByDefault) {
  const bench::BenchFlags f = parse({});
  EXPECT_EQ(f.warmup, 3);
  EXPECT_DOUBLE_EQ(f.warmup_ms, 500);
  EXPECT_EQ(f.runs, 50);
}

TEST(BenchFlags, SmallProblemsWarmUpOnceWithoutAWallTime) {
  const bench::BenchFlags f = parse({"--small"});
  EXPECT_EQ(f.warmup, 1);
  EXPECT_DOUBLE_EQ(f.warmup_ms, 0);
}

TEST(BenchFlags, GivenWarmUpsHoldWithSmall) {
  const bench::BenchFlags f = parse({"--warmup-ms", "120", "--small", "--warmup", "5"});
  EXPECT_EQ(f.warmup, 5);
  EXPECT_DOUBLE_EQ(f.warmup_ms, 120);
  EXPECT_DOUBLE_EQ(parse({"--warmup-ms", "-3"}).warmup_ms, 0);  // no negative wait
}

TEST(BenchFlags, AMissingValueExitsWithUsage) {
  EXPECT_EXIT(parse({"--warmup-ms"}), testing::ExitedWithCode(2), "--warmup-ms needs a value");
}
