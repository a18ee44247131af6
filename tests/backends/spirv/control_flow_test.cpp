// Kernels with the interface, builtins, branches, loops, shared memory and barriers: every module must
// validate (compile() runs the validator), and the disassembly must show the contract with runtime/vulkan.
#include <gtest/gtest.h>

#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/builder.h"
#include "tests/backends/spirv/spirv_test_util.h"

namespace spire::spirv {
namespace {

using namespace kir;
using test::compile_to_text;
using test::count_lines;
using test::has_line;

Kernel relu() {
  KernelBuilder kb("relu", {128, 1, 1});
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto z = kb.buffer("z", Type::F32, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    y[i] = max(x[i], 0.0f);
    z[i] += kb.f32(1);
  });
  return kb.finish();
}

TEST(SpirvInterface, EntryPointWorkgroupSizeAndBindings) {
  std::string text = compile_to_text(relu());
  EXPECT_TRUE(has_line(text, R"(OpEntryPoint GLCompute %relu "main")")) << text;
  EXPECT_TRUE(has_line(text, R"(OpExecutionMode %relu LocalSize 128 1 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpDecorate %x Binding 0$)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpDecorate %y Binding 1$)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpDecorate %z Binding 2$)")) << text;
  EXPECT_EQ(count_lines(text, R"(DescriptorSet 0$)"), 3) << text;
  EXPECT_TRUE(has_line(text, R"(OpMemberDecorate %x_block 0 NonWritable)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpMemberDecorate %y_block 0 NonReadable)")) << text;
  EXPECT_FALSE(has_line(text, R"(OpMemberDecorate %z_block 0 Non)")) << text;
  EXPECT_EQ(count_lines(text, R"(OpDecorate %\w+_block Block)"), 3) << text;
  EXPECT_TRUE(has_line(text, R"(OpDecorate %_runtimearr_float ArrayStride 4)")) << text;
  EXPECT_TRUE(has_line(text, R"(%x = OpVariable %_ptr_StorageBuffer_x_block StorageBuffer)")) << text;
  EXPECT_TRUE(has_line(text, R"(%params = OpVariable %_ptr_PushConstant_Params PushConstant)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpMemberDecorate %Params 0 Offset 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpCapability Shader)")) << text;
  EXPECT_EQ(count_lines(text, R"(OpCapability)"), 1) << "only Shader for an f32/u32 kernel\n" << text;
  EXPECT_TRUE(has_line(text, R"(OpMemoryModel Logical GLSL450)")) << text;
}

TEST(SpirvInterface, HeaderIsSpirv13) {
  std::vector<uint32_t> words = compile(relu());
  ASSERT_GT(words.size(), 5u);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 0x00010300u);
  EXPECT_EQ(words[4], 0u);
}

TEST(SpirvBuiltins, LinearIdsAreRebuiltFromTheFoldedGrid) {
  KernelBuilder kb("builtins", {8, 4, 2});
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto g = kb.global_id();
  auto v = g + kb.local_id() + kb.group_id() + kb.num_groups() + kb.workgroup_size() + kb.global_size() +
           kb.builtin(Builtin::LocalIdX) + kb.builtin(Builtin::LocalIdY) + kb.builtin(Builtin::LocalIdZ);
  out[g] = v;
  std::string text = compile_to_text(kb.finish());
  EXPECT_TRUE(has_line(text, R"(OpExecutionMode %builtins LocalSize 8 4 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(BuiltIn WorkgroupId)")) << text;
  EXPECT_TRUE(has_line(text, R"(BuiltIn NumWorkgroups)")) << text;
  EXPECT_TRUE(has_line(text, R"(BuiltIn LocalInvocationIndex)")) << text;
  EXPECT_TRUE(has_line(text, R"(BuiltIn LocalInvocationId)")) << text;
  // Every Input builtin is on the entry point's interface (SPIR-V 1.3 lists Input/Output variables).
  EXPECT_TRUE(has_line(text, R"(OpEntryPoint GLCompute %builtins "main"( %\w+){4}$)")) << text;
  // Workgroup size as the constant 8*4*2.
  EXPECT_TRUE(has_line(text, R"(OpIMul %uint %\w+ %uint_64)")) << text;
  // Each builtin input is loaded once however often it is read.
  EXPECT_EQ(count_lines(text, R"(OpLoad %v3uint %workgroup_id)"), 1) << text;
  EXPECT_EQ(count_lines(text, R"(OpLoad %v3uint %num_workgroups)"), 1) << text;
  // The three local id components.
  for (int c = 0; c < 3; ++c)
    EXPECT_TRUE(has_line(text, "OpCompositeExtract %uint %\\w+ " + std::to_string(c) + "$")) << text;
}

