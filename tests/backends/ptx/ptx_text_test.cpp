// The shape of the emitted PTX: the interface runtime/cuda relies on and the instruction choices that carry
// C/IEEE semantics. These hold whether or not ptxas is installed.
#include <gtest/gtest.h>

#include <functional>
#include <regex>

#include "backends/ptx/ptx_backend.h"
#include "backends/ptx/ptx_shared_layout.h"
#include "ir/kernel/builder.h"
#include "tests/backends/ptx/test_kernels.h"
#include "tests/support/early_read_kernel.h"

namespace spire::ptx::testing {
namespace {

using namespace kir;

bool has(const std::string& ptx, const std::string& what) { return ptx.find(what) != std::string::npos; }
size_t count_of(const std::string& ptx, const std::string& what) {
  size_t n = 0;
  for (size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1)) ++n;
  return n;
}

TEST(PtxVersionTable, LowestIsaPerTarget) {
  EXPECT_EQ(ptx_version_for(75), "6.3");
  EXPECT_EQ(ptx_version_for(80), "7.0");
  EXPECT_EQ(ptx_version_for(86), "7.1");
  EXPECT_EQ(ptx_version_for(87), "7.4");
  EXPECT_EQ(ptx_version_for(89), "7.8");
  EXPECT_EQ(ptx_version_for(90), "7.8");
  EXPECT_EQ(ptx_version_for(100), "8.6");
  EXPECT_EQ(ptx_version_for(120), "8.7");
}

TEST(PtxVersionTable, UnknownCapabilityUsesNewestKnownTargetBelow) {
  EXPECT_EQ(ptx_target_for(85), 80u);
  EXPECT_EQ(ptx_version_for(85), "7.0");
  EXPECT_EQ(ptx_target_for(95), 90u);
  EXPECT_EQ(ptx_target_for(130), 121u);
  std::string ptx = compile(vector_add_kernel(), Target{85});
  EXPECT_TRUE(has(ptx, ".target sm_80\n")) << ptx;
}

TEST(PtxVersionTable, BelowBaselineIsRefusedByName) {
  try {
    ptx_version_for(70);
    FAIL() << "sm_70 accepted";
  } catch (const CompileError& e) {
    EXPECT_TRUE(has(e.what(), "sm_70")) << e.what();
    EXPECT_TRUE(has(e.what(), "sm_75")) << e.what();
  }
}

TEST(PtxText, HeaderEntryAndParameters) {
  KernelBuilder kb("saxpy", {128, 2, 1});
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  auto a = kb.scalar("a", Type::F32);
  auto n = kb.scalar("n", Type::U32);
  auto big = kb.scalar("big", Type::I64);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = a * x[i] + y[i] + cast(big, Type::F32); });
  Kernel k = kb.finish();
  std::string ptx = compile(k, Target{90});
  EXPECT_TRUE(has(ptx, ".version 7.8\n.target sm_90\n.address_size 64\n")) << ptx;
  // Buffers first (one .u64 each), then scalars in declaration order, each with its own type.
  std::regex params(R"(\.visible \.entry saxpy\(\s*\.param \.u64 p_buf0,[^\n]*\n\s*\.param \.u64 p_buf1,[^\n]*\n)"
                    R"(\s*\.param \.f32 p_arg0,[^\n]*\n\s*\.param \.u32 p_arg1,[^\n]*\n\s*\.param \.s64 p_arg2 [^\n]*\n\))");
  EXPECT_TRUE(std::regex_search(ptx, params)) << ptx;
  EXPECT_TRUE(has(ptx, ".reqntid 128, 2, 1\n")) << ptx;
  EXPECT_TRUE(has(ptx, "cvta.to.global.u64")) << ptx;
  // Float arithmetic is explicitly rounded, so ptxas cannot contract a*x+y into an fma.
  EXPECT_TRUE(has(ptx, "mul.rn.f32")) << ptx;
  EXPECT_TRUE(has(ptx, "add.rn.f32")) << ptx;
  EXPECT_FALSE(has(ptx, "fma")) << ptx;
  // Unsigned bound check.
  EXPECT_TRUE(has(ptx, "setp.lo.u32")) << ptx;
}

