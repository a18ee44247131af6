// Kernels built with the KernelBuilder, compiled to SPIR-V and dispatched: results against the CPU, with
// outputs poisoned first so a kernel that writes nothing cannot pass.
#include "backends/compile_kernel.h"
#include <cmath>
#include <random>
#include <string>

#include "ir/kernel/builder.h"
#include "runtime/vulkan/vulkan_kernel.h"
#include "tests/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using namespace spire::kir;

kir::Kernel vector_add(uint32_t workgroup) {
  KernelBuilder kb("vector_add", workgroup);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Read);
  auto z = kb.buffer("z", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { z[i] = Val(x[i]) + Val(y[i]); });
  return kb.finish();
}

kir::Kernel accumulate() {
  KernelBuilder kb("accumulate", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(y[i]) + Val(x[i]); });
  return kb.finish();
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(rng);
  return v;
}

class DispatchTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    try {
      add_ = spire::backends::compile_and_load(dev(), vector_add(256));
    } catch (const rt::Error& e) {
      std::string msg = e.what();
      if (msg.find("no SPIR-V backend") != std::string::npos) GTEST_SKIP() << msg;
      throw;
    }
  }

  // z = x + y for n elements with the given workgroup size; checks every element and that nothing past n moved.
  void check_vector_add(uint64_t n, const std::shared_ptr<rt::Kernel>& k, uint32_t workgroup) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto xs = random_floats(n, uint32_t(n) + 1), ys = random_floats(n, uint32_t(n) + 2);
    const uint64_t slack = 64;  // poisoned elements after the end catch writes past n
    auto x = dev().alloc(n * 4), y = dev().alloc(n * 4), z = dev().alloc((n + slack) * 4);
    dev().upload(*x, xs.data(), n * 4);
    dev().upload(*y, ys.data(), n * 4);
    dev().fill(*z, kNaN);
    BufferView views[] = {BufferView(x), BufferView(y), BufferView(z)};
    dev().dispatch_now(*k, views, ScalarArgs().u32(uint32_t(n)), Grid::threads(n, workgroup));
    auto zs = download_vector<float>(dev(), *z, n + slack);
    size_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      float want = xs[i] + ys[i];
      if (float_bits(zs[i]) != float_bits(want) && bad++ < 5)
        ADD_FAILURE() << "z[" << i << "] = " << zs[i] << ", want " << want;
    }
    EXPECT_EQ(bad, 0u) << "wrong elements";
    for (uint64_t i = n; i < n + slack; ++i) ASSERT_EQ(float_bits(zs[i]), kNaN) << "write past the end at " << i;
  }

  std::shared_ptr<rt::Kernel> add_;
};

TEST_F(DispatchTest, VectorAddAtAwkwardSizes) {
  for (uint64_t n : {1ull, 255ull, 256ull, 257ull, 1000003ull}) check_vector_add(n, add_, 256);
}

TEST_F(DispatchTest, VectorAddBeyond65535WorkgroupsFoldsTheGrid) {
  const uint64_t n = 65536ull * 64 + 3;  // 65537 workgroups of 64: more than one dimension holds on many devices
  auto k = spire::backends::compile_and_load(dev(), vector_add(64));
  auto groups = rt::fold_grid(Grid::threads(n, 64).groups, dev().info().max_workgroup_count);
  if (dev().info().max_workgroup_count[0] < 65537) {
    EXPECT_GT(groups[1], 1u) << "expected a 2D fold";
  }
  check_vector_add(n, k, 64);
}

TEST_F(DispatchTest, ReplayedStreamAccumulates) {
  const uint32_t n = 1000;
  auto k = spire::backends::compile_and_load(dev(), accumulate());
  std::vector<float> xs(n), ys(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = float(i % 97) - 40.0f, ys[i] = float(i) * 0.5f;
  auto x = dev().alloc(n * 4), y = dev().alloc(n * 4);
  dev().upload(*x, xs.data(), n * 4);
  dev().upload(*y, ys.data(), n * 4);
  auto s = dev().record();
  BufferView views[] = {BufferView(x), BufferView(y)};
  s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->finish();
  for (int r = 0; r < 3; ++r) dev().run(*s);
  auto got = download_vector<float>(dev(), *y, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], ys[i] + 3.0f * xs[i]) << i;  // small integers: exact
}

TEST_F(DispatchTest, DependentDispatchesInOneStreamWithBarriers) {
  const uint32_t n = 777;
  auto k = spire::backends::compile_and_load(dev(), accumulate());
  std::vector<float> xs(n, 2.0f), ys(n, 1.0f);
  auto x = dev().alloc(n * 4), y = dev().alloc(n * 4);
  dev().upload(*x, xs.data(), n * 4);
  dev().upload(*y, ys.data(), n * 4);
  auto s = dev().record();
  BufferView views[] = {BufferView(x), BufferView(y)};
  for (int r = 0; r < 5; ++r) {
    s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
    s->barrier();
  }
  dev().run(*s);
  EXPECT_EQ(download_vector<float>(dev(), *y, n), std::vector<float>(n, 11.0f));
}