TEST(SpirvBuiltins, UnusedBuiltinsAreNotDeclared) {
  KernelBuilder kb("only_local", 32);
  auto out = kb.buffer("out", Type::U32, Access::Write);
  out[kb.local_id()] = 1u;
  std::string text = compile_to_text(kb.finish());
  EXPECT_FALSE(has_line(text, R"(BuiltIn WorkgroupId)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpEntryPoint GLCompute %only_local "main" %local_invocation_index$)")) << text;
}

TEST(SpirvControlFlow, IfElseNested) {
  KernelBuilder kb("branches", 64);
  auto x = kb.buffer("x", Type::I32, Access::Read);
  auto y = kb.buffer("y", Type::I32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    Val v = x[i];
    kb.if_else(v > 0, [&] { y[i] = v * 2; },
               [&] {
                 kb.if_else(v == -1, [&] { y[i] = 7; }, [&] { y[i] = -v; });
               });
  });
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(OpSelectionMerge %\w+ None)"), 3) << text;
  EXPECT_EQ(count_lines(text, R"(OpBranchConditional)"), 3) << text;
  EXPECT_TRUE(has_line(text, R"(OpSGreaterThan %bool)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpSNegate %int)")) << text;
}

TEST(SpirvControlFlow, NestedLoopsSignedAndUnsigned) {
  KernelBuilder kb("loops", 64);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto rows = kb.scalar("rows", Type::U32);
  auto acc = kb.var("acc", kb.f32(0));
  kb.for_(kb.u32(0), rows, [&](Val r) {
    kb.for_(kb.i32(-4), kb.i32(4), kb.i32(2), [&](Val c) {
      kb.if_(c != 0, [&] { acc += a[r] * cast(c, Type::F32); });
    });
  });
  out[kb.global_id()] = acc;
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(OpLoopMerge %\w+ %\w+ None)"), 2) << text;
  EXPECT_EQ(count_lines(text, R"(OpULessThan %bool)"), 1) << "outer loop over u32\n" << text;
  EXPECT_EQ(count_lines(text, R"(OpSLessThan %bool)"), 1) << "inner loop over i32\n" << text;
  EXPECT_TRUE(has_line(text, R"(OpIAdd %int %\w+ %int_2)")) << "inner step\n" << text;
  EXPECT_TRUE(has_line(text, R"(OpIAdd %uint %\w+ %uint_1)")) << "outer step\n" << text;
  EXPECT_TRUE(has_line(text, R"(%acc = OpVariable %_ptr_Function_float Function)")) << text;
}

TEST(SpirvControlFlow, LoopWithNothingInside) {
  KernelBuilder kb("empty_loop", 1);
  auto out = kb.buffer("out", Type::U32, Access::Write);
  kb.for_(kb.u32(0), kb.u32(3), [&](Val) {});
  kb.if_else(kb.boolean(true), [] {}, [] {});
  out[0] = 1u;
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(OpLoopMerge)"), 1) << text;
}

