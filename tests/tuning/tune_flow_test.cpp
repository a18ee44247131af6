// Tuning on a device end to end: --tune times the untuned nodes once and stores the winners; the next run
// (another cache object reading the same file) uses them with no timing at all; an entry made under another
// driver is not reused; and the generic API tunes a custom kernel factory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "kernels/matmul_kernel.h"
#include "ir/kernel/builder.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "lowering/tunable_ops.h"
#include "op_harness/op_harness.h"
#include "tests/tuning/tuning_test_util.h"
#include "tuning/tune_graph.h"
#include "tuning/tuning_setup.h"
#include "tests/support/named_ops.h"

using namespace spire;
using graph::DType;

namespace {

graph::Graph small_graph() {
  graph::Graph g;
  auto a = g.input("a", DType::F32, {16, 24});
  auto b = g.input("b", DType::F32, {24, 20});
  g.output("y", softmax(g, g.matmul(a, b), 1));
  return g;
}

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  return s;
}

class TuneFlow : public tuning_test::OnDevice {};

TEST_P(TuneFlow, TunesOnceThenUsesTheCacheWithoutTiming) {
  const graph::Graph g = small_graph();
  const std::string path = (tuning_test::scratch_dir() / "tuning.txt").string();
  std::FILE* log = std::tmpfile();
  const uint64_t before = tuning::timed_candidates();
  auto first = tuning::prepare_tuning({true, path}, *dev_, {&g}, log);
  const uint64_t after_tuning = tuning::timed_candidates();
  EXPECT_GT(after_tuning, before);
  const std::string table = contents(log);
  EXPECT_NE(table.find("matmul"), std::string::npos) << table;
  EXPECT_NE(table.find("softmax"), std::string::npos) << table;
  EXPECT_NE(table.find("(0 from the cache)"), std::string::npos) << table;
  EXPECT_EQ(first.configs.size(), 2u);

  // The next run: a fresh cache object from the file. With --tune everything is cached; without, nothing is
  // timed either, and the choices are the same.
  std::FILE* log2 = std::tmpfile();
  auto again = tuning::prepare_tuning({true, path}, *dev_, {&g}, log2);
  EXPECT_NE(contents(log2).find("(2 from the cache)"), std::string::npos);
  auto plain = tuning::prepare_tuning({false, path}, *dev_, {&g}, nullptr);
  EXPECT_EQ(tuning::timed_candidates(), after_tuning) << "a cached choice was timed again";
  EXPECT_EQ(plain.configs, first.configs);
  EXPECT_EQ(again.configs, first.configs);

  // Compiling with the choices uses the cached tiling, and computes the right thing.
  const auto ops = lowering::tunable_ops(g, dev_->info());
  const auto tiling = lowering::heavy::MatmulTiling::from(*plain.find(ops[0].key));
  const std::string text = lowering::plan_text(lowering::lower(g, dev_->info(), nullptr, &plain));
  EXPECT_NE(text.find(fmt::format("_t{}x{}x{}_r{}x{}_f32", tiling.tile_m, tiling.tile_n, tiling.tile_k, tiling.reg_m,
                                  tiling.reg_n)),
            std::string::npos)
      << text;
  std::map<std::string, graph::Tensor> in{{"a", tuning_test::random_tensor(DType::F32, {16, 24}, 1)},
                                          {"b", tuning_test::random_tensor(DType::F32, {24, 20}, 2)}};
  auto exe = lowering::compile(g, *dev_, {.tuning = &plain});
  for (const auto& [n, t] : in) exe->set(n, t);
  exe->step();
  EXPECT_LE(harness::max_norm_error(exe->get("y"), graph::evaluate(g, in).at("y")),
            graph::op_tolerance(*graph::op_from_name("softmax"), false, DType::F32) * 10);
  std::fclose(log);
  std::fclose(log2);
}

