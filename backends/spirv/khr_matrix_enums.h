// SPIR-V numbers of SPV_KHR_cooperative_matrix and SPV_KHR_bfloat16, which Debian 12's SPIRV-Headers (1.3.239)
// predate. Values from the SPIR-V registry's extension specifications (SPV_KHR_cooperative_matrix revision 10,
// SPV_KHR_bfloat16); a test (tests/backends/spirv/cooperative_matrix_test.cpp) checks the words the emitter writes with them.
#pragma once

#include <cstdint>

namespace spire::spirv::khr {

// Opcodes.
inline constexpr uint32_t kOpTypeCooperativeMatrix = 4456;  // Result, Component Type, Scope, Rows, Columns, Use
inline constexpr uint32_t kOpCooperativeMatrixLoad = 4457;  // Result Type, Result, Pointer, Layout, Stride, [Memory]
inline constexpr uint32_t kOpCooperativeMatrixStore = 4458;  // Pointer, Object, Layout, Stride, [Memory]
inline constexpr uint32_t kOpCooperativeMatrixMulAdd = 4459;  // Result Type, Result, A, B, C, [Operands]

// Capabilities.
inline constexpr uint32_t kCapabilityCooperativeMatrix = 6022;
inline constexpr uint32_t kCapabilityBFloat16Type = 5116;
inline constexpr uint32_t kCapabilityBFloat16CooperativeMatrix = 5118;

// Cooperative Matrix Use (an <id> of a 32-bit constant in the type).
inline constexpr uint32_t kMatrixA = 0, kMatrixB = 1, kMatrixAccumulator = 2;
// Cooperative Matrix Layout (an <id> of a 32-bit constant in loads and stores).
inline constexpr uint32_t kRowMajor = 0, kColumnMajor = 1;

// OpTypeFloat's Floating Point Encoding operand (SPV_KHR_bfloat16): OpTypeFloat 16 BFloat16KHR.
inline constexpr uint32_t kFPEncodingBFloat16 = 0;

}  // namespace spire::spirv::khr