TEST(PtxText, EntryNameIsSanitized) {
  KernelBuilder kb("fused.add-relu/3", 32);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  o[kb.global_id()] = kb.f32(1.0f);
  Kernel k = kb.finish();
  EXPECT_EQ(entry_name(k), "fused_add_relu_3");
  EXPECT_TRUE(has(compile(k), ".visible .entry fused_add_relu_3(")) << compile(k);
  k.name = "3d";
  EXPECT_EQ(entry_name(k), "_3d");
}

TEST(PtxText, LinearBuiltinsFromFoldedGrid) {
  std::string ptx = compile(builtins_kernel());
  for (const char* sreg : {"%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%tid.x",
                           "%tid.y", "%tid.z"})
    EXPECT_TRUE(has(ptx, sreg)) << sreg << "\n" << ptx;
  EXPECT_TRUE(has(ptx, ".reqntid 8, 4, 2")) << ptx;
  EXPECT_TRUE(has(ptx, "mov.u32 %r")) << ptx;
  // Workgroup size is a constant 8*4*2 = 64.
  EXPECT_TRUE(has(ptx, ", 64, ")) << ptx;
}

TEST(PtxText, SemanticsCarryingInstructions) {
  std::string f32 = compile(arithmetic_kernel(Type::F32));
  EXPECT_TRUE(has(f32, "div.rn.f32")) << f32;
  EXPECT_TRUE(has(f32, "sqrt.rn.f32")) << f32;
  EXPECT_TRUE(has(f32, "setp.neu.f32")) << f32;  // != is true on NaN, as in C
  EXPECT_TRUE(has(f32, "cvt.rmi.f32.f32")) << f32;
  EXPECT_TRUE(has(f32, "ex2.approx.ftz.f32")) << f32;
  EXPECT_FALSE(has(f32, "tanh.approx")) << f32;  // needs PTX 7.0; tanh is computed from exp instead
  EXPECT_FALSE(has(f32, "lg2.approx")) << f32;   // absolute error near 1 is too large for log

  std::string i32 = compile(arithmetic_kernel(Type::I32));
  EXPECT_TRUE(has(i32, "div.s32")) << i32;
  EXPECT_TRUE(has(i32, "rem.s32")) << i32;
  EXPECT_TRUE(has(i32, "shr.s32")) << i32;
  EXPECT_TRUE(has(i32, "setp.lt.s32")) << i32;

  std::string u32 = compile(arithmetic_kernel(Type::U32));
  EXPECT_TRUE(has(u32, "div.u32")) << u32;
  EXPECT_TRUE(has(u32, "rem.u32")) << u32;
  EXPECT_TRUE(has(u32, "shr.u32")) << u32;
  for (const char* c : {"setp.lo.u32", "setp.ls.u32", "setp.hi.u32", "setp.hs.u32"}) EXPECT_TRUE(has(u32, c)) << c;

  std::string f64 = compile(arithmetic_kernel(Type::F64));
  EXPECT_TRUE(has(f64, "div.rn.f64")) << f64;
  EXPECT_TRUE(has(f64, "sqrt.rn.f64")) << f64;
  EXPECT_TRUE(has(f64, "cvt.rmi.f64.f64")) << f64;

  std::string f16 = compile(arithmetic_kernel(Type::F16));
  EXPECT_TRUE(has(f16, "cvt.f32.f16")) << f16;
  EXPECT_TRUE(has(f16, "cvt.rn.f16.f32")) << f16;
  // The inputs are read-only buffers: loaded through the non-coherent path; the output is stored as usual.
  EXPECT_TRUE(has(f16, "ld.global.nc.b16")) << f16;
  EXPECT_TRUE(has(f16, "st.global.b16")) << f16;
}

