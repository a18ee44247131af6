// ir/kernel -> SPIR-V words for Vulkan compute, validated with SPIRV-Tools before they leave the backend.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::spirv {

// A module that fails validation is a compiler bug: the message holds the validator's words and the
// kernel's text (ir/kernel/printer.h).
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  // SPIR-V 1.3 / Vulkan 1.1 is the baseline every Vulkan compute device takes.
  bool validate = true;
  // Run spirv-opt's performance passes on the module (validated again afterwards when `validate`).
  // Off by default: drivers optimize anyway, and the emitted module is easier to read.
  bool optimize = false;
};

// Interface contract with runtime/vulkan:
//  * entry point "main", GLCompute, LocalSize = kernel.workgroup_size;
//  * buffer parameter i -> descriptor set 0, binding i, a storage buffer holding a runtime array of its
//    element type (Block-decorated struct, ArrayStride = element size);
//  * scalars -> one push-constant block laid out per kir::Kernel::scalar_offsets();
//  * linear builtins rebuilt from WorkgroupId/NumWorkgroups (x fastest) so a folded 2D/3D grid works.
// What else the runtime must know:
//  * capabilities follow the types used: Float64, Int64, Float16 (any f16 value), StorageBuffer16BitAccess
//    (f16 buffers), StoragePushConstant16 (f16 scalars), AtomicFloat32AddEXT (f32 atomic_add, extension
//    SPV_EXT_shader_atomic_float_add); enable the matching device features;
//  * buffers are declared without the Aliased decoration (but a read-write buffer with vector loads, whose own and
//    vector declarations alias each other), so SPIR-V lets the driver assume two bindings never overlap: do not bind
//    overlapping ranges to one dispatch where either binding is written;
//  * kernels with cooperative matrices (kir::Feature::CooperativeMatrix) use SPV_KHR_cooperative_matrix 16x16x16
//    with subgroup scope, the Vulkan memory model (SPV_KHR_vulkan_memory_model), Int16 where bf16 operands are staged
//    in workgroup memory, and SPV_KHR_bfloat16 for bf16 fragments: enable cooperativeMatrix, vulkanMemoryModel,
//    shaderInt16 and shaderBFloat16Type/CooperativeMatrix; their modules are not run through SPIRV-Tools (compile.cpp);
//  * copies into workgroup memory (kir::CopyToShared) read their buffer through a second declaration of its binding
//    as 16-byte vectors, and their destination arrays are declared as arrays of 16-byte vectors (emit_copies.cpp);
//  * a barrier is OpControlBarrier(Workgroup, Workgroup, AcquireRelease|WorkgroupMemory), with UniformMemory too in
//    kernels that have a readwrite buffer: workgroup memory written before it is visible to the whole workgroup
//    after it. Buffers are not decorated Coherent, so invocations that share data through storage buffers within
//    one dispatch can rely only on atomics; ordinary buffer results are for the next dispatch.
// Throws std::invalid_argument for a kernel kir::verify rejects, CompileError when the module fails
// validation (a compiler bug).
std::vector<uint32_t> compile(const kir::Kernel& k, const Options& opt = {});

// Runs the SPIRV-Tools validator (Vulkan 1.1 environment); returns "" when valid, else its message.
std::string validate(const std::vector<uint32_t>& words);

// spirv-dis text of a module, with friendly names (%float, %x, ...); throws std::invalid_argument when the
// words are not a SPIR-V module.
std::string disassemble(const std::vector<uint32_t>& words);

}  // namespace spire::spirv
