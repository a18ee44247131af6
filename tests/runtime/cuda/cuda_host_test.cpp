// runtime/cuda behaviours that need no GPU: loading without a driver, device naming, and the host-side
// helpers the CUDA runtime relies on (scalar packing, grid folding, feature masking, kernel copies).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "ir/kernel/builder.h"
#include "ir/kernel/printer.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_device_info.h"
#include "runtime/cuda/cuda_driver.h"
#include "ir/kernel/kernel.h"
#include "runtime/device.h"

namespace spire::rt::cuda {
namespace {

using namespace kir;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(CudaDriver, ListDevicesNeverThrows) {
  std::vector<DeviceInfo> ds;
  EXPECT_NO_THROW(ds = cuda::list_devices());
  std::cout << "CUDA driver status: " << driver_status() << "\n";
  if (!driver().ok) {
    EXPECT_TRUE(ds.empty()) << "devices listed although the driver did not load: " << driver().problem;
    EXPECT_FALSE(driver().problem.empty());
  }
  for (const auto& d : ds) {
    EXPECT_EQ(d.backend, Backend::Cuda);
    EXPECT_EQ(d.id, "cuda:" + std::to_string(d.index));
    EXPECT_EQ(d.vendor, "NVIDIA");
    EXPECT_EQ(d.subgroup_size, 32u);
    EXPECT_GE(d.compute_capability, 75u);
  }
}

TEST(CudaDriver, RegistryOmitsCudaWithoutDriver) {
  std::vector<DeviceInfo> all;
  EXPECT_NO_THROW(all = rt::list_devices());
  size_t cuda = 0;
  for (const auto& d : all) cuda += d.backend == Backend::Cuda;
  EXPECT_EQ(cuda, cuda::list_devices().size());
}

TEST(CudaDriver, OpeningAMissingDeviceNamesIt) {
  size_t n = cuda::list_devices().size();
  std::string name = "cuda:" + std::to_string(n);  // one past the last: never present
  try {
    rt::open_device(name);
    FAIL() << name << " opened";
  } catch (const rt::Error& e) {
    EXPECT_TRUE(contains(e.what(), name)) << e.what();
  }
  try {
    cuda::open(int(n));
    FAIL() << name << " opened directly";
  } catch (const rt::Error& e) {
    EXPECT_TRUE(contains(e.what(), name)) << e.what();
    if (!driver().ok) {
      EXPECT_TRUE(contains(e.what(), driver().problem)) << e.what();
    }
  }
}

TEST(CudaDriver, ResultTextWithoutDriverStillNamesTheCode) {
  Driver none;  // no entry points: what an error message says before the driver loaded
  EXPECT_EQ(result_text(none, 2), "unknown CUresult (2): no description");
  EXPECT_EQ(driver_version_text(12080), "CUDA driver 12.8");
  EXPECT_EQ(driver_version_text(13000), "CUDA driver 13.0");
  try {
    throw_result(none, 2, "cuda:3", "cuMemAlloc", "(64 bytes)");
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(std::string(e.what()), "cuda:3: cuMemAlloc failed (64 bytes): unknown CUresult (2): no description");
  }
  EXPECT_THROW(throw_result(none, 700, "cuda:0", "cuEventSynchronize"), Error);
}

TEST(ScalarArgs, PacksLikeKernelScalarOffsets) {
  KernelBuilder kb("packing", 32);
  auto o = kb.buffer("o", Type::F64, Access::Write);
  Val a = kb.scalar("a", Type::U32);
  Val b = kb.scalar("b", Type::F64);
  Val c = kb.scalar("c", Type::I32);
  Val d = kb.scalar("d", Type::I64);
  Val e = kb.scalar("e", Type::F32);
  o[kb.global_id()] = cast(a, Type::F64) + b + cast(c, Type::F64) + cast(d, Type::F64) + cast(e, Type::F64);
  kir::Kernel k = kb.finish();
  ScalarArgs args;
  args.u32(7).f64(2.5).i32(-3).i64(-(int64_t(1) << 40)).f32(0.25f);
  EXPECT_EQ(args.count(), k.scalars.size());
  std::vector<uint32_t> expected_offsets = {0, 8, 16, 24, 32};
  EXPECT_EQ(k.scalar_offsets(), expected_offsets);
  ASSERT_EQ((args.bytes().size() + 3) / 4 * 4, k.scalar_block_bytes());
  // Each value sits at the offset the kernel expects (runtime/cuda points kernelParams there).
  auto at = [&](uint32_t off, auto v) {
    decltype(v) got;
    std::memcpy(&got, args.bytes().data() + off, sizeof got);
    return got == v;
  };
  EXPECT_TRUE(at(0, uint32_t(7)));
  EXPECT_TRUE(at(8, 2.5));
  EXPECT_TRUE(at(16, int32_t(-3)));
  EXPECT_TRUE(at(24, -(int64_t(1) << 40)));
  EXPECT_TRUE(at(32, 0.25f));
}

TEST(FoldGrid, FitsCudaLimitsAndCoversEveryGroup) {
  const std::array<uint32_t, 3> cuda_max = {2147483647u, 65535u, 65535u};
  EXPECT_EQ(fold_grid(0, cuda_max), (std::array<uint32_t, 3>{0, 0, 0}));
  EXPECT_EQ(fold_grid(1, cuda_max), (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(fold_grid(2147483647u, cuda_max), (std::array<uint32_t, 3>{2147483647u, 1, 1}));
  for (uint64_t groups : {uint64_t(2147483648u), uint64_t(1) << 40, (uint64_t(1) << 46) + 12345}) {
    auto g = fold_grid(groups, cuda_max);
    uint64_t launched = uint64_t(g[0]) * g[1] * g[2];
    EXPECT_GE(launched, groups);
    for (int i = 0; i < 3; ++i) EXPECT_LE(g[i], cuda_max[i]);
    // The linear group id the PTX rebuilds (x + nx*(y + ny*z)) must stay within u32 for the ids a kernel
    // uses; past 2^32 groups the kernel cannot address them anyway, so only the fit is checked there.
  }
  // A small limit folds into 2D with less than one row of idle groups.
  const std::array<uint32_t, 3> small = {1000, 1000, 1000};
  auto g = fold_grid(1001, small);
  EXPECT_EQ(g[2], 1u);
  EXPECT_GE(uint64_t(g[0]) * g[1], 1001u);
  EXPECT_LT(uint64_t(g[0]) * g[1] - 1001u, g[0]);
  EXPECT_THROW(fold_grid(uint64_t(1000) * 1000 * 1000 + 1, small), Error);
}

class FeatureMask : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("SPIRE_MASK_FEATURES"); }
  const Features all = Features(Feature::Float16) | Feature::Float64 | Feature::Int64 | Feature::AtomicAddInt |
                       Feature::AtomicAddF32 | Feature::SubgroupShuffle | Feature::BFloat16 |
                       Feature::CooperativeMatrix | Feature::AsyncCopy | Feature::WarpgroupMatrix | Feature::TensorCopy |
                       Feature::WorkgroupMatrix;
};

TEST_F(FeatureMask, UnsetLeavesEverything) {
  ::unsetenv("SPIRE_MASK_FEATURES");
  EXPECT_EQ(rt::apply_feature_mask(all), all);
}

TEST_F(FeatureMask, RemovesNamedFeatures) {
  ::setenv("SPIRE_MASK_FEATURES", "float64, float16", 1);
  Features f = rt::apply_feature_mask(all);
  EXPECT_FALSE(f.has(Feature::Float64));
  EXPECT_FALSE(f.has(Feature::Float16));
  EXPECT_TRUE(f.has(Feature::Int64));
  EXPECT_TRUE(f.has(Feature::AtomicAddF32));
  ::setenv("SPIRE_MASK_FEATURES", "atomic-add-f32,,bogus", 1);  // unknown names are reported and ignored
  f = rt::apply_feature_mask(all);
  EXPECT_FALSE(f.has(Feature::AtomicAddF32));
  EXPECT_TRUE(f.has(Feature::Float64));
  // The last feature bits are reachable by name too (the mask walks every bit up to kir::kLastFeature).
  EXPECT_TRUE(f.has(Feature::SubgroupShuffle));
  ::setenv("SPIRE_MASK_FEATURES",
           "subgroup-shuffle, cooperative-matrix, async-copy, warpgroup-matrix, tensor-copy, workgroup-matrix", 1);
  f = rt::apply_feature_mask(all);
  EXPECT_FALSE(f.has(Feature::SubgroupShuffle));
  EXPECT_FALSE(f.has(Feature::CooperativeMatrix));
  EXPECT_FALSE(f.has(Feature::AsyncCopy));
  EXPECT_FALSE(f.has(Feature::WarpgroupMatrix));
  EXPECT_FALSE(f.has(Feature::TensorCopy));
  EXPECT_FALSE(f.has(Feature::WorkgroupMatrix));
  EXPECT_TRUE(f.has(Feature::BFloat16));
  static_assert(kir::kLastFeature == Feature::WorkgroupMatrix, "name the new last feature here");
}

TEST(BytesText, HumanUnits) {
  EXPECT_EQ(bytes_text(512), "512 bytes");
  EXPECT_EQ(bytes_text(1536), "1.5 KiB");
  EXPECT_EQ(bytes_text(uint64_t(1) << 50), "1.0 PiB");
  EXPECT_EQ(bytes_text(uint64_t(80) << 30), "80.0 GiB");
}

TEST(KernelCopy, DeepCopyPrintsTheSame) {
  KernelBuilder kb("copied", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto acc = kb.var("acc", kb.f32(0));
  auto i = kb.global_id();
  kb.if_else(i < n, [&] {
    kb.for_(kb.u32(0), n, [&](Val j) { acc += x[j]; });
  }, [&] { acc = kb.f32(-1); });
  y[i] = acc.get();
  kir::Kernel k = kb.finish();
  kir::Kernel c = kir::clone(k);
  EXPECT_EQ(print(c), print(k));
  EXPECT_EQ(verify(c), "");
}

}  // namespace
}  // namespace spire::rt::cuda