// A buffer the kernel also writes must not be read through the non-coherent cache: it would miss the kernel's own
// stores.
// From sm_90 on, every kernel waits for the one before to finish before its first read and lets the next one launch
// after its last store (programmatic dependent launch: runtime/cuda launches it early only then); before Hopper neither
// instruction exists.
TEST(PtxText, HopperKernelsWaitForTheKernelBeforeFirst) {
  KernelBuilder kb("copy", 64);
  auto in = kb.buffer("in", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  out[kb.global_id()] = in[kb.global_id()].load();
  const Kernel k = kb.finish();
  const std::string hopper = compile(k, Target{90});
  const size_t wait = hopper.find("griddepcontrol.wait;"), load = hopper.find("ld.global");
  ASSERT_NE(wait, std::string::npos) << hopper;
  EXPECT_LT(wait, load) << hopper;
  EXPECT_GT(hopper.find("griddepcontrol.launch_dependents;"), hopper.find("st.global")) << hopper;
  EXPECT_EQ(count_of(hopper, "griddepcontrol"), 2u) << hopper;
  EXPECT_EQ(count_of(compile(k, Target{80}), "griddepcontrol"), 0u);
}

// A kernel that places its wait (kir::WaitForPriorKernels) reads the buffers marked read_before_wait first and waits
// there, once, not at its start; before Hopper there is still no wait.
TEST(PtxText, APlacedWaitComesAfterTheEarlyReads) {
  const Kernel k = spire::testing::early_read_kernel();
  ASSERT_EQ(verify(k), "");
  const std::string hopper = compile(k, Target{90});
  const size_t first_load = hopper.find("ld.global"), wait = hopper.find("griddepcontrol.wait;");
  ASSERT_NE(wait, std::string::npos) << hopper;
  EXPECT_LT(first_load, wait) << "the weight is read before the wait\n" << hopper;
  EXPECT_NE(hopper.find("ld.global", wait), std::string::npos) << "x is read after it\n" << hopper;
  EXPECT_EQ(count_of(hopper, "griddepcontrol.wait"), 1u) << hopper;
  EXPECT_EQ(count_of(compile(k, Target{80}), "griddepcontrol"), 0u);
}

TEST(PtxText, OnlyReadOnlyBuffersLoadThroughTheNonCoherentPath) {
  KernelBuilder kb("read_write", 64);
  auto in = kb.buffer("in", Type::F32, Access::Read);
  auto inout = kb.buffer("inout", Type::F32, Access::ReadWrite);
  auto i = kb.global_id();
  inout[i] = inout[i].load() + in[i].load();
  std::string text = compile(kb.finish());
  EXPECT_EQ(count_of(text, "ld.global.nc.f32"), 1u) << text;
  EXPECT_EQ(count_of(text, "ld.global.f32"), 1u) << text;
}

// From sm_90 on a kernel may start while the launch before it still writes (programmatic dependent launch), so the
// read-only path, which promises data that does not change while the kernel runs, takes only buffers read before the
// kernel's wait (which the runtime keeps the launch before from writing); every other read is coherent.
TEST(PtxText, OnHopperOnlyBuffersReadBeforeTheWaitTakeTheNonCoherentPath) {
  const Kernel k = spire::testing::early_read_kernel();
  const std::string hopper = compile(k, Target{90}), ampere = compile(k, Target{80});
  EXPECT_EQ(count_of(hopper, "ld.global.nc.f32"), 1u) << hopper;
  EXPECT_EQ(count_of(hopper, "ld.global.f32"), 1u) << hopper;
  EXPECT_EQ(count_of(ampere, "ld.global.nc.f32"), 2u) << ampere;
}

// An index that is another value plus or minus a constant (chains of them too) addresses through the value's address
// and an immediate offset in bytes, so ptxas needs no add per access (kir's index rule, ir/kernel/builder.h).
TEST(PtxText, ConstantTermsOfAnIndexBecomeImmediateOffsets) {
  KernelBuilder kb("offsets", 64);
  auto in = kb.buffer("in", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto wide = kb.buffer("wide", Type::F64, Access::Write);
  Val x = kb.global_id();
  Val s = cast(x, Type::I32);
  out[x + 2u] = in[x + 3u].load() + in[(x + 1u) + 4u].load() + in[s - 1].load() + in[x * 2u].load();
  wide[x - 3u] = kb.constant(Type::F64, 1.0);
  const std::string ptx = compile(kb.finish());
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global\.nc\.f32 %f\d+, \[%rd\d+\+12\];)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global\.nc\.f32 %f\d+, \[%rd\d+\+20\];)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global\.nc\.f32 %f\d+, \[%rd\d+\+-4\];)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(st\.global\.f32 \[%rd\d+\+8\], %f\d+;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(st\.global\.f64 \[%rd\d+\+-24\], %fd\d+;)"))) << ptx;
  EXPECT_EQ(count_of(ptx, "mul.wide.s32"), 1u) << "the i32 value is widened signed";
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global\.nc\.f32 %f\d+, \[%rd\d+\];)"))) << "x * 2: no offset";
}