TEST_P(TuneFlow, AnEntryOfAnotherDriverIsNotReused) {
  const graph::Graph g = small_graph();
  const auto ops = lowering::tunable_ops(g, dev_->info());
  tuning::TuningCache cache((tuning_test::scratch_dir() / "tuning.txt").string());
  tuning::DeviceKey other = tuning::DeviceKey::of(dev_->info());
  other.driver += " (another version)";
  cache.put({other, ops[0].key, ops[0].candidates.back(), 0.001, 0.002});
  tuning::TuneOptions opt;
  opt.progress = nullptr;
  opt.runs = 1;
  const uint64_t before = tuning::timed_candidates();
  tuning::TunedOp row = tuning::tune_op(*dev_, cache, ops[0], opt);
  EXPECT_FALSE(row.cached);
  EXPECT_EQ(tuning::timed_candidates() - before, ops[0].candidates.size());
  EXPECT_NE(cache.find(tuning::DeviceKey::of(dev_->info()), ops[0].key), nullptr);
}

// The cache is saved after each op timed: a run stopped by an op that cannot run at all keeps the ops before it, which
// the next run finds in the file without timing them.
TEST_P(TuneFlow, ARunCutShortKeepsWhatItTimed) {
  const graph::Graph g = small_graph();
  const std::string path = (tuning_test::scratch_dir() / "tuning.txt").string();
  std::vector<lowering::TunableOp> ops = lowering::tunable_ops(g, dev_->info());
  ASSERT_EQ(ops.size(), 2u);
  // The second op's every config is refused: no candidate runs, and tuning it throws.
  ops[1].build = [](const lowering::heavy::Config& c) -> lowering::KernelProgram {
    throw std::invalid_argument("refused: " + c.text());
  };
  tuning::TuneOptions opt;
  opt.progress = nullptr;
  opt.runs = 1;
  {
    tuning::TuningCache cache(path);
    EXPECT_THROW(tuning::tune_ops(ops, *dev_, cache, opt), std::exception);
  }
  tuning::TuningCache again(path);
  const tuning::DeviceKey dk = tuning::DeviceKey::of(dev_->info());
  EXPECT_NE(again.find(dk, ops[0].key), nullptr) << "the first op's result was not saved";
  EXPECT_EQ(again.find(dk, ops[1].key), nullptr);
}

// SPIRE_TUNING_LOG: one line per candidate of the op, with the device, its config's text and a time, appended.
TEST_P(TuneFlow, TheTuningLogHoldsEveryCandidatesTime) {
  const graph::Graph g = small_graph();
  const auto ops = lowering::tunable_ops(g, dev_->info());
  const std::string log_path = (tuning_test::scratch_dir() / "candidates.tsv").string();
  tuning::TuningCache cache((tuning_test::scratch_dir() / "tuning.txt").string());
  tuning::TuneOptions opt;
  opt.progress = nullptr;
  opt.runs = 1;
  ::setenv("SPIRE_TUNING_LOG", log_path.c_str(), 1);
  tuning::tune_op(*dev_, cache, ops[0], opt);
  ::unsetenv("SPIRE_TUNING_LOG");
  std::FILE* f = std::fopen(log_path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  const std::string text = contents(f);
  std::fclose(f);
  std::vector<std::string> lines;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) lines.push_back(text.substr(at, end - at));
  ASSERT_EQ(lines.size(), ops[0].candidates.size()) << text;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string prefix = fmt::format("{}\t{}\t{}\t{}\t{}\t", dev_->info().id, ops[0].key.op, ops[0].key.shape, ops[0].key.dtype,
                                           ops[0].candidates[i].text());
    ASSERT_EQ(lines[i].rfind(prefix, 0), 0u) << lines[i];
    EXPECT_GT(std::stod(lines[i].substr(prefix.size())), 0.0) << lines[i];
  }
}

// y[i] = 2 x[i] with a workgroup size from the config: a custom op's kernel factory, tuned through the
// generic API (tuner.h) and through tune_op with a cache (what `--tune` does for the templates).
lowering::heavy::HeavyKernel scale_kernel(const lowering::heavy::Config& c, uint32_t n) {
  const int64_t wg = c.get("wg");
  if (wg < 1 || wg > 1024) throw std::invalid_argument("wg must be 1..1024");
  kir::KernelBuilder kb("scale_wg" + std::to_string(wg), uint32_t(wg));
  kir::Buf x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
  kir::Buf y = kb.buffer("y", kir::Type::F32, kir::Access::Write);
  kir::Val i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = x[i] * 2.0f; });
  return {kb.finish(), (n + uint64_t(wg) - 1) / uint64_t(wg)};
}

