// A point of a kernel template's config space, and the device limits that bound the space.
//
// Each tunable template (matmul, conv2d and its gradients, the reductions, the row kernels) has its own typed config
// (MatmulTiling, Conv2dConfig, ...) that converts to and from this generic form: named integers in a fixed
// order, written as text "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4". The generic form is what the
// tuner times, what the tuning cache stores and what custom ops declare, so none of them needs to know any
// template's struct.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spire::lowering::heavy {

class Config {
 public:
  Config() = default;
  Config(std::initializer_list<std::pair<std::string, int64_t>> values);

  // The value of `name`; throws std::invalid_argument naming the config when it has none.
  int64_t get(std::string_view name) const;
  bool has(std::string_view name) const;
  // Replaces the value of `name`, or appends it (the order of first setting is the text order).
  Config& set(std::string_view name, int64_t value);
  const std::vector<std::pair<std::string, int64_t>>& values() const { return values_; }
  bool empty() const { return values_.empty(); }

  // "tile_m=64,tile_n=64"; "" for no values.
  std::string text() const;
  // The inverse of text(); throws std::invalid_argument for anything else (names are [a-z0-9_]+, values
  // decimal integers, no name twice).
  static Config parse(std::string_view text);

  friend bool operator==(const Config&, const Config&) = default;

 private:
  std::vector<std::pair<std::string, int64_t>> values_;
};

// The workgroup memory every Vulkan device offers (the spec's least maxComputeSharedMemorySize).
inline constexpr uint32_t kMinSharedBytes = 16384;

// What a device allows a workgroup: candidates must fit, so every config in a candidate list runs there.
// The defaults are what every Vulkan device offers (kMinSharedBytes) and what the templates' heuristics already
// assume (256 invocations).
struct Limits {
  uint32_t shared_bytes = kMinSharedBytes;
  uint32_t max_invocations = 256;
  // The subgroup size workgroup reductions may shuffle across (workgroup_reduce.h): the device's, where it has
  // Feature::SubgroupShuffle and reports a power of two; 0 = none (the shared-memory tree alone).
  uint32_t subgroup_size = 0;
  // Feature::CooperativeMatrix with 32-wide subgroups: 16-bit products may run on tensor cores
  // (matmul_mma_kernel.h).
  bool cooperative_matrix = false;
  // Feature::AsyncCopy: tiles may be fed by 16-byte asynchronous copies.
  bool async_copy = false;
  // Feature::WarpgroupMatrix with 32-wide subgroups: 16-bit products may run on warpgroup MMA
  // (matmul_wgmma_kernel.h).
  bool warpgroup_matrix = false;
  // Feature::TensorCopy: tiles may be fed by the copy engine through tensor maps (Hopper's TMA).
  bool tensor_copy = false;
  // Feature::WorkgroupMatrix with workgroups of 256: 16-bit products may run on workgroup matrices
  // (matmul_workgroup_mma_kernel.h).
  bool workgroup_matrix = false;
  // A CPU device (lavapipe): workgroup barriers and workgroup memory cost it far more than a GPU, so heuristics that
  // trade loads for them (conv2d's shared_w) stay off there.
  bool cpu = false;
  // Kernels compile through ptxas (the CUDA backend), whose register allocation makes other configs pay than NVIDIA's
  // Vulkan compiler does on the same GPU: heuristics that measured so on both may differ by it.
  bool ptx = false;
  // The tf32 precision policy (base/precision.h) on a device with TF32 tensor cores (PTX, cooperative_matrix): f32
  // products and convolutions may run on them with their operands rounded to TF32 (matmul_mma_kernel.h).
  bool tf32 = false;
};

}  // namespace spire::lowering::heavy