TEST(PtxText, ConversionsRoundAsC) {
  std::string from_f32 = compile(conversion_kernel(Type::F32));
  EXPECT_TRUE(has(from_f32, "cvt.rzi.s32.f32")) << from_f32;
  EXPECT_TRUE(has(from_f32, "cvt.rzi.u32.f32")) << from_f32;
  EXPECT_TRUE(has(from_f32, "cvt.rzi.s64.f32")) << from_f32;
  EXPECT_TRUE(has(from_f32, "cvt.rn.f16.f32")) << from_f32;
  EXPECT_TRUE(has(from_f32, "cvt.f64.f32")) << from_f32;
  std::string from_i32 = compile(conversion_kernel(Type::I32));
  EXPECT_TRUE(has(from_i32, "cvt.rn.f32.s32")) << from_i32;
  EXPECT_TRUE(has(from_i32, "cvt.s64.s32")) << from_i32;  // sign extension
  std::string from_u32 = compile(conversion_kernel(Type::U32));
  EXPECT_TRUE(has(from_u32, "cvt.u64.u32")) << from_u32;  // zero extension
  std::string from_f64 = compile(conversion_kernel(Type::F64));
  EXPECT_TRUE(has(from_f64, "cvt.rn.f32.f64")) << from_f64;
}

TEST(PtxText, SharedMemoryBarrierAndAtomics) {
  std::string red = compile(shared_reduce_kernel());
  EXPECT_TRUE(has(red, ".shared .align 32 .b8 s_shared0[512];")) << red;
  EXPECT_TRUE(has(red, ".shared .align 32 .b8 s_shared1[16];")) << red;
  EXPECT_TRUE(has(red, "bar.sync 0;")) << red;
  EXPECT_TRUE(has(red, "ld.shared.f32")) << red;
  EXPECT_TRUE(has(red, "st.shared.f32")) << red;
  std::string at = compile(atomics_kernel());
  for (const char* a : {"atom.global.add.s32", "atom.global.add.u32", "atom.global.add.f32"})
    EXPECT_TRUE(has(at, a)) << a << "\n" << at;
}

// Past 48 KiB the arrays move into one dynamic array, each at its 32-byte aligned offset, with no static arrays
// left; the runtime passes the size at launch (ptx_shared_layout.h). More than the target can give is refused.
Kernel big_shared_kernel(uint32_t first_count) {
  KernelBuilder kb("big_shared", 64);
  auto a = kb.shared("a", Type::F32, first_count);
  auto b = kb.shared("b", Type::F32, 4096);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  a[kb.local_id()] = kb.f32(1);
  b[kb.local_id()] = kb.f32(2);
  kb.barrier();
  out[kb.local_id()] = a[kb.local_id()] + b[kb.local_id()];
  return kb.finish();
}