TEST_F(DispatchTest, ScalarsOfSeveralTypesReachTheKernel) {
  KernelBuilder kb("scalars", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto yf = kb.buffer("yf", Type::F32, Access::Write);
  auto yi = kb.buffer("yi", Type::I32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto k = kb.scalar("k", Type::I32);
  auto a = kb.scalar("a", Type::F32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    yf[i] = Val(x[i]) * a;
    yi[i] = cast(i, Type::I32) + k;
  });
  auto kernel = spire::backends::compile_and_load(dev(), kb.finish());
  const uint32_t count = 300;
  auto xs = random_floats(count, 3);
  auto xb = dev().alloc(count * 4), yfb = dev().alloc(count * 4), yib = dev().alloc(count * 4);
  dev().upload(*xb, xs.data(), count * 4);
  dev().fill(*yfb, kNaN);
  dev().fill(*yib, kPoison);
  BufferView views[] = {BufferView(xb), BufferView(yfb), BufferView(yib)};
  const uint32_t active = 299;  // the last element must stay poisoned: n really is read
  dev().dispatch_now(*kernel, views, ScalarArgs().u32(active).i32(-1000).f32(-2.5f), Grid::threads(count, 64));
  auto fs = download_vector<float>(dev(), *yfb, count);
  auto is = download_vector<int32_t>(dev(), *yib, count);
  for (uint32_t j = 0; j < active; ++j) {
    ASSERT_EQ(fs[j], xs[j] * -2.5f) << j;
    ASSERT_EQ(is[j], int32_t(j) - 1000) << j;
  }
  EXPECT_EQ(float_bits(fs[active]), kNaN);
  EXPECT_EQ(uint32_t(is[active]), kPoison);
}

TEST_F(DispatchTest, Float64ScalarIsAlignedInThePushConstants) {
  if (!dev().info().features.has(Feature::Float64)) GTEST_SKIP() << dev().info().id << " has no float64";
  KernelBuilder kb("scale_f64", 64);
  auto y = kb.buffer("y", Type::F64, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto s = kb.scalar("s", Type::F64);  // offset 8, after 4 bytes of padding
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = cast(i, Type::F64) * s; });
  auto kernel = spire::backends::compile_and_load(dev(), kb.finish());
  const uint32_t count = 100;
  auto yb = dev().alloc(count * 8);
  dev().fill(*yb, kNaN);
  BufferView views[] = {BufferView(yb)};
  dev().dispatch_now(*kernel, views, ScalarArgs().u32(count).f64(1.0 / 3.0), Grid::threads(count, 64));
  auto got = download_vector<double>(dev(), *yb, count);
  for (uint32_t j = 0; j < count; ++j) ASSERT_EQ(got[j], double(j) * (1.0 / 3.0)) << j;
}

TEST_F(DispatchTest, ViewsAtAlignedOffsets) {
  const uint32_t align = dev().info().min_storage_offset_alignment;
  const uint32_t n = 100, skip = align / 4;  // in floats
  auto x = dev().alloc((n + skip) * 4), y = dev().alloc((n + skip) * 4), z = dev().alloc((n + skip) * 4);
  std::vector<float> xs(n + skip), ys(n + skip);
  for (uint32_t j = 0; j < n + skip; ++j) xs[j] = float(j), ys[j] = float(1000 * j);
  dev().upload(*x, xs.data(), xs.size() * 4);
  dev().upload(*y, ys.data(), ys.size() * 4);
  dev().fill(*z, kNaN);
  BufferView views[] = {BufferView(x, align), BufferView(y, align), BufferView(z, align, n * 4)};
  dev().dispatch_now(*add_, views, ScalarArgs().u32(n), Grid::threads(n, 256));
  auto zs = download_vector<float>(dev(), *z, n + skip);
  for (uint32_t j = 0; j < skip; ++j) EXPECT_EQ(float_bits(zs[j]), kNaN);
  for (uint32_t j = 0; j < n; ++j) ASSERT_EQ(zs[skip + j], xs[skip + j] + ys[skip + j]) << j;
}

