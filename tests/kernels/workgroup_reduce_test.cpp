// WorkgroupReduce (kernels/workgroup_reduce.h) on every device: both the subgroup path (at the
// subgroup size the device reports) and the shared-memory tree must give exactly the bits of the documented
// order, computed here on the host in f32: element e combined with e^1, those pairs with their neighbours, and so
// on. The inputs span 2^-12 .. 2^12, so any other order of the additions gives other bits (checked below), and
// every invocation must read the broadcast result. On lavapipe the test command runs this file at subgroup
// sizes 8 (default); the op harness covers 4, 8 and 16 through the real reductions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"
#include "lowering/tunable.h"
#include "tests/kernels/device_run.h"

namespace workgroup_reduce_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
using lowering::heavy::TreeOp;

namespace {

constexpr uint32_t kGroups = 7;

std::vector<float> inputs(uint32_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<float> v(count);
  for (float& x : v) x = std::ldexp(u(rng), exponent(rng));
  return v;
}

float combine(TreeOp op, float lower, float upper) { return op == TreeOp::Sum ? lower + upper : std::fmax(lower, upper); }

// The documented order, written out independently of the kernel code.
float reference(TreeOp op, std::vector<float> v) {
  for (size_t stride = 1; stride < v.size(); stride *= 2)
    for (size_t i = 0; i + stride < v.size(); i += 2 * stride) v[i] = combine(op, v[i], v[i + stride]);
  return v[0];
}

kir::Kernel reduce_kernel(uint32_t wg, uint32_t subgroup, TreeOp op) {
  kir::KernelBuilder kb(fmt::format("workgroup_reduce_test_wg{}_sg{}", wg, subgroup), wg);
  kir::Buf x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
  kir::Buf result = kb.buffer("result", kir::Type::F32, kir::Access::Write);
  kir::Buf seen = kb.buffer("seen", kir::Type::F32, kir::Access::Write);     // scratch[0] as every invocation reads it
  kir::Buf path = kb.buffer("path", kir::Type::U32, kir::Access::Write);     // 1 where the subgroup path ran
  kir::Shared scratch = kb.shared("scratch", kir::Type::F32, wg);
  lowering::heavy::WorkgroupReduce reduce(kb, wg, subgroup);
  kir::Val group = kb.group_id(), e = reduce.element();
  kir::Val at = group * wg + e;
  reduce.reduce(scratch, x[at], op);
  kir::Val r = scratch[0u];
  seen[at] = r;
  kb.if_(e == 0u, [&] {
    result[group] = r;
    path[group] = kir::select(reduce.on_subgroups(), kb.u32(1), kb.u32(0));
  });
  return kb.finish();
}

using Param = std::tuple<std::string, uint32_t, bool>;  // device, workgroup size, max (else sum)
class WorkgroupReduceOnDevice : public testing::TestWithParam<Param> {};

TEST_P(WorkgroupReduceOnDevice, BothPathsGiveTheBitsOfTheDocumentedOrder) {
  const auto& [device_id, wg, is_max] = GetParam();
  const TreeOp op = is_max ? TreeOp::Max : TreeOp::Sum;
  rt::Device& dev = device(device_id);
  if (wg > dev.info().max_workgroup_invocations) GTEST_SKIP() << device_id << " runs at most " << dev.info().max_workgroup_invocations << " invocations";
  const uint32_t device_subgroup = lowering::limits_of(dev.info()).subgroup_size;
  const uint64_t messages_before = validation_messages();
  const std::vector<float> x = inputs(wg * kGroups, 1000 + wg);
  std::vector<float> expected(kGroups);
  for (uint32_t g = 0; g < kGroups; ++g)
    expected[g] = reference(op, std::vector<float>(x.begin() + g * wg, x.begin() + (g + 1) * wg));
  if (!is_max) {  // the data tell orders apart: a plain left-to-right sum gives other bits somewhere
    bool differs = false;
    for (uint32_t g = 0; g < kGroups; ++g) {
      float seq = 0;
      for (uint32_t i = 0; i < wg; ++i) seq += x[g * wg + i];
      differs |= std::bit_cast<uint32_t>(seq) != std::bit_cast<uint32_t>(expected[g]);
    }
    EXPECT_TRUE(differs) << "the inputs do not tell the summation order apart";
  }

  std::vector<uint32_t> subgroups{0};
  const uint32_t baked = lowering::heavy::reduce_subgroup_size(device_subgroup, wg, kir::Type::F32);
  if (baked) subgroups.push_back(baked);
  for (uint32_t subgroup : subgroups) {
    SCOPED_TRACE(fmt::format("subgroup path baked for {} (0: the tree alone)", subgroup));
    graph::Graph empty;
    DeviceRun run(dev, empty);
    int32_t xs = run.add_slot(kir::Type::F32, x.size(), "x");
    int32_t result = run.add_slot(kir::Type::F32, kGroups, "result");
    int32_t seen = run.add_slot(kir::Type::F32, x.size(), "seen");
    int32_t path = run.add_slot(kir::Type::U32, kGroups, "path");
    run.upload(xs, graph::Tensor::from(graph::DType::F32, {int64_t(x.size())}, std::vector<double>(x.begin(), x.end())));
    kir::Kernel k = reduce_kernel(wg, subgroup, op);
    EXPECT_EQ(k.features.has(kir::Feature::SubgroupShuffle), subgroup != 0);
    run.launch(std::move(k), {xs, result, seen, path}, {}, kGroups);
    run.run();
    graph::Tensor got = run.download(result, graph::DType::F32, {kGroups});
    graph::Tensor got_seen = run.download(seen, graph::DType::F32, {int64_t(x.size())});
    graph::Tensor got_path = run.download(path, graph::DType::I32, {kGroups});
    for (uint32_t g = 0; g < kGroups; ++g) {
      EXPECT_EQ(std::bit_cast<uint32_t>(float(got[g])), std::bit_cast<uint32_t>(expected[g]))
          << "group " << g << ": got " << got[g] << ", the documented order gives " << expected[g];
      EXPECT_EQ(got_path[g], subgroup ? 1.0 : 0.0) << "group " << g << " took the other path than the one under test";
      for (uint32_t e = 0; e < wg; ++e)
        if (float(got_seen[g * wg + e]) != expected[g]) {
          ADD_FAILURE() << "group " << g << " invocation " << e << " read " << got_seen[g * wg + e];
          break;
        }
    }
  }
  EXPECT_EQ(validation_messages(), messages_before);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, WorkgroupReduceOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::Values(32u, 64u, 256u, 1024u),
                                          testing::Bool()),
                         [](const testing::TestParamInfo<Param>& p) {
                           return fmt::format("{}_wg{}_{}", test_name_of(std::get<0>(p.param)), std::get<1>(p.param),
                                              std::get<2>(p.param) ? "max" : "sum");
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WorkgroupReduceOnDevice);

}  // namespace
}  // namespace workgroup_reduce_test
