// Kernels that need optional device features: each runs where the device has the feature (the runtime must
// then enable it, or the validation layer complains) and is skipped, visibly, where it does not.
#include "backends/compile_kernel.h"
#include <cmath>

#include "ir/kernel/builder.h"
#include "tests/runtime/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using namespace spire::kir;

class OptionalFeatureTest : public VulkanTest {
 protected:
  bool has(Feature f) { return dev().info().features.has(f); }
};

// Half-precision bits of a float that is exactly representable as a normal half (or zero).
uint16_t half_bits(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  int32_t exp = int32_t((u >> 23) & 0xFF);
  uint32_t mant = u & 0x7FFFFFu;
  if (exp == 0) return uint16_t(sign);
  return uint16_t(sign | uint32_t(exp - 127 + 15) << 10 | mant >> 13);
}

TEST_F(OptionalFeatureTest, Float16BuffersAndArithmetic) {
  if (!has(Feature::Float16)) GTEST_SKIP() << dev().info().id << " has no float16";
  KernelBuilder kb("half_axpy", 64);
  auto x = kb.buffer("x", Type::F16, Access::Read);
  auto y = kb.buffer("y", Type::F16, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(x[i]) * 2.0 + Val(y[i]); });
  auto k = spire::backends::compile_and_load(dev(), kb.finish());
  const uint32_t count = 301;  // odd: the last element shares a 32-bit word with nothing
  std::vector<uint16_t> xs(count), ys(count), want(count);
  for (uint32_t j = 0; j < count; ++j) {
    float xv = float(int(j % 64) - 32) * 0.25f, yv = float(j % 10);
    xs[j] = half_bits(xv);
    ys[j] = half_bits(yv);
    want[j] = half_bits(xv * 2.0f + yv);  // small quarters: exact in half
  }
  auto xb = dev().alloc(count * 2), yb = dev().alloc(count * 2);
  dev().upload(*xb, xs.data(), count * 2);
  dev().upload(*yb, ys.data(), count * 2);
  BufferView views[] = {BufferView(xb), BufferView(yb)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(count), Grid::threads(count, 64));
  EXPECT_EQ(download_vector<uint16_t>(dev(), *yb, count), want);
}

TEST_F(OptionalFeatureTest, Int64Arithmetic) {
  if (!has(Feature::Int64)) GTEST_SKIP() << dev().info().id << " has no int64";
  KernelBuilder kb("wide_square", 64);
  auto y = kb.buffer("y", Type::I64, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    Val v = cast(i, Type::I64) + kb.i64(int64_t(3) << 31);  // beyond 32 bits
    y[i] = v * v - kb.i64(7);
  });
  auto k = spire::backends::compile_and_load(dev(), kb.finish());
  const uint32_t count = 100;
  auto yb = dev().alloc(count * 8);
  dev().fill(*yb, kPoison);
  BufferView views[] = {BufferView(yb)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(count), Grid::threads(count, 64));
  auto got = download_vector<int64_t>(dev(), *yb, count);
  for (uint32_t j = 0; j < count; ++j) {
    // Wrapping 64-bit arithmetic, computed in unsigned to keep the reference free of overflow UB.
    uint64_t v = uint64_t(j) + (uint64_t(3) << 31);
    ASSERT_EQ(uint64_t(got[j]), v * v - 7u) << j;
  }
}

TEST_F(OptionalFeatureTest, AtomicAddOnIntegersAndFloats) {
  const bool f32 = has(Feature::AtomicAddF32);
  KernelBuilder kb("atomic_sums", 64);
  auto xi = kb.buffer("xi", Type::U32, Access::Read);
  auto si = kb.buffer("si", Type::U32, Access::ReadWrite);
  auto xf = kb.buffer("xf", Type::F32, Access::Read);
  auto sf = kb.buffer("sf", Type::F32, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    si.atomic_add(i % 4u, xi[i]);
    if (f32) sf.atomic_add(kb.u32(0), xf[i]);
  });
  auto k = spire::backends::compile_and_load(dev(), kb.finish());
  const uint32_t count = 10000;
  std::vector<uint32_t> xis(count);
  std::vector<float> xfs(count);
  uint64_t want_i[4] = {0, 0, 0, 0};
  double want_f = 0;
  for (uint32_t j = 0; j < count; ++j) {
    xis[j] = j * 7 + 1;
    want_i[j % 4] += xis[j];
    xfs[j] = float(j % 5);  // small integers: every partial sum is exact in float, in any order
    want_f += xfs[j];
  }
  auto xib = dev().alloc(count * 4), sib = dev().alloc(16), xfb = dev().alloc(count * 4), sfb = dev().alloc(4);
  dev().upload(*xib, xis.data(), count * 4);
  dev().upload(*xfb, xfs.data(), count * 4);
  dev().fill(*sib, 0);
  dev().fill(*sfb, 0);
  BufferView views[] = {BufferView(xib), BufferView(sib), BufferView(xfb), BufferView(sfb)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(count), Grid::threads(count, 64));
  auto si_got = download_vector<uint32_t>(dev(), *sib, 4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(si_got[j], uint32_t(want_i[j])) << j;
  if (!f32) GTEST_SKIP() << "integer atomics checked; " << dev().info().id << " has no f32 atomic add";
  EXPECT_EQ(download_vector<float>(dev(), *sfb, 1)[0], float(want_f));
}

}  // namespace
}  // namespace spire::rt::vulkan::test