TEST_F(DispatchTest, ZeroWorkgroupsLaunchNothing) {
  auto z = dev().alloc(64);
  dev().fill(*z, kPoison);
  BufferView views[] = {BufferView(z), BufferView(z), BufferView(z)};
  dev().dispatch_now(*add_, views, ScalarArgs().u32(0), Grid::threads(0, 256));
  EXPECT_EQ(download_vector<uint32_t>(dev(), *z, 16), std::vector<uint32_t>(16, kPoison));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(DispatchTest, BindingAndScalarMismatchesThrowNamingTheKernel) {
  auto a = dev().alloc(1024);
  auto s = dev().record();
  BufferView two[] = {BufferView(a), BufferView(a)};
  std::string msg = error_of([&] { s->dispatch(*add_, two, ScalarArgs().u32(1), Grid{1}); });
  EXPECT_NE(msg.find("vector_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 buffers"), std::string::npos) << msg;
  BufferView three[] = {BufferView(a), BufferView(a), BufferView(a)};
  msg = error_of([&] { s->dispatch(*add_, three, ScalarArgs(), Grid{1}); });
  EXPECT_NE(msg.find("vector_add"), std::string::npos) << msg;
  msg = error_of([&] { s->dispatch(*add_, three, ScalarArgs().u32(1).f32(2), Grid{1}); });
  EXPECT_NE(msg.find("scalars"), std::string::npos) << msg;
  msg = error_of([&] { s->dispatch(*add_, three, ScalarArgs().f64(1), Grid{1}); });
  EXPECT_NE(msg.find("vector_add"), std::string::npos) << msg;
}

TEST_F(DispatchTest, MisalignedOrOverrunningViewsThrow) {
  const uint32_t align = dev().info().min_storage_offset_alignment;
  auto a = dev().alloc(4096);
  auto s = dev().record();
  BufferView misaligned[] = {BufferView(a, align / 2), BufferView(a), BufferView(a)};
  std::string msg = error_of([&] { s->dispatch(*add_, misaligned, ScalarArgs().u32(1), Grid{1}); });
  EXPECT_NE(msg.find("vector_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("alignment"), std::string::npos) << msg;
  BufferView overrun[] = {BufferView(a, 0, 8192), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*add_, overrun, ScalarArgs().u32(1), Grid{1}), rt::Error);
}

TEST_F(DispatchTest, ViewBeyondTheBindingLimitThrows) {
  auto a = dev().alloc(4096);
  auto s = dev().record();
  uint64_t too_big = dev().info().max_buffer_bytes + 16;
  if (too_big > (uint64_t(1) << 31) || too_big > dev().info().memory_bytes / 4)
    GTEST_SKIP() << "the binding limit is too large to exceed cheaply here";
  auto big = dev().alloc(too_big);
  BufferView huge[] = {BufferView(big), BufferView(a), BufferView(a)};
  std::string msg = error_of([&] { s->dispatch(*add_, huge, ScalarArgs().u32(1), Grid{1}); });
  EXPECT_NE(msg.find(std::to_string(dev().info().max_buffer_bytes)), std::string::npos) << msg;
}

TEST_F(DispatchTest, CompilingTheSameKernelAgainReusesThePipeline) {
  auto again = spire::backends::compile_and_load(dev(), vector_add(256));
  auto* a = dynamic_cast<const VulkanKernel*>(add_.get());
  auto* b = dynamic_cast<const VulkanKernel*>(again.get());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->pipeline().get(), b->pipeline().get());
  EXPECT_EQ(b->ir().name, "vector_add");
  auto other = spire::backends::compile_and_load(dev(), vector_add(64));
  EXPECT_NE(dynamic_cast<const VulkanKernel*>(other.get())->pipeline().get(), a->pipeline().get());
}

TEST_F(DispatchTest, KernelOutlivesTheBuilderKernel) {
  std::shared_ptr<rt::Kernel> k;
  {
    kir::Kernel ir = vector_add(128);
    k = spire::backends::compile_and_load(dev(), ir);
  }
  EXPECT_EQ(k->ir().name, "vector_add");
  EXPECT_EQ(k->ir().buffers.size(), 3u);
  check_vector_add(1000, k, 128);
}

TEST_F(DispatchTest, DeviceTeardownIsClean) {
  // A fresh device, dropped before the objects made from it: they keep it alive, and destroying it all must
  // leave nothing for the validation layer to report.
  auto fresh = rt::open_device(dev().info().id);
  auto k = spire::backends::compile_and_load(*fresh, accumulate());
  auto x = fresh->alloc(256), y = fresh->alloc(256, Memory::HostVisible);
  auto s = fresh->record();
  BufferView views[] = {BufferView(x), BufferView(y)};
  s->dispatch(*k, views, ScalarArgs().u32(64), Grid{1});
  s->timestamp();
  auto fence = fresh->submit(*s);
  fresh.reset();
  fence->wait();
  s.reset();
  k.reset();
  x.reset();
  y.reset();
  fence.reset();
  SUCCEED();
}

}  // namespace
}  // namespace spire::rt::vulkan::test
