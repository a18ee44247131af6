// compile(): kernel IR -> validated SPIR-V words.
#include <fmt/format.h>

#include <stdexcept>

#include "backends/spirv/kernel_emitter.h"
#include "backends/spirv/optimize.h"
#include "backends/spirv/require_valid.h"
#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/printer.h"

namespace spire::spirv {

void require_valid(const std::vector<uint32_t>& words, const kir::Kernel& k, const char* stage) {
  std::string message = validate(words);
  if (!message.empty())
    throw CompileError(fmt::format("SPIR-V for kernel '{}' failed validation{} (a compiler bug): {}\n{}", k.name, stage,
                                   message, kir::print(k)));
}

std::vector<uint32_t> compile(const kir::Kernel& k, const Options& opt) {
  if (k.prebuilt()) {
    // A user's module (GLSL through shaderc): validated like ours, but its faults are the user's.
    std::string message = validate(k.spirv_module);
    if (!message.empty()) throw CompileError(fmt::format("the SPIR-V module of kernel '{}' is invalid: {}", k.name, message));
    return k.spirv_module;
  }
  // The emitter trusts the IR's structural invariants; a malformed kernel is the caller's error, reported
  // as such rather than as a validator complaint about the module it would produce.
  std::string problem = kir::verify(k);
  if (!problem.empty())
    throw std::invalid_argument(fmt::format("kernel '{}' is malformed: {}", k.name, problem));
  // No Vulkan device reports these (runtime/vulkan/vulkan_device_info.cpp), so the lowering never picks such a kernel
  // for one; a direct caller learns why here.
  for (kir::Feature f : {kir::Feature::WarpgroupMatrix, kir::Feature::TensorCopy})
    if (k.features.has(f))
      throw CompileError(fmt::format("kernel '{}' needs {}, which the SPIR-V backend does not emit yet", k.name,
                                     kir::feature_name(f)));
  // f32 operand fragments are TF32 on PTX's tensor cores; Vulkan's cooperative matrices have no TF32 type, so the tf32
  // precision policy runs as fp32 on Vulkan devices (lowering/heavy_lowering.h says so in the plan).
  for (const kir::MatrixFragment& f : k.fragments)
    if ((f.use == kir::MatrixUse::A || f.use == kir::MatrixUse::B) && f.elem == kir::Type::F32)
      throw CompileError(fmt::format("kernel '{}': fragment {} multiplies f32 operands as TF32, which Vulkan's "
                                     "cooperative matrices do not offer", k.name, f.name));

  std::vector<uint32_t> words = KernelEmitter(k).emit();
  // Debian 12's SPIRV-Tools (2023.1) predates SPV_KHR_cooperative_matrix and SPV_KHR_bfloat16: its validator and
  // optimizer reject their opcodes, so cooperative-matrix modules skip both. Their words are checked against the
  // extensions' specifications by tests/backends/spirv/cooperative_matrix_test.cpp and run by the device tests where a driver
  // offers the feature (tests/kernels/matmul_mma_test.cpp).
  if (!k.fragments.empty()) return words;
  if (opt.validate) require_valid(words, k);
  if (opt.optimize) {
    words = optimize_module(words, k.name);
    if (opt.validate) require_valid(words, k, " after spirv-opt");
  }
  return words;
}

}  // namespace spire::spirv
