// Warpgroup matrices (kir::WarpgroupMulAdd) as Hopper's wgmma.mma_async (sm_90a, PTX ISA 8.0).
//
// A warpgroup of 4 warps multiplies a 64 x 16 A by a 16 x N B straight from shared memory into N / 2 f32
// accumulator registers per thread, asynchronously: the kernel's batches and waits are wgmma.commit_group and
// wgmma.wait_group. Each operand is named by a 64-bit shared-memory descriptor (PTX ISA, "Matrix Descriptor
// Format"): bits 0-13 the start address, 16-29 the leading byte offset (between 8x8 core matrices along K), 32-45
// the stride byte offset (along M or N), all in 16-byte units; swizzle bits 62-63 zero, or 1 for operands that
// 128-byte-swizzled tensor copies laid out (kir's WarpgroupOperand::swizzled). kir's 8x8 blocks are those
// core matrices; a block whose rows run along M or N is PTX's "MN-major" operand, which wgmma transposes as it reads
// (imm-trans-a / imm-trans-b = 1; only 16-bit types may). tools/gpu/wgmma_layout_probe.cu checked these layouts
// and the accumulator layout kir states on an H100.
#include "backends/ptx/ptx_translator.h"

#include <fmt/format.h>

namespace spire::ptx {

namespace {

constexpr uint32_t kDescriptorField = 0x3FFF;  // 14 bits of 16-byte units

}  // namespace

std::string Translator::warpgroup_descriptor(const kir::WarpgroupOperand& o) {
  const uint32_t bytes = dtype_bytes(k_.shared[o.array].elem);
  const uint64_t k_units = uint64_t(o.k_block_stride) * bytes / 16, mn_units = uint64_t(o.mn_block_stride) * bytes / 16;
  // Which stride is "leading" depends on the layout (PTX ISA's canonical layouts, checked on an H100 by
  // tools/gpu/wgmma_layout_probe.cu and tools/gpu/tma_gemm_probe.cu): without swizzling LBO runs along K and SBO along
  // M or N; swizzled, a K-major operand has only SBO (its 8-row groups; LBO unused, 1) and an MN-major one has LBO
  // between its 64-wide groups along M or N and SBO between its 8-row groups along K.
  uint64_t lbo = k_units, sbo = mn_units;
  if (o.swizzled) {
    lbo = o.mn_major ? mn_units : 1;
    sbo = o.mn_major ? k_units : mn_units;
  }
  if (lbo > kDescriptorField || sbo > kDescriptorField)
    fail(fmt::format("warpgroup operand in {}: block strides of {} and {} elements exceed wgmma's 256 KiB",
                     k_.shared[o.array].name, o.k_block_stride, o.mn_block_stride));
  auto addr = shared_address(o.array, o.index);
  auto units = w_.reg(RegClass::B32);
  auto desc = w_.reg(RegClass::B64);
  w_.ins(fmt::format("shr.u32 {}, {}, 4;", units, addr));
  w_.ins(fmt::format("and.b32 {}, {}, {};", units, units, kDescriptorField));
  w_.ins(fmt::format("cvt.u64.u32 {}, {};", desc, units));
  const uint64_t swizzle_128 = o.swizzled ? uint64_t(1) << 62 : 0;  // layout type 1: 128-byte swizzle
  w_.ins(fmt::format("or.b64 {}, {}, {};", desc, desc, lbo << 16 | sbo << 32 | swizzle_128));
  return desc;
}

void Translator::stmt(const kir::WarpgroupMulAdd& s) {
  const kir::MatrixFragment& acc = k_.fragments[s.acc];
  const std::string_view t = k_.shared[s.a.array].elem == kir::Type::BF16 ? "bf16" : "f16";
  auto a = warpgroup_descriptor(s.a), b = warpgroup_descriptor(s.b);
  // scale-d true: D = A B + D; both input scales 1.
  w_.ins(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {}, {}, {}, {}, 1, 1, {}, {};", acc.columns, t, t,
                     fragment_list(s.acc), a, b, accumulate_, s.a.mn_major ? 1 : 0, s.b.mn_major ? 1 : 0));
}

void Translator::stmt(const kir::WarpgroupCommit&) { w_.ins("wgmma.commit_group.sync.aligned;"); }

void Translator::stmt(const kir::WarpgroupWait& s) { w_.ins(fmt::format("wgmma.wait_group.sync.aligned {};", s.pending)); }

}  // namespace spire::ptx
