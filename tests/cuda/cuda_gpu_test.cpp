// The CUDA runtime on a real device: run where a CUDA device exists, skipped (with the reason) elsewhere.
#include "backends/compile_kernel.h"
#include <cmath>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "ir/kernel/builder.h"
#include "runtime/cuda/cuda_command_stream.h"
#include "runtime/cuda/cuda_device.h"
#include "tests/cuda/cuda_gpu_fixture.h"

namespace spire::rt::cuda::testing {
namespace {

using namespace kir;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

kir::Kernel vector_add() {
  KernelBuilder kb("vector_add", 256);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto b = kb.buffer("b", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { c[i] = a[i] + b[i]; });
  return kb.finish();
}

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

TEST_F(CudaGpu, InfoDescribesTheDevice) {
  const DeviceInfo& d = dev->info();
  std::cout << d.id << ": " << d.name << ", " << d.driver << ", sm_" << d.compute_capability << ", "
            << d.memory_bytes / (1 << 20) << " MiB\n";
  EXPECT_EQ(d.id, "cuda:0");
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_EQ(d.subgroup_size, 32u);
  EXPECT_GE(d.shared_memory_bytes, 48u * 1024);
  EXPECT_GE(d.max_workgroup_invocations, 1024u);
  EXPECT_GE(d.max_workgroup_count[0], 65535u);
  EXPECT_GT(d.memory_bytes, 0u);
  EXPECT_TRUE(d.features.has(Feature::Float64));
  EXPECT_TRUE(d.features.has(Feature::AtomicAddF32));
}

TEST_F(CudaGpu, VectorAddMatchesCpuAndLeavesTailPoisoned) {
  const uint32_t n = 1000003;  // not a multiple of the workgroup
  const size_t padded = n + 77;
  auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  auto a = make(ha), b = make(hb);
  auto c = poisoned<float>(padded);
  auto k = spire::backends::compile_and_load(*dev, vector_add());
  BufferView views[] = {*a, *b, *c};
  dev->dispatch_now(*k, views, ScalarArgs().u32(n), Grid::threads(n, 256));
  auto out = read<float>(*c, padded);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], ha[i] + hb[i]) << "element " << i;  // IEEE add is exact to match
  for (size_t i = n; i < padded; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &out[i], 4);
    ASSERT_EQ(bits, 0xDEADBEEFu) << "element " << i << " past n was written";
  }
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

TEST_F(CudaGpu, TimestampsIncrease) {
  const uint32_t n = on_mock() ? 1 << 12 : 1 << 24;
  auto x = dev->alloc(n * 4), y = dev->alloc(n * 4);
  dev->fill(*x, 0);
  dev->fill(*y, 0);
  auto k = spire::backends::compile_and_load(*dev, accumulate());
  auto s = dev->record();
  BufferView views[] = {*x, *y};
  uint32_t t0 = s->timestamp();
  s->dispatch(*k, views, ScalarArgs().f32(1).u32(n), Grid::threads(n, 128));
  uint32_t t1 = s->timestamp();
  for (int r = 0; r < 4; ++r) s->dispatch(*k, views, ScalarArgs().f32(1).u32(n), Grid::threads(n, 128));
  uint32_t t2 = s->timestamp();
  EXPECT_THROW(s->elapsed_ms(t0, t1), Error);  // not submitted yet
  for (int round = 0; round < 2; ++round) {
    dev->run(*s);
    double a = s->elapsed_ms(t0, t1), b = s->elapsed_ms(t0, t2);
    std::cout << "one pass " << a << " ms, five passes " << b << " ms\n";
    EXPECT_GT(a, 0.0);
    EXPECT_GT(b, a);
    EXPECT_LT(b, 10000.0);
  }
  EXPECT_THROW(s->elapsed_ms(t0, 7), Error);
}

TEST_F(CudaGpu, FenceReadyAfterWait) {
  auto k = spire::backends::compile_and_load(*dev, accumulate());
  auto x = dev->alloc(4096), y = dev->alloc(4096);
  dev->fill(*x, 0);
  dev->fill(*y, 0);
  auto s = dev->record();
  BufferView views[] = {*x, *y};
  s->dispatch(*k, views, ScalarArgs().f32(1).u32(1024), Grid::threads(1024, 128));
  auto f = dev->submit(*s);
  f->wait();
  EXPECT_TRUE(f->ready());
  dev->wait_idle();
}

