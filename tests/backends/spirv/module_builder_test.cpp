// The module builder's encoding and deduplication, and constant bit patterns, checked against values
// derived by hand from the SPIR-V and IEEE 754 specifications.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/spirv/constant_bits.h"
#include "backends/spirv/module_builder.h"

namespace spire::spirv {
namespace {

TEST(SpirvModuleBuilder, StringsAreNulTerminatedLittleEndianAndPadded) {
  Words w;
  append_string(w, "main");  // 4 bytes + NUL: two words
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], 0x6E69616Du);  // 'm' 'a' 'i' 'n' from the lowest byte up
  EXPECT_EQ(w[1], 0u);
  w.clear();
  append_string(w, "abc");  // 3 bytes + NUL: one word
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], 0x00636261u);
  w.clear();
  append_string(w, "");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], 0u);
}

TEST(SpirvModuleBuilder, InstructionWordHoldsCountAndOpcode) {
  Words w;
  append_instruction(w, SpvOpTypeInt, {7, 32, 1});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], (4u << 16) | 21u);  // OpTypeInt is opcode 21
  EXPECT_EQ(w[1], 7u);
}

TEST(SpirvModuleBuilder, TypesAndConstantsAreDeduplicated) {
  ModuleBuilder m;
  Id i32 = m.type_int(32, true);
  Id u32 = m.type_int(32, false);
  EXPECT_NE(i32, u32);
  EXPECT_EQ(m.type_int(32, true), i32);
  EXPECT_EQ(m.type_pointer(SpvStorageClassFunction, i32), m.type_pointer(SpvStorageClassFunction, i32));
  EXPECT_NE(m.type_pointer(SpvStorageClassFunction, i32), m.type_pointer(SpvStorageClassWorkgroup, i32));
  // Same bits, different types: different constants.
  EXPECT_NE(m.constant(i32, {5}), m.constant(u32, {5}));
  EXPECT_EQ(m.constant(i32, {5}), m.constant(i32, {5}));
  EXPECT_EQ(m.constant_u32(5), m.constant(u32, {5}));
  EXPECT_EQ(m.constant_bool(true), m.constant_bool(true));
  EXPECT_NE(m.constant_bool(true), m.constant_bool(false));
  // Runtime arrays differ by stride; structs never merge.
  EXPECT_EQ(m.type_runtime_array(i32, 4), m.type_runtime_array(i32, 4));
  EXPECT_NE(m.type_struct({i32}), m.type_struct({i32}));
  // Capabilities are declared once.
  m.add_capability(SpvCapabilityShader);
  m.add_capability(SpvCapabilityShader);
  Words words = m.assemble(0x00010300);
  int capabilities = 0;
  for (size_t at = 5; at < words.size(); at += words[at] >> 16)
    if ((words[at] & 0xFFFF) == SpvOpCapability) ++capabilities;
  EXPECT_EQ(capabilities, 1);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 0x00010300u);
  EXPECT_EQ(words[3], m.id_bound());
}

TEST(SpirvConstantBits, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f), 0x3C00);
  EXPECT_EQ(half_bits(-2.0f), 0xC000);
  EXPECT_EQ(half_bits(0.5f), 0x3800);
  EXPECT_EQ(half_bits(65504.0f), 0x7BFF);   // largest finite half
  EXPECT_EQ(half_bits(65519.0f), 0x7BFF);   // below the rounding midpoint 65520
  EXPECT_EQ(half_bits(65520.0f), 0x7C00);   // midpoint: ties to even = infinity
  EXPECT_EQ(half_bits(1e6f), 0x7C00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
  uint16_t nan = half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0); 1 + 3*2^-11 rounds up to 1 + 2^-9.
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(half_bits(0.1f), 0x2E66);                  // 0.0999755859375
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -25)), 0x0000);  // half of it: ties to even = 0
  EXPECT_EQ(half_bits(std::ldexp(1.5f, -25)), 0x0001);  // above the midpoint
  EXPECT_EQ(half_bits(std::ldexp(3.0f, -24)), 0x0003);
  EXPECT_EQ(half_bits(std::ldexp(1023.0f, -24) + std::ldexp(1.0f, -25)), 0x0400);  // carries into normal
}

TEST(SpirvConstantBits, FloatAndIntegerWords) {
  EXPECT_EQ(float_constant_words(32, 1.0), (std::vector<uint32_t>{0x3F800000u}));
  EXPECT_EQ(float_constant_words(16, -2.0), (std::vector<uint32_t>{0xC000u}));  // high half zero
  EXPECT_EQ(float_constant_words(64, 1.0), (std::vector<uint32_t>{0u, 0x3FF00000u}));
  EXPECT_EQ(int_constant_words(32, -1), (std::vector<uint32_t>{0xFFFFFFFFu}));
  EXPECT_EQ(int_constant_words(64, -2), (std::vector<uint32_t>{0xFFFFFFFEu, 0xFFFFFFFFu}));
  EXPECT_EQ(int_constant_words(64, int64_t(1) << 40), (std::vector<uint32_t>{0u, 256u}));
}

}  // namespace
}  // namespace spire::spirv