// A kernel with a buffer it both reads and writes (here through atomics) is the one whose invocations may see each
// other's buffer writes: its barriers order storage buffers too (UniformMemory). The others' barriers order only
// workgroup memory, which spares NVIDIA's compiler a full memory fence at each one (emit_kernel.cpp).
TEST(SpirvSharedMemory, BarriersOrderBuffersOnlyWhereAKernelReadsAndWritesOne) {
  auto build = [](Access counter_access, bool declared_private = false) {
    KernelBuilder kb("count", 64);
    if (declared_private) kb.barriers_order_workgroup_memory_only();
    auto counts = kb.buffer("counts", Type::U32, counter_access);
    auto out = kb.buffer("out", Type::U32, Access::Write);
    auto tile = kb.shared("tile", Type::U32, 64);
    auto lid = kb.local_id();
    if (counter_access == Access::ReadWrite) {
      tile[lid] = counts.atomic_add(kb.u32(0), kb.u32(1));
    } else {
      tile[lid] = lid;
    }
    kb.barrier();
    out[lid] = tile[(lid + 1u) % 64u];
    return compile_to_text(kb.finish());
  };
  const std::string with_atomics = build(Access::ReadWrite), plain = build(Access::Read);
  EXPECT_EQ(count_lines(with_atomics, R"(OpControlBarrier %uint_2 %uint_2 %uint_328$)"), 1)
      << "AcquireRelease|UniformMemory|WorkgroupMemory\n" << with_atomics;
  EXPECT_EQ(count_lines(plain, R"(OpControlBarrier %uint_2 %uint_2 %uint_264$)"), 1)
      << "AcquireRelease|WorkgroupMemory\n" << plain;
  // Its author may declare that no invocation reads another's buffer writes (the decode attention's cache rows).
  const std::string declared = build(Access::ReadWrite, true);
  EXPECT_EQ(count_lines(declared, R"(OpControlBarrier %uint_2 %uint_2 %uint_264$)"), 1)
      << "AcquireRelease|WorkgroupMemory\n" << declared;
}

