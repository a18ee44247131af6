// DeviceInfo: what a device says about itself is well-formed, and the same whether read from the open device,
// from list_devices() or from a second open; SPIRE_MASK_FEATURES hides features in all of them. An adopted
// device's info must equal the listed info of the same physical device but for its id and index.
#include "tests/runtime/conformance/conformance.h"

namespace spire::rt::conformance {
namespace {

SPIRE_CONFORMANCE_SUITE(DeviceInfoTest);

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

TEST_P(DeviceInfoTest, NamesAndLimitsAreWellFormed) {
  const DeviceInfo& d = info();
  EXPECT_EQ(d.id, GetParam());
  if (d.index >= 0)
    EXPECT_EQ(d.id, std::string(backend_name(d.backend)) + ":" + std::to_string(d.index));
  else  // an adopted device is not one of list_devices(): it has no index (runtime/vulkan/vulkan_external.h)
    EXPECT_EQ(d.id, "vulkan:app");
  EXPECT_FALSE(d.name.empty());
  EXPECT_FALSE(d.vendor.empty());
  EXPECT_FALSE(d.driver.empty());
  // Vulkan's required minimums for compute; every CUDA device exceeds them too.
  EXPECT_GE(d.max_workgroup_invocations, 128u);
  EXPECT_GE(d.max_workgroup_size[0], 128u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(d.max_workgroup_size[i], 1u) << "dimension " << i;
    EXPECT_GE(d.max_workgroup_count[i], 65535u) << "dimension " << i;
  }
  EXPECT_GE(d.shared_memory_bytes, 16384u);
  EXPECT_GE(d.max_buffer_bytes, uint64_t(1) << 27);
  EXPECT_GT(d.memory_bytes, 0u);
  EXPECT_TRUE(power_of_two(d.subgroup_size)) << d.subgroup_size;
  EXPECT_TRUE(power_of_two(d.min_storage_offset_alignment)) << d.min_storage_offset_alignment;
  EXPECT_GE(d.min_storage_offset_alignment, 16u) << "vector loads (kir::LoadBufferVector) need views on 16 bytes";
  EXPECT_TRUE(d.features.has(Feature::AtomicAddInt)) << "core on every backend";
  // The compute capability is what PTX is generated for: set on CUDA devices, 0 elsewhere.
  EXPECT_EQ(d.compute_capability > 0, d.backend == Backend::Cuda) << d.compute_capability;
  EXPECT_EQ(dev().binary_format(), d.backend == Backend::Cuda ? BinaryFormat::Ptx : BinaryFormat::Spirv);
}

TEST_P(DeviceInfoTest, AgreesWithListDevicesAndASecondOpen) {
  const DeviceInfo& d = info();
  for (const DeviceInfo& other : {listed_info(d.id), open_suite_device(d.id)->info()}) {
    EXPECT_EQ(other.id, d.id);
    EXPECT_EQ(other.backend, d.backend);
    EXPECT_EQ(other.index, d.index);
    EXPECT_EQ(other.name, d.name);
    EXPECT_EQ(other.vendor, d.vendor);
    EXPECT_EQ(other.driver, d.driver);
    EXPECT_EQ(other.type, d.type);
    EXPECT_EQ(other.subgroup_size, d.subgroup_size);
    EXPECT_EQ(other.shared_memory_bytes, d.shared_memory_bytes);
    EXPECT_EQ(other.max_workgroup_invocations, d.max_workgroup_invocations);
    EXPECT_EQ(other.max_workgroup_size, d.max_workgroup_size);
    EXPECT_EQ(other.max_workgroup_count, d.max_workgroup_count);
    EXPECT_EQ(other.max_buffer_bytes, d.max_buffer_bytes);
    EXPECT_EQ(other.memory_bytes, d.memory_bytes);
    EXPECT_EQ(other.min_storage_offset_alignment, d.min_storage_offset_alignment);
    EXPECT_EQ(other.compute_capability, d.compute_capability);
    EXPECT_EQ(other.features, d.features);
  }
}

TEST_P(DeviceInfoTest, MaskedFeaturesVanishFromListAndOpen) {
  const Features full = info().features;
  ::setenv("SPIRE_MASK_FEATURES", "float64, int64", 1);  // spaces around names are allowed
  const Features masked = listed_info(GetParam()).features;
  ::unsetenv("SPIRE_MASK_FEATURES");
  EXPECT_FALSE(masked.has(Feature::Float64));
  EXPECT_FALSE(masked.has(Feature::Int64));
  Features others = full;
  others.bits &= ~(uint32_t(Feature::Float64) | uint32_t(Feature::Int64));
  EXPECT_EQ(masked, others) << "only the named features go";
  EXPECT_EQ(open_masked("float64, int64")->info().features, masked);
  EXPECT_EQ(listed_info(GetParam()).features, full) << "unset, the mask is gone";
}

}  // namespace
}  // namespace spire::rt::conformance