TEST(PtxText, SharedMemoryPast48KiBIsDynamic) {
  const std::string small = compile(big_shared_kernel(8000), Target{90});  // 48,384 bytes in all
  EXPECT_TRUE(has(small, ".shared .align 32 .b8 s_shared0[32000];")) << small;
  EXPECT_FALSE(has(small, ".extern")) << small;
  EXPECT_EQ(shared_layout(big_shared_kernel(8000)).dynamic_bytes(), 0u);

  const Kernel k = big_shared_kernel(10001);  // 40,004 bytes, then b at 40,032
  const std::string ptx = compile(k, Target{90});
  EXPECT_TRUE(has(ptx, ".extern .shared .align 32 .b8 s_dynamic[];")) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(mov.u32 (%r\d+), s_dynamic;\n  add.u32 \1, \1, 40032;)"))) << ptx;
  EXPECT_FALSE(has(ptx, "s_shared")) << ptx;
  const SharedLayout layout = shared_layout(k);
  EXPECT_TRUE(layout.dynamic);
  EXPECT_EQ(layout.offsets, (std::vector<uint32_t>{0, 40032}));
  EXPECT_EQ(layout.dynamic_bytes(), 40032u + 4096 * 4);

  try {
    compile(big_shared_kernel(20000), Target{75});  // 96,000 bytes; sm_75 gives 64 KiB
    ADD_FAILURE() << "sm_75 accepted 96 KiB of shared memory";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the 65536 a block may have on sm_75"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(compile(big_shared_kernel(20000), Target{80}));
}

// An unsigned division by a power-of-two constant is a shift and its remainder a mask; other constant divisors
// are immediates (ptxas multiplies by their inverse only when it sees the divisor as one).
TEST(PtxText, DivisionByConstants) {
  KernelBuilder kb("div_const", 64);
  auto o = kb.buffer("o", Type::U32, Access::Write);
  auto so = kb.buffer("so", Type::I32, Access::Write);
  Val x = kb.global_id();
  o[x] = x / 16u + x % 16u + x / 40u + x % 136u;
  Val sx = cast(x, Type::I32) - 100;
  so[x] = sx / 4 + sx % 4;
  const std::string ptx = compile(kb.finish());
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(shr\.b32 %r\d+, %r\d+, 4;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(and\.b32 %r\d+, %r\d+, 15;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(div\.u32 %r\d+, %r\d+, 40;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(rem\.u32 %r\d+, %r\d+, 136;)"))) << ptx;
  // Signed: truncating division is not a shift.
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(div\.s32 %r\d+, %r\d+, 4;)"))) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(rem\.s32 %r\d+, %r\d+, 4;)"))) << ptx;
}

TEST(PtxText, LoopComparesBySignedness) {
  EXPECT_TRUE(has(compile(loops_kernel(Type::I32)), "setp.ge.s32"));
  EXPECT_TRUE(has(compile(loops_kernel(Type::U32)), "setp.hs.u32"));
  EXPECT_TRUE(has(compile(loops_kernel(Type::I64)), "setp.ge.s64"));
}

TEST(PtxText, ConstantsAreExactBits) {
  KernelBuilder kb("consts", 32);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  auto d = kb.buffer("d", Type::F64, Access::Write);
  auto l = kb.buffer("l", Type::I64, Access::Write);
  auto h = kb.buffer("h", Type::F16, Access::Write);
  auto i = kb.global_id();
  o[i] = kb.f32(0.1f);
  d[i] = kb.f64(0.1);
  l[i] = kb.i64(-2);
  h[i] = kb.constant(Type::F16, 1.0);
  std::string ptx = compile(kb.finish());
  EXPECT_TRUE(has(ptx, "0f3DCCCCCD")) << ptx;
  EXPECT_TRUE(has(ptx, "0d3FB999999999999A")) << ptx;
  EXPECT_TRUE(has(ptx, "0xFFFFFFFFFFFFFFFE")) << ptx;
  EXPECT_TRUE(has(ptx, "0x3C00")) << ptx;
}

TEST(PtxText, SameKernelGivesSameText) {
  // runtime/cuda caches modules by PTX text: compilation must be deterministic.
  EXPECT_EQ(compile(shared_reduce_kernel(), Target{80}), compile(shared_reduce_kernel(), Target{80}));
}

TEST(PtxText, AnOccupancyRequestCapsRegistersThroughMinnctapersm) {
  KernelBuilder kb("occupancy", 256);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  out[kb.global_id()] = kb.f32(1);
  Kernel k = kb.finish();
  EXPECT_FALSE(has(compile(k, Target{90}), ".minnctapersm")) << "no request, no directive";
  k.min_workgroups_per_core = 2;
  EXPECT_TRUE(has(compile(k, Target{90}), ".reqntid 256, 1, 1\n.minnctapersm 2\n{")) << compile(k, Target{90});
}

// A kernel with a tensor copy: the map is a 128-byte parameter named by its generic address, every shared array starts
// on 1024 bytes and the arrival barriers follow them in the one dynamic array (even when small), one thread
// initializes the barriers before a workgroup barrier, and sm_80 refuses it by the feature's purpose.
Kernel tensor_copy_kernel() {
  KernelBuilder kb("tma", 128);
  auto src = kb.buffer("src", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto pad = kb.shared("pad", Type::F32, 3);
  auto tile = kb.shared("tile", Type::F32, 32 * 8);
  const uint32_t map = kb.tensor_map("src_map", src, {64, 16}, {64}, {32, 8}, /*swizzle_128=*/true);
  const uint32_t ready = kb.arrival_barriers("ready", 2, 1);
  Val lid = kb.local_id();
  pad[lid % 3] = kb.f32(0);
  kb.if_(lid == 0u, [&] {
    kb.arrive(ready, kb.u32(1), 32 * 8 * 4);
    kb.tensor_copy(tile, kb.u32(0), map, {kb.u32(32), kb.u32(8)}, ready, kb.u32(1));
  });
  kb.await_phase(ready, kb.u32(1), kb.u32(0));
  out[lid] = tile[lid];
  return kb.finish();
}

TEST(PtxText, TensorCopiesUseMapParametersAlignedArraysAndInitializedBarriers) {
  const Kernel k = tensor_copy_kernel();
  const SharedLayout layout = shared_layout(k);
  EXPECT_TRUE(layout.dynamic);
  EXPECT_EQ(layout.offsets, (std::vector<uint32_t>{0, 1024}));
  EXPECT_EQ(layout.barrier_offsets, (std::vector<uint32_t>{1024 + 1024}));
  EXPECT_EQ(layout.dynamic_bytes(), 2048u + 16);
  const std::string ptx = compile(k, Target{90});
  EXPECT_TRUE(has(ptx, ".extern .shared .align 1024 .b8 s_dynamic[];")) << ptx;
  EXPECT_TRUE(has(ptx, ".param .align 64 .b8 p_map0[128]")) << ptx;
  EXPECT_TRUE(has(ptx, "cvta.param.u64")) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(mbarrier.init.shared::cta.b64 \[%r\d+\], 1;[^]*mbarrier.init.shared::cta.b64 \[%r\d+\], 1;\n  fence.mbarrier_init.release.cluster;\n\$L\w+:\n  bar.sync 0;)"))) << ptx;
  EXPECT_TRUE(has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes")) << ptx;
  EXPECT_TRUE(has(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [")) << ptx;
  EXPECT_TRUE(has(ptx, "mbarrier.try_wait.parity.shared::cta.b64")) << ptx;
  // sm_90 needs PTX 8.0 for it; a later target keeps its own, newer minimum.
  EXPECT_TRUE(has(ptx, ".version 8.0\n.target sm_90\n")) << ptx;
  EXPECT_TRUE(has(compile(k, Target{100}), ".version 8.6\n.target sm_100\n"));
  try {
    compile(k, Target{80});
    ADD_FAILURE() << "sm_80 accepted a tensor copy";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor copies need sm_90"), std::string::npos) << e.what();
  }
}

TEST(PtxText, MalformedTensorMapsAreRefusedByTheVerifier) {
  auto refused = [](const std::function<void(Kernel&)>& damage, const char* words) {
    Kernel k = tensor_copy_kernel();
    damage(k);
    const std::string problem = verify(k);
    EXPECT_NE(problem.find(words), std::string::npos) << problem;
  };
  refused([](Kernel& k) { k.tensor_maps[0].box[1] = 300; }, "box dimension 300");
  refused([](Kernel& k) { k.tensor_maps[0].box[0] = 16; }, "128-byte swizzle needs box rows of 128 bytes");
  refused([](Kernel& k) { k.tensor_maps[0].strides[0] = 6; }, "not a nonzero multiple of 16 bytes");
  refused([](Kernel& k) { k.tensor_maps[0].buffer = 7; }, "reads a buffer that does not exist");
  refused([](Kernel& k) { k.arrival_barriers[0].arrivals = 129; }, "awaiting 129 of the workgroup's 128");
  refused([](Kernel& k) { k.features.bits &= ~uint32_t(Feature::TensorCopy); }, "tensor-copy");
}

}  // namespace
}  // namespace spire::ptx::testing

