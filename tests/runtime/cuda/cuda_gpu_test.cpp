// What only the CUDA runtime and the PTX backend do, on a real device (run where a CUDA device exists, skipped
// with the reason elsewhere): shared memory and barriers, 3D builtins, streams as CUDA graphs or launch lists.
// The contract every backend keeps (buffers, loads, dispatch checks, timestamps, fences) is tested in
// tests/runtime_conformance.
#include "backends/compile_kernel.h"
#include <cmath>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "ir/kernel/builder.h"
#include "runtime/cuda/cuda_command_stream.h"
#include "tests/runtime/cuda/cuda_gpu_fixture.h"

namespace spire::rt::cuda::testing {
namespace {

using namespace kir;

// y[i] += x[i] * s: run repeatedly, each run shows in the result.
kir::Kernel accumulate() {
  KernelBuilder kb("accumulate", 128);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  auto s = kb.scalar("s", Type::F32);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = y[i] + x[i] * s; });
  return kb.finish();
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// What every CUDA device offers beyond the contract's minimums (those are tests/runtime/conformance's).
TEST_F(CudaGpu, InfoDescribesAnNvidiaGpu) {
  const DeviceInfo& d = dev->info();
  std::cout << d.id << ": " << d.name << ", " << d.driver << ", sm_" << d.compute_capability << ", "
            << d.memory_bytes / (1 << 20) << " MiB\n";
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_EQ(d.subgroup_size, 32u);
  EXPECT_GE(d.shared_memory_bytes, 48u * 1024);
  EXPECT_GE(d.max_workgroup_invocations, 1024u);
  EXPECT_TRUE(d.features.has(Feature::Float64));
  EXPECT_TRUE(d.features.has(Feature::AtomicAddF32));
}

TEST_F(CudaGpu, SharedMemoryAndBarrierReduce) {
  constexpr uint32_t wg = 256;
  KernelBuilder kb("block_sum", wg);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto partial = kb.buffer("partial", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto tile = kb.shared("tile", Type::F32, wg);
  auto lid = kb.local_id();
  auto i = kb.global_id();
  auto v = kb.var("v", kb.f32(0));
  kb.if_(i < n, [&] { v = x[i]; });
  tile[lid] = v.get();
  kb.barrier();
  for (uint32_t stride = wg / 2; stride > 0; stride /= 2) {
    kb.if_(lid < stride, [&] { tile[lid] = tile[lid] + tile[lid + stride]; });
    kb.barrier();
  }
  kb.if_(lid == 0u, [&] { partial[kb.group_id()] = tile[0u]; });
  auto k = spire::backends::compile_and_load(*dev, kb.finish());

  const uint32_t count = 100000, groups = (count + wg - 1) / wg;
  auto hx = random_floats(count, 3, 0, 1);
  auto bx = make(hx);
  auto bp = poisoned<float>(groups);
  BufferView views[] = {*bx, *bp};
  dev->dispatch_now(*k, views, ScalarArgs().u32(count), Grid::workgroups(groups));
  auto out = read<float>(*bp, groups);
  for (uint32_t g = 0; g < groups; ++g) {
    double ref = 0;
    for (uint32_t j = g * wg; j < std::min(count, (g + 1) * wg); ++j) ref += hx[j];
    ASSERT_NEAR(out[g], ref, 1e-4 * std::max(1.0, ref)) << "group " << g;
  }
}

void replay_three_times(Device& dev, bool graphs) {
  if (!graphs) ::setenv("SPIRE_CUDA_GRAPHS", "0", 1);
  const uint32_t n = 5000;
  auto hx = random_floats(n, 4), hy = random_floats(n, 5);
  auto x = dev.alloc(n * 4), y = dev.alloc(n * 4), y2 = dev.alloc(n * 4);
  dev.upload(*x, hx.data(), n * 4);
  dev.upload(*y, hy.data(), n * 4);
  dev.fill(*y2, 0xFFFFFFFFu);
  auto k = spire::backends::compile_and_load(dev, accumulate());
  auto s = dev.record();
  BufferView views[] = {*x, *y};
  s->dispatch(*k, views, ScalarArgs().f32(0.5f).u32(n), Grid::threads(n, 128));
  s->barrier();
  s->copy(*y, *y2);
  s->finish();
  ::unsetenv("SPIRE_CUDA_GRAPHS");
  auto* cs = dynamic_cast<CudaCommandStream*>(s.get());
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->uses_graph(), graphs) << cs->graph_fallback_reason();
  for (int r = 0; r < 3; ++r) dev.run(*s);
  std::vector<float> out(n), copied(n);
  dev.download(*y, out.data(), n * 4);
  dev.download(*y2, copied.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) {
    float ref = hy[i];
    for (int r = 0; r < 3; ++r) ref = ref + hx[i] * 0.5f;  // the same f32 operations, in the same order
    ASSERT_EQ(out[i], ref) << "element " << i;
    ASSERT_EQ(copied[i], ref) << "copy of element " << i;
  }
}

TEST_F(CudaGpu, StreamReplayedThreeTimesAsGraph) { replay_three_times(*dev, true); }
TEST_F(CudaGpu, StreamReplayedThreeTimesAsLaunchList) { replay_three_times(*dev, false); }

TEST_F(CudaGpu, BuiltinsOf3dWorkgroup) {
  KernelBuilder kb("ids", {8, 4, 2});
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto g = kb.global_id();
  out[g * 6u + 0u] = g;
  out[g * 6u + 1u] = kb.local_id();
  out[g * 6u + 2u] = kb.group_id();
  out[g * 6u + 3u] = kb.num_groups();
  out[g * 6u + 4u] = kb.builtin(Builtin::LocalIdY);
  out[g * 6u + 5u] = kb.global_size();
  auto k = spire::backends::compile_and_load(*dev, kb.finish());
  const uint32_t groups = 5, total = groups * 64;
  auto b = poisoned<uint32_t>(total * 6);
  BufferView views[] = {*b};
  dev->dispatch_now(*k, views, ScalarArgs(), Grid::workgroups(groups));
  auto h = read<uint32_t>(*b, total * 6);
  for (uint32_t gid = 0; gid < total; ++gid) {
    uint32_t local = gid % 64, group = gid / 64;
    ASSERT_EQ(h[gid * 6 + 0], gid);
    ASSERT_EQ(h[gid * 6 + 1], local);
    ASSERT_EQ(h[gid * 6 + 2], group);
    ASSERT_EQ(h[gid * 6 + 3], groups);
    ASSERT_EQ(h[gid * 6 + 4], (local / 8) % 4);
    ASSERT_EQ(h[gid * 6 + 5], total);
  }
}

}  // namespace
}  // namespace spire::rt::cuda::testing
