// GLSL compute shaders as custom-op kernels: compiled to SPIR-V with shaderc (glslang), for Vulkan devices.
//
// The shader follows the custom-op launch contract (lowering/custom_kernels.h) in GLSL terms:
//
//   #version 450
//   layout(local_size_x = 256) in;
//   layout(set = 0, binding = 0) readonly buffer In { float x[]; };     // input 0 (then 1, 2, ...)
//   layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };   // the result: the last binding
//   layout(push_constant) uniform Params { uint n; };                   // the result's element count
//   void main() { uint group = SPIRE_GROUP_ID; ... }
//
// SPIRE_GROUP_ID (defined for every shader) is the linear workgroup index: the runtime may fold a long 1D grid
// into 2D or 3D to stay within a device's limits, so gl_WorkGroupID.x alone is not the index. An op that declares
// configs (op file `configs: unroll=1; unroll=2`) has its shader compiled once per config, each value a macro:
// SPIRE_CONFIG_unroll is 1, then 2.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "kernels/tuning_config.h"

namespace spire::ext {

struct GlslModule {
  std::vector<uint32_t> words;
  std::array<uint32_t, 3> workgroup_size{};  // read from the module's LocalSize
};

// Compiles `source` (named `file_name` in messages) for Vulkan 1.1 and checks the contract's shape: a LocalSize,
// storage-buffer bindings in set 0 numbered 0..bindings-1. Throws graph::GraphError with shaderc's messages
// (file:line: error) or naming what the module lacks.
// `config`: its values as SPIRE_CONFIG_<name> macros (null: none).
GlslModule compile_glsl_kernel(const std::string& source, const std::string& file_name, uint32_t bindings,
                               const lowering::heavy::Config* config = nullptr);

}  // namespace spire::ext
