// SPIR-V numbers of SPV_NV_cooperative_matrix2 and SPV_NV_tensor_addressing (workgroup matrices loaded from and
// stored to buffers through tensor layouts), which Debian 12's SPIRV-Headers (1.3.239) predate. Values from the
// SPIR-V registry's grammar (spirv.core.grammar.json) and the extensions' specifications; a test
// (tests/backends/spirv/cooperative_matrix_test.cpp, SpirvWorkgroupMatrix) checks the words the emitter writes with them.
#pragma once

#include <cstdint>

namespace spire::spirv::nv {

// Opcodes.
inline constexpr uint32_t kOpCooperativeMatrixLoadTensor = 5367;   // Result Type, Result, Pointer, Object, TensorLayout, Memory Operand, Tensor Addressing Operands
inline constexpr uint32_t kOpCooperativeMatrixStoreTensor = 5368;  // Pointer, Object, TensorLayout, Memory Operand, Tensor Addressing Operands
inline constexpr uint32_t kOpTypeTensorLayout = 5370;              // Result, Dim, ClampMode (<id>s of u32 constants)
inline constexpr uint32_t kOpTypeTensorView = 5371;                // Result, Dim, HasDimensions (<id> of a bool constant), p...
inline constexpr uint32_t kOpCreateTensorLayout = 5372;            // Result Type, Result
inline constexpr uint32_t kOpTensorLayoutSetDimension = 5373;      // Result Type, Result, TensorLayout, Dim...
inline constexpr uint32_t kOpTensorLayoutSlice = 5375;             // Result Type, Result, TensorLayout, (Offset, Span)...
inline constexpr uint32_t kOpCreateTensorView = 5377;              // Result Type, Result

// Capabilities (each from its own extension: a module declaring only the first is rejected by NVIDIA's driver).
inline constexpr uint32_t kCapabilityCooperativeMatrixTensorAddressing = 5433;  // SPV_NV_cooperative_matrix2
inline constexpr uint32_t kCapabilityTensorAddressing = 5439;                   // SPV_NV_tensor_addressing

// Tensor Clamp Mode: Constant reads clampValue (zero unless set) outside the layout's dimensions and drops stores
// there.
inline constexpr uint32_t kClampConstant = 1;
// Tensor Addressing Operands (a mask literal, then one <id> per bit set).
inline constexpr uint32_t kTensorAddressingNone = 0, kTensorAddressingTensorView = 1;

}  // namespace spire::spirv::nv