TEST_F(CudaGpu, OutOfMemoryNamesBytesAndDevice) {
  const uint64_t pib = uint64_t(1) << 50;
  try {
    dev->alloc(pib);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
    EXPECT_TRUE(contains(e.what(), std::to_string(pib))) << e.what();
  }
}

TEST_F(CudaGpu, MaskedFeatureIsRefusedByName) {
  ::setenv("SPIRE_MASK_FEATURES", "float64", 1);
  auto masked = cuda::open(0);
  ::unsetenv("SPIRE_MASK_FEATURES");
  EXPECT_FALSE(masked->info().features.has(Feature::Float64));
  EXPECT_TRUE(masked->info().features.has(Feature::Float16));
  KernelBuilder kb("needs_f64", 64);
  auto o = kb.buffer("o", Type::F64, Access::Write);
  o[kb.global_id()] = kb.f64(1.0);
  kir::Kernel k = kb.finish();
  try {
    spire::backends::compile_and_load(*masked, k);
    FAIL() << "compiled a float64 kernel on a device with float64 masked";
  } catch (const MissingFeature& e) {
    EXPECT_TRUE(contains(e.what(), "needs_f64")) << e.what();
    EXPECT_TRUE(contains(e.what(), "float64")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
  }
  EXPECT_NO_THROW(spire::backends::compile_and_load(*dev, k));  // the unmasked device takes it
}

TEST_F(CudaGpu, SameKernelLoadsOnce) {
  auto* cd = dynamic_cast<CudaDevice*>(dev.get());
  ASSERT_NE(cd, nullptr);
  auto k1 = spire::backends::compile_and_load(*dev, vector_add());
  size_t after_first = cd->loaded_module_count();
  auto k2 = spire::backends::compile_and_load(*dev, vector_add());
  EXPECT_EQ(cd->loaded_module_count(), after_first);
  auto k3 = spire::backends::compile_and_load(*dev, accumulate());
  EXPECT_EQ(cd->loaded_module_count(), after_first + 1);
}

TEST_F(CudaGpu, DispatchChecksBindingsScalarsAndAlignment) {
  auto k = spire::backends::compile_and_load(*dev, vector_add());
  auto a = dev->alloc(4096), b = dev->alloc(4096), c = dev->alloc(4096);
  auto s = dev->record();
  BufferView two[] = {*a, *b};
  EXPECT_THROW(s->dispatch(*k, two, ScalarArgs().u32(4), Grid{1}), Error);
  BufferView three[] = {*a, *b, *c};
  EXPECT_THROW(s->dispatch(*k, three, ScalarArgs(), Grid{1}), Error);
  EXPECT_THROW(s->dispatch(*k, three, ScalarArgs().u32(1).u32(2), Grid{1}), Error);
  BufferView misaligned[] = {BufferView(*a, 4), *b, *c};
  try {
    s->dispatch(*k, misaligned, ScalarArgs().u32(4), Grid{1});
    FAIL() << "misaligned view accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "alignment")) << e.what();
  }
  BufferView too_long[] = {BufferView(*a, 16, 4096), *b, *c};
  EXPECT_THROW(s->dispatch(*k, too_long, ScalarArgs().u32(4), Grid{1}), Error);
  s->finish();
  EXPECT_THROW(s->dispatch(*k, three, ScalarArgs().u32(4), Grid{1}), Error);
}

TEST_F(CudaGpu, FillAndCopyInAStream) {
  auto a = dev->alloc(1024), b = dev->alloc(1024);
  dev->fill(*a, 0);
  dev->fill(*b, 0);
  auto s = dev->record();
  s->fill(BufferView(*a, 256, 512), 0x01020304u);
  s->barrier();
  s->copy(BufferView(*a, 256, 512), BufferView(*b, 0, 512));
  dev->run(*s);
  auto ha = read<uint32_t>(*a, 256), hb = read<uint32_t>(*b, 256);
  for (int i = 0; i < 256; ++i) {
    uint32_t want_a = (i >= 64 && i < 192) ? 0x01020304u : 0u;
    ASSERT_EQ(ha[i], want_a) << i;
    ASSERT_EQ(hb[i], i < 128 ? 0x01020304u : 0u) << i;
  }
  // A whole-buffer fill of an odd size ends with the pattern's first bytes.
  auto odd = dev->alloc(7);
  dev->fill(*odd, 0x44332211u);
  auto bytes = read<uint8_t>(*odd, 7);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33}));
}

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
