// Dispatch: kernels compute the right thing at awkward sizes (outputs poisoned first, so a kernel that writes
// nothing cannot pass), grids fold past the device's workgroup-count limit, scalars of every width arrive,
// views bind at aligned offsets, and bad bindings are refused by name before anything runs.
#include "backends/compile_kernel.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"
#include "tests/runtime/conformance/kernels.h"

namespace spire::rt::conformance {
namespace {

class DispatchTest : public Conformance {
 protected:
  std::shared_ptr<Kernel> load(const kir::Kernel& k) { return backends::compile_and_load(dev(), k); }

  // z = x + y for n elements on fresh random inputs; every element is checked bit for bit (one IEEE add), and
  // poisoned elements after the end must stay poisoned.
  void check_vector_add(uint64_t n, const Kernel& k) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const uint64_t slack = 64;
    auto xs = random_floats(n, uint32_t(n) + 1), ys = random_floats(n, uint32_t(n) + 2);
    auto x = upload_vector(dev(), xs), y = upload_vector(dev(), ys);
    auto z = dev().alloc((n + slack) * 4);
    dev().fill(*z, kNaNBits);
    BufferView views[] = {BufferView(x), BufferView(y), BufferView(z)};
    dev().dispatch_now(k, views, ScalarArgs().u32(uint32_t(n)), Grid::threads(n, k.interface().workgroup_size[0]));
    auto zs = download_vector<float>(dev(), *z, n + slack);
    size_t bad = 0;
    for (uint64_t i = 0; i < n; ++i)
      if (float_bits(zs[i]) != float_bits(xs[i] + ys[i]) && bad++ < 5)
        ADD_FAILURE() << "z[" << i << "] = " << zs[i] << ", want " << xs[i] + ys[i];
    EXPECT_EQ(bad, 0u) << "wrong elements";
    for (uint64_t i = n; i < n + slack; ++i) ASSERT_EQ(float_bits(zs[i]), kNaNBits) << "write past the end at " << i;
  }
};
SPIRE_CONFORMANCE_INSTANTIATE(DispatchTest);

TEST_P(DispatchTest, VectorAddIsRightAtAwkwardSizes) {
  auto k = load(vector_add(256));
  for (uint64_t n : {1ull, 255ull, 256ull, 257ull, 100003ull}) check_vector_add(n, *k);
}

TEST_P(DispatchTest, GridsBeyondTheWorkgroupCountLimitFold) {
  const uint32_t max_x = info().max_workgroup_count[0];
  // Two more workgroups than one dimension holds; only cheap where the limit is Vulkan's usual 65535, not
  // CUDA's 2^31-1 (there fold_grid's arithmetic is checked host-side, and launches in tests/runtime/cuda's mock tests).
  if (max_x > (1u << 17))
    GTEST_SKIP() << info().id << " takes " << max_x << " workgroups in x: exceeding that is too costly to run here";
  const uint32_t wg = 64;
  const uint64_t n = (uint64_t(max_x) + 1) * wg + 3;
  auto groups = fold_grid(Grid::threads(n, wg).groups, info().max_workgroup_count);
  EXPECT_GT(groups[1] * uint64_t(groups[2]), 1u) << "expected a folded grid";
  check_vector_add(n, *load(vector_add(wg)));
}

TEST_P(DispatchTest, ThirtyTwoBitScalarsReachTheKernel) {
  auto k = load(scalars_32bit());
  const uint32_t count = 300, active = 299;  // the last element stays poisoned: n really is read
  auto xs = random_floats(count, 3);
  auto x = upload_vector(dev(), xs);
  auto yf = dev().alloc(count * 4), yi = dev().alloc(count * 4);
  dev().fill(*yf, kNaNBits);
  dev().fill(*yi, kPoison);
  BufferView views[] = {BufferView(x), BufferView(yf), BufferView(yi)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(active).i32(-1000).f32(-2.5f), Grid::threads(count, 64));
  auto fs = download_vector<float>(dev(), *yf, count);
  auto is = download_vector<int32_t>(dev(), *yi, count);
  for (uint32_t j = 0; j < active; ++j) {
    ASSERT_EQ(fs[j], xs[j] * -2.5f) << j;
    ASSERT_EQ(is[j], int32_t(j) - 1000) << j;
  }
  EXPECT_EQ(float_bits(fs[active]), kNaNBits);
  EXPECT_EQ(uint32_t(is[active]), kPoison);
}

TEST_P(DispatchTest, Float64ScalarIsAlignedAfterA32BitOne) {
  if (!info().features.has(kir::Feature::Float64)) GTEST_SKIP() << info().id << " has no float64";
  auto k = load(scale_f64());
  const uint32_t count = 100;
  auto y = dev().alloc(count * 8);
  dev().fill(*y, kPoison);
  BufferView views[] = {BufferView(y)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(count).f64(1.0 / 3.0), Grid::threads(count, 64));
  auto got = download_vector<double>(dev(), *y, count);
  for (uint32_t j = 0; j < count; ++j) ASSERT_EQ(got[j], double(j) * (1.0 / 3.0)) << j;
}

TEST_P(DispatchTest, Int64ScalarIsAlignedAfterA32BitOne) {
  if (!info().features.has(kir::Feature::Int64)) GTEST_SKIP() << info().id << " has no int64";
  auto k = load(offset_i64());
  const uint32_t count = 100;
  const int64_t base = -(int64_t(3) << 40);  // beyond 32 bits
  auto y = dev().alloc(count * 8);
  dev().fill(*y, kPoison);
  BufferView views[] = {BufferView(y)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(count).i64(base), Grid::threads(count, 64));
  auto got = download_vector<int64_t>(dev(), *y, count);
  for (uint32_t j = 0; j < count; ++j) ASSERT_EQ(got[j], base + j) << j;
}

TEST_P(DispatchTest, ViewsBindAtAlignedOffsets) {
  auto k = load(vector_add(256));
  const uint32_t align = info().min_storage_offset_alignment;
  const uint32_t n = 100, skip = align / 4;  // in floats
  auto xs = random_floats(n + skip, 8), ys = random_floats(n + skip, 9);
  auto x = upload_vector(dev(), xs), y = upload_vector(dev(), ys);
  auto z = dev().alloc((n + 2 * skip) * 4);
  dev().fill(*z, kNaNBits);
  BufferView views[] = {BufferView(x, align), BufferView(y, align), BufferView(z, align, n * 4)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(n), Grid::threads(n, 256));
  auto zs = download_vector<float>(dev(), *z, n + 2 * skip);
  for (uint32_t j = 0; j < skip; ++j) EXPECT_EQ(float_bits(zs[j]), kNaNBits) << "before the view, " << j;
  for (uint32_t j = 0; j < n; ++j) ASSERT_EQ(zs[skip + j], xs[skip + j] + ys[skip + j]) << j;
  for (uint32_t j = n + skip; j < n + 2 * skip; ++j) EXPECT_EQ(float_bits(zs[j]), kNaNBits) << "after the view, " << j;
}

TEST_P(DispatchTest, AnEmptyGridLaunchesNothing) {
  auto k = load(vector_add(256));
  auto z = dev().alloc(64);
  dev().fill(*z, kPoison);
  BufferView views[] = {BufferView(z), BufferView(z), BufferView(z)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(16), Grid::threads(0, 256));
  EXPECT_EQ(download_vector<uint32_t>(dev(), *z, 16), std::vector<uint32_t>(16, kPoison));
}

TEST_P(DispatchTest, ZeroByteBuffersMayBeBound) {
  auto k = load(vector_add(64));
  auto empty = dev().alloc(0);
  BufferView views[] = {BufferView(empty), BufferView(empty), BufferView(empty)};
  EXPECT_NO_THROW(dev().dispatch_now(*k, views, ScalarArgs().u32(0), Grid::workgroups(1)));
}

TEST_P(DispatchTest, AWrongBindingCountIsAnErrorNamingKernelAndDevice) {
  auto k = load(vector_add(256));
  auto a = dev().alloc(1024);
  auto s = dev().record();
  BufferView two[] = {BufferView(a), BufferView(a)};
  std::string msg = error_of([&] { s->dispatch(*k, two, ScalarArgs().u32(1), Grid{1}); });
  EXPECT_TRUE(contains(msg, "vector_add")) << msg;
  EXPECT_TRUE(contains(msg, "3 buffers")) << msg;
  EXPECT_TRUE(contains(msg, info().id)) << msg;
  BufferView four[] = {BufferView(a), BufferView(a), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, four, ScalarArgs().u32(1), Grid{1}), Error);
  BufferView null_view[] = {BufferView(a), BufferView(), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, null_view, ScalarArgs().u32(1), Grid{1}), Error);
}

