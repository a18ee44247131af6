// When a Vulkan device is reported with cooperative matrices (runtime/vulkan/vulkan_device_info.h): the driver must
// list 16x16x16 subgroup products with f32 sums of both f16 and bf16 operands, and the device must run subgroups of
// 32. Facts are made up here; the real query runs on every device the suite lists (and on the H100's vulkan:0, where
// tests/kernels/matmul_mma_test.cpp then runs the tensor-core kernels).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/vulkan/vulkan_device_info.h"

namespace spire::rt::vulkan {
namespace {

VkCooperativeMatrixPropertiesKHR entry(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeKHR operands,
                                       VkComponentTypeKHR sums, VkScopeKHR scope = VK_SCOPE_SUBGROUP_KHR) {
  VkCooperativeMatrixPropertiesKHR e{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
  e.MSize = m, e.NSize = n, e.KSize = k;
  e.AType = e.BType = operands;
  e.CType = e.ResultType = sums;
  e.scope = scope;
  return e;
}

constexpr VkComponentTypeKHR kF16 = VK_COMPONENT_TYPE_FLOAT16_KHR, kF32 = VK_COMPONENT_TYPE_FLOAT32_KHR;

TEST(VulkanCooperativeMatrixFacts, NeedsSixteenCubedProductsOfBothHalfTypesIntoF32) {
  const auto bf16 = VK_COMPONENT_TYPE_BFLOAT16_KHR;
  // What NVIDIA's driver lists on an H100 (580.159.04), among other entries.
  EXPECT_TRUE(offers_kir_matrix_shapes({entry(16, 8, 16, kF16, kF32), entry(16, 16, 16, kF16, kF16),
                                        entry(16, 16, 16, kF16, kF32), entry(16, 16, 16, bf16, kF32)}));
  EXPECT_FALSE(offers_kir_matrix_shapes({}));
  EXPECT_FALSE(offers_kir_matrix_shapes({entry(16, 16, 16, kF16, kF32)}));                    // no bf16
  EXPECT_FALSE(offers_kir_matrix_shapes({entry(16, 16, 16, bf16, kF32)}));                    // no f16
  EXPECT_FALSE(offers_kir_matrix_shapes({entry(16, 16, 16, kF16, kF16), entry(16, 16, 16, bf16, kF32)}));  // f16 sums
  EXPECT_FALSE(offers_kir_matrix_shapes({entry(16, 8, 16, kF16, kF32), entry(16, 8, 16, bf16, kF32)}));    // 16x8
  EXPECT_FALSE(offers_kir_matrix_shapes(
      {entry(16, 16, 16, kF16, kF32, VK_SCOPE_WORKGROUP_KHR), entry(16, 16, 16, bf16, kF32, VK_SCOPE_WORKGROUP_KHR)}));
}

TEST(VulkanCooperativeMatrixFacts, ReportedOnlyWithSubgroupsOf32) {
  // offered_features() applies SPIRE_MASK_FEATURES, which a run may set (tools/gpu/run-reductions.sh does): not here.
  const char* mask = std::getenv("SPIRE_MASK_FEATURES");
  const std::string saved = mask ? mask : "";
  ::unsetenv("SPIRE_MASK_FEATURES");
  PhysicalDeviceFacts f;
  f.has_cooperative_matrix = true;
  f.has_subgroup_shuffle = true;
  f.has_storage_buffer_16bit = true;
  f.info.subgroup_size = 32;
  EXPECT_TRUE(offered_features(f).has(Feature::CooperativeMatrix));
  f.info.subgroup_size = 64;  // kir's fragments belong to subgroups of 32
  EXPECT_FALSE(offered_features(f).has(Feature::CooperativeMatrix));
  f.info.subgroup_size = 32;
  f.has_cooperative_matrix = false;
  EXPECT_FALSE(offered_features(f).has(Feature::CooperativeMatrix));
  if (mask) ::setenv("SPIRE_MASK_FEATURES", saved.c_str(), 1);
}

VkCooperativeMatrixFlexibleDimensionsPropertiesNV flexible(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeKHR operands,
                                                           uint32_t invocations,
                                                           VkScopeKHR scope = VK_SCOPE_WORKGROUP_KHR) {
  VkCooperativeMatrixFlexibleDimensionsPropertiesNV e{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV};
  e.MGranularity = m, e.NGranularity = n, e.KGranularity = k;
  e.AType = e.BType = operands;
  e.CType = e.ResultType = kF32;
  e.scope = scope;
  e.workgroupInvocations = invocations;
  return e;
}

// Workgroup matrices (VK_NV_cooperative_matrix2): workgroup-scope products of both half types into f32 for 256
// invocations, in granularities that divide the kernels' 32 x 32 x 16 steps.
TEST(VulkanCooperativeMatrixFacts, WorkgroupMatricesNeedBothHalfTypesAt256Invocations) {
  const auto bf16 = VK_COMPONENT_TYPE_BFLOAT16_KHR;
  // What NVIDIA's driver lists on an H200 (580.159.04), among other entries.
  EXPECT_TRUE(offers_kir_workgroup_matrices({flexible(16, 16, 16, kF16, 32), flexible(32, 32, 16, kF16, 256),
                                             flexible(32, 32, 16, bf16, 256), flexible(16, 16, 16, bf16, 0,
                                                                                       VK_SCOPE_SUBGROUP_KHR)}));
  EXPECT_FALSE(offers_kir_workgroup_matrices({}));
  EXPECT_FALSE(offers_kir_workgroup_matrices({flexible(32, 32, 16, kF16, 256)}));  // no bf16
  EXPECT_FALSE(offers_kir_workgroup_matrices({flexible(32, 32, 16, kF16, 128), flexible(32, 32, 16, bf16, 128)}));
  EXPECT_FALSE(offers_kir_workgroup_matrices({flexible(64, 32, 16, kF16, 256), flexible(64, 32, 16, bf16, 256)}));
  EXPECT_FALSE(offers_kir_workgroup_matrices({flexible(32, 32, 32, kF16, 256), flexible(32, 32, 32, bf16, 256)}));
  EXPECT_FALSE(offers_kir_workgroup_matrices(
      {flexible(16, 16, 16, kF16, 256, VK_SCOPE_SUBGROUP_KHR), flexible(16, 16, 16, bf16, 256, VK_SCOPE_SUBGROUP_KHR)}));
}

// Reported on top of cooperative matrices only, and for devices whose workgroups take 256 invocations.
TEST(VulkanCooperativeMatrixFacts, WorkgroupMatricesOnTopOfCooperativeMatrices) {
  const char* mask = std::getenv("SPIRE_MASK_FEATURES");
  const std::string saved = mask ? mask : "";
  ::unsetenv("SPIRE_MASK_FEATURES");
  PhysicalDeviceFacts f;
  f.has_cooperative_matrix = f.has_workgroup_matrix = true;
  f.has_subgroup_shuffle = true;
  f.has_storage_buffer_16bit = true;
  f.info.subgroup_size = 32;
  f.info.max_workgroup_invocations = 1024;
  EXPECT_TRUE(offered_features(f).has(Feature::WorkgroupMatrix));
  f.info.max_workgroup_invocations = 128;
  EXPECT_FALSE(offered_features(f).has(Feature::WorkgroupMatrix));
  f.info.max_workgroup_invocations = 1024;
  f.info.subgroup_size = 64;  // no cooperative matrices, so none of these either
  EXPECT_FALSE(offered_features(f).has(Feature::WorkgroupMatrix));
  f.info.subgroup_size = 32;
  f.has_workgroup_matrix = false;
  EXPECT_FALSE(offered_features(f).has(Feature::WorkgroupMatrix));
  EXPECT_TRUE(offered_features(f).has(Feature::CooperativeMatrix));
  if (mask) ::setenv("SPIRE_MASK_FEATURES", saved.c_str(), 1);
}

}  // namespace
}  // namespace spire::rt::vulkan