TEST(SpirvSharedMemory, TreeReductionWithBarriers) {
  KernelBuilder kb("reduce", 256);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto partial = kb.buffer("partial", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto tile = kb.shared("tile", Type::F32, 256);
  auto lid = kb.local_id();
  auto gid = kb.global_id();
  tile[lid] = select(gid < n, Val(x[select(gid < n, gid, kb.u32(0))]), kb.f32(0));
  kb.barrier();
  auto stride = kb.var("stride", kb.u32(128));
  kb.for_(kb.u32(0), kb.u32(8), [&](Val) {
    kb.if_(lid < stride.get(), [&] { tile[lid] = tile[lid] + tile[lid + stride.get()]; });
    kb.barrier();
    stride = stride.get() >> 1u;
  });
  kb.if_(lid == 0u, [&] { partial[kb.group_id()] = tile[0]; });
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(OpControlBarrier %uint_2 %uint_2 %uint_264$)"), 2)
      << "Workgroup scopes, AcquireRelease|WorkgroupMemory (no buffer is both read and written)\n" << text;
  EXPECT_TRUE(has_line(text, R"(%tile = OpVariable %_ptr_Workgroup__arr_float_uint_256 Workgroup)")) << text;
  EXPECT_TRUE(has_line(text, R"(OpAccessChain %_ptr_Workgroup_float %tile)")) << text;
  EXPECT_FALSE(has_line(text, R"(OpDecorate %_arr_float_uint_256 ArrayStride)")) << "no layout in Workgroup\n"
                                                                                  << text;
  EXPECT_TRUE(has_line(text, R"(OpShiftRightLogical %uint)")) << text;
}

TEST(SpirvSharedMemory, SeveralArraysOfSeveralTypes) {
  KernelBuilder kb("tiles", {16, 16, 1});
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto a = kb.shared("a", Type::F32, 256);
  auto b = kb.shared("b", Type::I32, 17);
  auto c = kb.shared("c", Type::U32, 1);
  auto lx = kb.builtin(Builtin::LocalIdX), ly = kb.builtin(Builtin::LocalIdY);
  a[ly * 16u + lx] = cast(lx, Type::F32);
  b[lx] = cast(ly, Type::I32);
  kb.if_(kb.local_id() == 0u, [&] { c[0] = 5u; });
  kb.barrier();
  out[kb.global_id()] = a[lx * 16u + ly] + cast(Val(b[ly]), Type::F32) + cast(Val(c[0]), Type::F32);
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(= OpVariable %_ptr_Workgroup_\w+ Workgroup)"), 3) << text;
  EXPECT_TRUE(has_line(text, R"(OpTypeArray %int %uint_17)")) << text;
}

// Workgroup arrays stay arrays of scalars, vector loads of them included (element stores into arrays of vectors
// compile badly on NVIDIA's Vulkan driver): a vector load is 4 element loads of consecutive indices.
TEST(SpirvSharedMemory, VectorLoadsOfWorkgroupArraysLoadEachElement) {
  KernelBuilder kb("vec", 64);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto tile = kb.shared("tile", Type::F32, 256);
  auto lid = kb.local_id();
  tile[lid] = cast(lid, Type::F32);
  kb.barrier();
  std::vector<Val> v = tile.load_vector(lid * 4u, 4);
  out[lid] = v[0] + v[1] + v[2] + v[3];
  std::string text = compile_to_text(kb.finish());
  EXPECT_TRUE(has_line(text, R"(OpTypeArray %float %uint_256)")) << text;
  EXPECT_FALSE(has_line(text, R"(v4float)")) << text;
  EXPECT_EQ(count_lines(text, R"(= OpLoad %float )"), 4) << text;
  EXPECT_EQ(count_lines(text, R"(= OpIAdd %uint %\w+ %uint_[123]$)"), 3) << text;
}

// A buffer's vector loads go through a second declaration of its binding as an array of vec4 (one OpLoad of a vector).
// A buffer the kernel also writes (decode attention's caches) has the view too, and both its declarations are
// decorated Aliased, so the driver keeps an invocation's stores and its later loads through the view in order; a
// read-only buffer's declarations are not.
TEST(SpirvBuffers, VectorLoadsReadVectorsAndAWrittenBuffersViewsAreAliased) {
  KernelBuilder kb("vec", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  std::vector<Val> v = x.load_vector(kb.global_id() * 4u, 4);
  std::vector<Val> w = y.load_vector(kb.global_id() * 4u, 4);
  y[kb.global_id()] = v[0] - v[1] + v[2] * v[3] + w[0] + w[3];
  std::string text = compile_to_text(kb.finish());
  EXPECT_EQ(count_lines(text, R"(= OpLoad %v4float )"), 2) << text;
  EXPECT_EQ(count_lines(text, R"(= OpLoad %float )"), 0) << text;
  EXPECT_EQ(count_lines(text, R"(OpDecorate %x(_vectors)? Binding 0$)"), 2) << text;
  EXPECT_EQ(count_lines(text, R"(OpDecorate %y(_vectors)? Binding 1$)"), 2) << text;
  EXPECT_EQ(count_lines(text, R"(OpDecorate %y(_vectors)? Aliased$)"), 2) << text;
  EXPECT_EQ(count_lines(text, R"(OpDecorate %x(_vectors)? Aliased$)"), 0) << text;
  EXPECT_TRUE(has_line(text, R"(OpDecorate %_runtimearr_v4float ArrayStride 16$)")) << text;
}

// Widened 16-bit loads read 32-bit words through a words view (uvec2 for 4 lanes): bf16 halves by a shift and a mask,
// f16 pairs by UnpackHalf2x16; 16-bit loads that are not widened stay element by element.
TEST(SpirvBuffers, WidenedHalfLoadsReadWords) {
  for (Type t : {Type::BF16, Type::F16}) {
    KernelBuilder kb("widened", 64);
    auto x = kb.buffer("x", t, Access::Read);
    auto y = kb.buffer("y", Type::F32, Access::Write);
    std::vector<Val> v = x.load_vector_widened(kb.global_id() * 4u, 4);
    y[kb.global_id()] = v[0] - v[1] + v[2] * v[3];
    std::string text = compile_to_text(kb.finish());
    EXPECT_EQ(count_lines(text, R"(= OpLoad %v2uint )"), 1) << text;
    EXPECT_TRUE(has_line(text, R"(OpDecorate %x_words Binding 0$)")) << text;
    if (t == Type::BF16) {
      EXPECT_EQ(count_lines(text, R"(= OpShiftLeftLogical %uint \S+ %uint_16$)"), 2) << text;
      EXPECT_EQ(count_lines(text, R"(= OpBitwiseAnd %uint \S+ %uint_4294901760$)"), 2) << text;
    } else {
      EXPECT_EQ(count_lines(text, R"(UnpackHalf2x16)"), 2) << text;
    }
  }
}

TEST(SpirvInterface, EmptyKernel) {
  KernelBuilder kb("nothing", 1);
  std::string text = compile_to_text(kb.finish());
  EXPECT_TRUE(has_line(text, R"(OpEntryPoint GLCompute %nothing "main"$)")) << text;
  EXPECT_FALSE(has_line(text, "OpVariable")) << text;
}

TEST(SpirvInterface, OutputIsDeterministic) {
  // runtime/vulkan caches pipelines by the words: the same kernel must give the same module.
  EXPECT_EQ(compile(relu()), compile(relu()));
}

}  // namespace
}  // namespace spire::spirv