TEST_P(DispatchTest, WrongScalarsAreAnErrorNamingKernelAndDevice) {
  auto k = load(vector_add(256));
  auto a = dev().alloc(1024);
  auto s = dev().record();
  BufferView three[] = {BufferView(a), BufferView(a), BufferView(a)};
  for (const ScalarArgs& wrong : {ScalarArgs(), ScalarArgs().u32(1).f32(2), ScalarArgs().f64(1)}) {
    std::string msg = error_of([&] { s->dispatch(*k, three, wrong, Grid{1}); });
    EXPECT_TRUE(contains(msg, "vector_add")) << msg;
    EXPECT_TRUE(contains(msg, "scalars")) << msg;
    EXPECT_TRUE(contains(msg, info().id)) << msg;
  }
}

TEST_P(DispatchTest, AMisalignedViewOffsetIsAnError) {
  auto k = load(vector_add(256));
  const uint32_t align = info().min_storage_offset_alignment;
  auto a = dev().alloc(4096);
  auto s = dev().record();
  for (uint64_t offset : {uint64_t(align / 2), uint64_t(align + 4 * (align > 4))}) {
    if (offset % align == 0) continue;
    BufferView misaligned[] = {BufferView(a), BufferView(a, offset), BufferView(a)};
    std::string msg = error_of([&] { s->dispatch(*k, misaligned, ScalarArgs().u32(1), Grid{1}); });
    EXPECT_TRUE(contains(msg, "vector_add")) << msg;
    EXPECT_TRUE(contains(msg, "alignment")) << msg;
    EXPECT_TRUE(contains(msg, info().id)) << msg;
  }
}

