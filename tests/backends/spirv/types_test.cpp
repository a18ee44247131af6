// Types beyond the f32/i32/u32 baseline declare their capabilities; scalars land at the offsets the runtime
// writes; atomics use the right instruction, scope and extension.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/builder.h"
#include "tests/backends/spirv/spirv_test_util.h"

namespace spire::spirv {
namespace {

using namespace kir;
using test::compile_to_text;
using test::count_lines;
using test::has_line;

// A kernel that loads, computes with, keeps in a variable, shares and stores values of type t.
Kernel typed_kernel(Type t) {
  KernelBuilder kb(std::string("typed_") + std::string(dtype_name(t)), 64);
  auto a = kb.buffer("a", t, Access::Read);
  auto out = kb.buffer("out", t, Access::Write);
  auto s = kb.scalar("s", t);
  auto tile = kb.shared("tile", t, 64);
  auto i = kb.global_id();
  auto acc = kb.var("acc", kb.constant(t, 1));
  kb.for_(kb.u32(0), kb.u32(3), [&](Val) { acc = acc.get() * a[i] + s; });
  tile[kb.local_id()] = acc;
  kb.barrier();
  out[i] = min(Val(tile[kb.local_id() ^ kb.u32(1)]), s);
  return kb.finish();
}

TEST(SpirvTypes, Float16NeedsFloat16And16BitStorage) {
  Kernel k = typed_kernel(Type::F16);
  EXPECT_TRUE(k.features.has(Feature::Float16));
  std::string text = compile_to_text(k);
  EXPECT_TRUE(has_line(text, "OpCapability Float16$")) << text;
  EXPECT_TRUE(has_line(text, "OpCapability StorageBuffer16BitAccess$")) << text;
  EXPECT_TRUE(has_line(text, "OpCapability StoragePushConstant16$")) << "f16 scalar\n" << text;
  EXPECT_TRUE(has_line(text, R"(OpExtension "SPV_KHR_16bit_storage")")) << text;
  EXPECT_TRUE(has_line(text, "OpDecorate %_runtimearr_half ArrayStride 2$")) << text;
  EXPECT_FALSE(has_line(text, "OpCapability (Float64|Int64)")) << text;
}

TEST(SpirvTypes, Float16InRegistersOnlyNeedsNoStorageCapability) {
  KernelBuilder kb("half_math", 64);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto i = kb.global_id();
  Val h = cast(a[i], Type::F16);
  out[i] = cast(h * h + kb.constant(Type::F16, 0.5), Type::F32);
  std::string text = compile_to_text(kb.finish());
  EXPECT_TRUE(has_line(text, "OpCapability Float16$")) << text;
  EXPECT_FALSE(has_line(text, "16BitAccess|PushConstant16|SPV_KHR_16bit_storage")) << text;
  EXPECT_TRUE(has_line(text, "%half_0x1pn1 = OpConstant %half 0x1p-1$")) << text;
}

TEST(SpirvTypes, Float64) {
  std::string text = compile_to_text(typed_kernel(Type::F64));
  EXPECT_TRUE(has_line(text, "OpCapability Float64$")) << text;
  EXPECT_TRUE(has_line(text, "OpDecorate %_runtimearr_double ArrayStride 8$")) << text;
  EXPECT_FALSE(has_line(text, "OpCapability (Float16|Int64)")) << text;
}

TEST(SpirvTypes, Int64) {
  std::string text = compile_to_text(typed_kernel(Type::I64));
  EXPECT_TRUE(has_line(text, "OpCapability Int64$")) << text;
  EXPECT_TRUE(has_line(text, "OpDecorate %_runtimearr_long ArrayStride 8$")) << text;
  EXPECT_TRUE(has_line(text, "SMin %")) << text;
}

TEST(SpirvTypes, BaselineTypes) {
  for (Type t : {Type::F32, Type::I32, Type::U32}) {
    std::string text = compile_to_text(typed_kernel(t));
    EXPECT_EQ(count_lines(text, "OpCapability"), 1) << text;
    EXPECT_FALSE(has_line(text, "OpExtension")) << text;
  }
}

TEST(SpirvTypes, Int64ConstantsKeepAll64Bits) {
  KernelBuilder kb("big", 1);
  auto out = kb.buffer("out", Type::I64, Access::Write);
  out[0] = kb.i64(int64_t(0x123456789ABCDEF0));
  out[1] = kb.i64(-5);
  std::vector<uint32_t> words = compile(kb.finish());
  std::string text = test::disassemble(words);
  EXPECT_TRUE(has_line(text, "OpConstant %long 1311768467463790320$")) << text;
  EXPECT_TRUE(has_line(text, "OpConstant %long -5$")) << text;
}

TEST(SpirvScalars, PushConstantOffsetsFollowScalarOffsets) {
  KernelBuilder kb("scalars", 64);
  auto out = kb.buffer("out", Type::F64, Access::Write);
  Val h = kb.scalar("h", Type::F16);  // 0
  Val d = kb.scalar("d", Type::F64);  // 8
  Val i = kb.scalar("i", Type::I32);  // 16
  Val u = kb.scalar("u", Type::U32);  // 20
  Val l = kb.scalar("l", Type::I64);  // 24
  Val f = kb.scalar("f", Type::F32);  // 32
  Val h2 = kb.scalar("h2", Type::F16);  // 36
  out[0] = cast(h, Type::F64) + d + cast(i, Type::F64) + cast(u, Type::F64) + cast(l, Type::F64) +
           cast(f, Type::F64) + cast(h2, Type::F64);
  Kernel k = kb.finish();
  std::vector<uint32_t> offsets = k.scalar_offsets();
  ASSERT_EQ(offsets, (std::vector<uint32_t>{0, 8, 16, 20, 24, 32, 36}));
  std::string text = compile_to_text(k);
  for (uint32_t m = 0; m < offsets.size(); ++m)
    EXPECT_TRUE(has_line(text, fmt::format("OpMemberDecorate %Params {} Offset {}$", m, offsets[m]))) << text;
  EXPECT_TRUE(has_line(text, R"(%Params = OpTypeStruct %half %double %int %uint %long %float %half$)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpMemberName %Params 3 "u")")) << text;
  // Each scalar is loaded once.
  EXPECT_EQ(count_lines(text, R"(OpAccessChain %_ptr_PushConstant_)"), 7) << text;
}

TEST(SpirvScalars, ReadTwiceLoadsOnce) {
  KernelBuilder kb("twice", 64);
  auto out = kb.buffer("out", Type::U32, Access::Write);
  Val n = kb.scalar("n", Type::U32);
  kb.if_(kb.global_id() < n, [&] { out[kb.global_id()] = n + kb.emit(Op::ReadScalar, Type::U32, {}, 0); });
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(OpLoad %uint %\w+$)"), 2) << "the scalar and local_invocation_index\n" << text;
}

TEST(SpirvAtomics, IntegerAtomicAdd) {
  for (Type t : {Type::I32, Type::U32}) {
    KernelBuilder kb(std::string("atomic_") + std::string(dtype_name(t)), 64);
    auto counts = kb.buffer("counts", t, Access::ReadWrite);
    auto old = kb.buffer("old", t, Access::Write);
    auto i = kb.global_id();
    old[i] = counts.atomic_add(i % 4u, kb.constant(t, 1));
    Kernel k = kb.finish();
    EXPECT_TRUE(k.features.has(Feature::AtomicAddInt));
    std::string text = compile_to_text(k);
    const char* tn = t == Type::I32 ? "int" : "uint";
    // Scope Device (1), semantics Relaxed (0).
    EXPECT_TRUE(has_line(text, fmt::format("= OpAtomicIAdd %{} %\\w+ %uint_1 %uint_0 %{}_1$", tn, tn))) << text;
    EXPECT_FALSE(has_line(text, "AtomicFloat32AddEXT")) << text;
  }
}

TEST(SpirvAtomics, FloatAtomicAddNeedsTheExtension) {
  KernelBuilder kb("atomic_f32", 64);
  auto sum = kb.buffer("sum", Type::F32, Access::ReadWrite);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto i = kb.global_id();
  Val old = sum.atomic_add(kb.u32(0), x[i]);
  kb.if_(old > 100.0f, [&] { sum[1] = old; });
  Kernel k = kb.finish();
  EXPECT_TRUE(k.features.has(Feature::AtomicAddF32));
  std::string text = compile_to_text(k);
  EXPECT_TRUE(has_line(text, "OpCapability AtomicFloat32AddEXT$")) << text;
  EXPECT_TRUE(has_line(text, R"(OpExtension "SPV_EXT_shader_atomic_float_add")")) << text;
  EXPECT_TRUE(has_line(text, R"(= OpAtomicFAddEXT %float %\w+ %uint_1 %uint_0 %\w+$)")) << text;
}

TEST(SpirvAtomics, AtomicAddWithSignedIndex) {
  KernelBuilder kb("atomic_signed_index", 64);
  auto hist = kb.buffer("hist", Type::U32, Access::ReadWrite);
  Val bin = cast(kb.global_id(), Type::I32) % 8;
  hist.atomic_add(bin, kb.u32(1));
  std::string text = compile_to_text(kb.finish());
  EXPECT_TRUE(has_line(text, "OpAtomicIAdd %uint")) << text;
}

}  // namespace
}  // namespace spire::spirv
