// Device capabilities beyond the Vulkan 1.1 / sm_75 baseline: what a kernel declares it needs (kernel IR, the
// runtime's KernelInterface) and what a device offers (rt::DeviceInfo). One definition for both sides, so the runtime
// refuses by name a kernel that needs what a device lacks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/dtype.h"

namespace spire {

enum class Feature : uint32_t {
  None = 0,
  Float16 = 1u << 0,       // f16 arithmetic and f16 in buffers
  Float64 = 1u << 1,       // f64 arithmetic and buffers
  Int64 = 1u << 2,         // i64 arithmetic and buffers
  AtomicAddInt = 1u << 3,  // atomic add on i32/u32 storage (core everywhere, declared for clarity)
  AtomicAddF32 = 1u << 4,  // atomic add on f32 storage (VK_EXT_shader_atomic_float)
  // Subgroup builtins and shuffle-xor in compute kernels (Vulkan 1.1 subgroupSupportedOperations' basic and shuffle
  // bits in the compute stage; every CUDA device, as shfl.sync).
  SubgroupShuffle = 1u << 5,
  // bf16 in buffers, as 16-bit words (Vulkan's storageBuffer16BitAccess; every CUDA device).
  BFloat16 = 1u << 6,
  // 16x16x16 matrix multiply-accumulate on f16/bf16 fragments with f32 sums, by a subgroup of 32 (kernel.h's
  // MatrixFragment): tensor cores through PTX wmma (sm_80 and newer), or Vulkan's VK_KHR_cooperative_matrix where the
  // driver offers both f16 and bf16 16x16x16 products (runtime/vulkan/vulkan_device_info.h).
  CooperativeMatrix = 1u << 7,
  // 16-byte copies from a buffer into workgroup memory, in batches the kernel waits for (kernel.h's CopyToShared,
  // CopyCommit, CopyWait): PTX cp.async (sm_80 and newer); on Vulkan, 16-byte loads into registers whose stores the
  // backend defers to the wait that covers them (backends/spirv/emit_copies.cpp), which every device runs.
  AsyncCopy = 1u << 8,
  // 64 x N matrix multiply-accumulate by a warpgroup of 4 subgroups, operands read from workgroup memory, f32 sums
  // in registers (kernel.h's WarpgroupMulAdd): Hopper's wgmma, sm_90 only (PTX target sm_90a; later GPUs have
  // other instructions).
  WarpgroupMatrix = 1u << 9,
  // Tiles of a buffer copied into workgroup memory by the copy engine, described by tensor maps, with completion
  // counted by arrival barriers in workgroup memory (kernel.h's TensorMap, TensorCopy, ArrivalBarrier*): Hopper's
  // tensor memory accelerator (cp.async.bulk.tensor) and mbarrier, sm_90.
  TensorCopy = 1u << 10,
  // Matrices of up to 1024 x 1024 held by a whole workgroup, loaded from and stored to buffers directly and
  // multiplied with f32 sums (kernel.h's workgroup MatrixFragment, MatrixLoadTensor, MatrixStoreTensor): Vulkan's
  // VK_NV_cooperative_matrix2 (workgroup scope, flexible dimensions, tensor addressing), where the driver stages
  // the tiles through workgroup memory itself. NVIDIA's driver offers it for 256-invocation workgroups in steps of
  // 32 x 32 x 16 (runtime/vulkan/vulkan_device_info.h).
  WorkgroupMatrix = 1u << 11,
};
inline constexpr Feature kLastFeature = Feature::WorkgroupMatrix;  // for loops over every feature bit

// A set of features, as bits.
struct Features {
  uint32_t bits = 0;
  constexpr Features() = default;
  constexpr Features(Feature f) : bits(uint32_t(f)) {}
  constexpr bool has(Feature f) const { return (bits & uint32_t(f)) != 0; }
  constexpr bool contains(Features other) const { return (bits & other.bits) == other.bits; }
  constexpr Features& operator|=(Features o) { bits |= o.bits; return *this; }
  constexpr friend Features operator|(Features a, Features b) { a |= b; return a; }
  constexpr friend bool operator==(Features a, Features b) { return a.bits == b.bits; }
  // Features in `this` that `available` lacks.
  constexpr Features missing_from(Features available) const {
    Features m; m.bits = bits & ~available.bits; return m;
  }
  constexpr bool empty() const { return bits == 0; }
};

std::string_view feature_name(Feature f);
std::string features_to_string(Features f);  // "float64, int64" or "none"

// Features a value of this type needs in a kernel (Float16 for F16, BFloat16 for BF16, Float64, Int64).
Features features_for_type(DType t);

}  // namespace spire