TEST_P(DispatchTest, AViewOverrunningItsBufferIsAnError) {
  auto k = load(vector_add(256));
  const uint32_t align = info().min_storage_offset_alignment;
  auto a = dev().alloc(4096);
  auto s = dev().record();
  BufferView too_long[] = {BufferView(a, 0, 8192), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, too_long, ScalarArgs().u32(1), Grid{1}), Error);
  BufferView shifted[] = {BufferView(a, align, 4096), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, shifted, ScalarArgs().u32(1), Grid{1}), Error);
  BufferView past_the_end[] = {BufferView(a, 4096 + align), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, past_the_end, ScalarArgs().u32(1), Grid{1}), Error);
}

TEST_P(DispatchTest, AViewBeyondTheBindingLimitIsAnError) {
  const uint64_t too_big = info().max_buffer_bytes + 16;
  if (too_big > (uint64_t(1) << 31) || too_big > info().memory_bytes / 4)
    GTEST_SKIP() << info().id << " binds up to " << info().max_buffer_bytes << " bytes: too large to exceed cheaply here";
  auto k = load(vector_add(256));
  auto a = dev().alloc(4096);
  auto big = dev().alloc(too_big);
  auto s = dev().record();
  BufferView huge[] = {BufferView(big), BufferView(a), BufferView(a)};
  std::string msg = error_of([&] { s->dispatch(*k, huge, ScalarArgs().u32(1), Grid{1}); });
  EXPECT_TRUE(contains(msg, std::to_string(info().max_buffer_bytes))) << msg;
}

TEST_P(DispatchTest, ObjectsMayOutliveTheirDevice) {
  // A fresh device dropped before everything made from it: they keep what they need alive, the submitted work
  // still completes, and tearing it all down leaves nothing for the validation layer to report.
  auto fresh = open_suite_device(GetParam());
  auto k = backends::compile_and_load(*fresh, accumulate(64));
  auto x = fresh->alloc(256), y = fresh->alloc(256, Memory::HostVisible);
  fresh->fill(*x, float_bits(2.0f));
  fresh->fill(*y, float_bits(1.0f));
  auto s = fresh->record();
  BufferView views[] = {BufferView(x), BufferView(y)};
  s->dispatch(*k, views, ScalarArgs().u32(64), Grid{1});
  s->timestamp();
  auto fence = fresh->submit(*s);
  fresh.reset();
  fence->wait();
  EXPECT_TRUE(fence->ready());
  s.reset();
  k.reset();
  x.reset();
  y.reset();
  fence.reset();
}

}  // namespace
}  // namespace spire::rt::conformance