TEST_P(TuneFlow, CustomKernelFactoryThroughTheGenericApi) {
  constexpr uint32_t n = 100000;
  using lowering::ProgramBuffer;
  const std::vector<ProgramBuffer> buffers{{ProgramBuffer::Use::Input, 0, kir::Type::F32, n},
                                           {ProgramBuffer::Use::Output, -1, kir::Type::F32, n}};
  std::vector<lowering::heavy::Config> candidates;
  for (int wg : {64, 128, 0, 256}) candidates.push_back(lowering::heavy::Config{{"wg", wg}});
  std::FILE* progress = std::tmpfile();
  tuning::TuneOptions opt;
  opt.progress = progress;
  opt.label = "scale";
  auto r = tuning::tune(*dev_, candidates, [&](const lowering::heavy::Config& c) { return scale_kernel(c, n); }, buffers, opt);
  ASSERT_EQ(r.times.size(), 4u);
  EXPECT_NE(r.times[2].error.find("wg must be"), std::string::npos) << "the refused config is reported";
  EXPECT_FALSE(std::isfinite(r.times[2].ms));
  EXPECT_NE(r.best.get("wg"), 0);
  EXPECT_TRUE(std::isfinite(r.best_ms));
  EXPECT_NE(contents(progress).find("tuning scale: 4 candidates"), std::string::npos);
  std::fclose(progress);

  // The same op with a key through the cache: timed once, then taken from it.
  lowering::TunableOp op;
  op.key = {"custom_scale", "n100000", "f32"};
  op.heuristic = candidates[0];
  op.candidates = {candidates[0], candidates[1], candidates[3]};
  op.build = [&](const lowering::heavy::Config& c) {
    auto k = scale_kernel(c, n);
    return lowering::single_kernel_program(buffers, std::move(k.kernel), k.groups);
  };
  tuning::TuningCache cache((tuning_test::scratch_dir() / "tuning.txt").string());
  opt.progress = nullptr;
  EXPECT_FALSE(tuning::tune_op(*dev_, cache, op, opt).cached);
  const uint64_t before = tuning::timed_candidates();
  tuning::TunedOp second = tuning::tune_op(*dev_, cache, op, opt);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(tuning::timed_candidates(), before);
}

// A GPU's candidates warm up for at least TuneOptions::first_warmup_ms (its clocks rise from idle meanwhile); a CPU
// device's only for their run count.
TEST_P(TuneFlow, AGpuWarmsUpItsClocksBeforeTimingACpuDeviceDoesNot) {
  constexpr uint32_t n = 1024;
  using lowering::ProgramBuffer;
  const std::vector<ProgramBuffer> buffers{{ProgramBuffer::Use::Input, 0, kir::Type::F32, n},
                                           {ProgramBuffer::Use::Output, -1, kir::Type::F32, n}};
  tuning::TuneOptions opt;
  opt.progress = nullptr;
  opt.warmup = 0;
  opt.runs = 1;
  opt.warmup_ms = 0;
  opt.first_warmup_ms = 3000;
  const auto start = std::chrono::steady_clock::now();
  auto r = tuning::tune(*dev_, {lowering::heavy::Config{{"wg", 64}}},
                        [&](const lowering::heavy::Config& c) { return scale_kernel(c, n); }, buffers, opt);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(std::isfinite(r.best_ms));
  if (dev_->info().type == rt::DeviceType::Cpu) EXPECT_LT(ms, 3000);
  else EXPECT_GE(ms, 3000);
}

INSTANTIATE_TEST_SUITE_P(Devices, TuneFlow, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& info) { return lowering::testing_support::test_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TuneFlow);

}  // namespace
