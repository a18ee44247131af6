// Cooperative matrices (kir::MatrixFragment) as PTX wmma fragments of shape m16n16k16.
//
// wmma's fragment layout is opaque, like Vulkan's cooperative matrices, which is why kir exposes nothing but
// fill, load, multiply-add and store. Registers per fragment (PTX ISA, "Matrix Fragments for WMMA"): a bf16
// A or B operand is 4 .b32 registers (two elements each), an f16 one 8, an f32 accumulator 8 .f32 registers.
// Loads and stores go through shared memory only, row- or column-major as the fragment says, with the kernel's
// stride; the multiply names the A and B fragments' layouts to match. bf16 fragments need sm_80.
//
// f32 operand fragments are TF32 (the tf32 precision policy): wmma has no m16n16k16 shape for tf32, so a 16x16x16
// fragment is two m16n16k8 halves along k, 4 .b32 registers each (k 0..7, then 8..15), loaded by two wmma.load
// .m16n16k8 at their offsets and multiplied by two wmma.mma .m16n16k8.f32.tf32.tf32.f32 into the same accumulator.
// Each loaded element is rounded to TF32 to nearest (cvt.rna.tf32.f32, as cuBLAS and cuDNN do): the tensor cores
// would otherwise ignore its low 13 mantissa bits (truncation). Such a kernel's accumulators are stored with the
// m16n16k8 shape too (the shape their layout belongs to), so a kernel multiplies TF32 or 16-bit operands, not both.
// Also here:
// kir's CopyToShared as cp.async (sm_80), which feeds the fragments' shared tiles without passing through
// registers.
#include "backends/ptx/ptx_translator.h"

#include <fmt/format.h>

namespace spire::ptx {

using kir::MatrixUse;
using kir::Type;

namespace {

std::string_view operand_letter(MatrixUse u) { return u == MatrixUse::A ? "a" : u == MatrixUse::B ? "b" : "c"; }
std::string_view wmma_type(Type t) { return t == Type::BF16 ? "bf16" : t == Type::F16 ? "f16" : "f32"; }
std::string_view layout(const kir::MatrixFragment& f) { return f.column_major ? "col" : "row"; }

}  // namespace

void Translator::declare_fragments() {
  if (k_.fragments.empty()) return;
  if (target_.sm < 80)
    fail(fmt::format("cooperative matrices need sm_80 or newer (wmma on bf16), and the target is sm_{}", target_.sm));
  for (const kir::MatrixFragment& f : k_.fragments) {
    if (f.use == MatrixUse::WarpgroupAccumulator) {  // columns / 2 f32 registers per invocation (kernel.h's layout)
      std::vector<std::string> regs;
      for (uint32_t i = 0; i < f.columns / 2; ++i) regs.push_back(w_.reg(RegClass::F32));
      fragments_.push_back(std::move(regs));
      if (accumulate_.empty()) {
        accumulate_ = w_.reg(RegClass::Pred);
        w_.ins(fmt::format("setp.ne.u32 {}, 1, 0;", accumulate_));
      }
      continue;
    }
    const bool acc = f.use == MatrixUse::Accumulator;
    if (!acc) {
      const bool tf32 = f.elem == Type::F32;
      if (operands_seen_ && tf32 != tf32_)
        fail(fmt::format("fragment {}: a kernel's operand fragments are all f32 (TF32) or all 16-bit", f.name));
      tf32_ = tf32;
      operands_seen_ = true;
    }
    // f16 operands: 8 registers; bf16: 4; f32 (TF32): two k halves of 4.
    const int count = acc || f.elem == Type::F16 || f.elem == Type::F32 ? 8 : 4;
    std::vector<std::string> regs;
    for (int i = 0; i < count; ++i) regs.push_back(w_.reg(acc ? RegClass::F32 : RegClass::B32));
    fragments_.push_back(std::move(regs));
  }
}

std::string Translator::fragment_list(uint32_t fragment) const {
  std::string out = "{";
  for (const std::string& r : fragments_[fragment]) out += (out.size() > 1 ? ", " : "") + r;
  return out + "}";
}

void Translator::stmt(const kir::MatrixFill& s) {
  for (const std::string& r : fragments_[s.fragment]) w_.ins(fmt::format("mov.f32 {}, {};", r, val(s.value)));
}

// The registers of one k half (0: k 0..7, 1: k 8..15) of a TF32 operand fragment, as a {...} list.
std::string Translator::tf32_half(uint32_t fragment, int half) const {
  const std::vector<std::string>& r = fragments_[fragment];
  return fmt::format("{{{}, {}, {}, {}}}", r[4 * half], r[4 * half + 1], r[4 * half + 2], r[4 * half + 3]);
}

void Translator::stmt(const kir::MatrixLoad& s) {
  const kir::MatrixFragment& f = k_.fragments[s.fragment];
  const std::string at = shared_address(s.array, s.index);
  if (f.use == MatrixUse::Accumulator || f.elem != Type::F32) {
    // (An accumulator of a TF32 kernel in the m16n16k8 shape its multiplies give it, as MatrixStore.)
    w_.ins(fmt::format("wmma.load.{}.sync.aligned.{}.{}.shared.{} {}, [{}], {};", operand_letter(f.use), layout(f),
                       tf32_ ? "m16n16k8" : "m16n16k16", wmma_type(f.elem), fragment_list(s.fragment), at, s.stride));
    return;
  }
  // TF32: the k 8..15 half starts 8 elements along k, which runs along a row of A (row-major) and down the columns
  // of B (row-major); column-major the other way round.
  const bool k_along_row = (f.use == MatrixUse::A) != f.column_major;
  const uint32_t half_bytes = (k_along_row ? 8 : 8 * s.stride) * 4;
  const std::string at_hi = w_.reg(RegClass::B32);
  w_.ins(fmt::format("add.u32 {}, {}, {};", at_hi, at, half_bytes));
  for (int half = 0; half < 2; ++half)
    w_.ins(fmt::format("wmma.load.{}.sync.aligned.{}.m16n16k8.shared.tf32 {}, [{}], {};", operand_letter(f.use),
                       layout(f), tf32_half(s.fragment, half), half ? at_hi : at, s.stride));
  for (const std::string& r : fragments_[s.fragment]) w_.ins(fmt::format("cvt.rna.tf32.f32 {}, {};", r, r));
}

void Translator::stmt(const kir::MatrixStore& s) {
  w_.ins(fmt::format("wmma.store.d.sync.aligned.{}.{}.shared.f32 [{}], {}, {};", layout(k_.fragments[s.fragment]),
                     tf32_ ? "m16n16k8" : "m16n16k16", shared_address(s.array, s.index), fragment_list(s.fragment),
                     s.stride));
}

// A bf16 operand fragment is 4 .b32 registers of two elements each: its packed share (kernel.h) is those registers in
// order, one 16-byte access. An f16 fragment is 8 registers holding 16 elements (wmma repeats some): no 8-element
// share.
std::string Translator::packed_share(uint32_t fragment) {
  const kir::MatrixFragment& f = k_.fragments[fragment];
  if (f.elem != Type::BF16)
    fail(fmt::format("packed fragment {} holds {}: only bf16 fragments are packed on PTX", f.name,
                     dtype_name(f.elem)));
  return fragment_list(fragment);
}

void Translator::stmt(const kir::MatrixLoadPacked& s) {
  w_.ins(fmt::format("ld.global{}.v4.b32 {}, [{}];", non_coherent(s.buffer) ? ".nc" : "", packed_share(s.fragment),
                     buffer_operand(s.buffer, s.index)));
}

void Translator::stmt(const kir::MatrixStorePacked& s) {
  w_.ins(fmt::format("st.global.v4.b32 [{}], {};", buffer_operand(s.buffer, s.index), packed_share(s.fragment)));
}

void Translator::stmt(const kir::MatrixMulAdd& s) {
  // f16 operands: the instruction names only the accumulator types (.f32.f32); bf16 names all four.
  const Type t = k_.fragments[s.a].elem;
  if (t == Type::F32) {  // TF32: the two k halves, one after the other into d
    for (int half = 0; half < 2; ++half)
      w_.ins(fmt::format("wmma.mma.sync.aligned.{}.{}.m16n16k8.f32.tf32.tf32.f32 {}, {}, {}, {};",
                         layout(k_.fragments[s.a]), layout(k_.fragments[s.b]), fragment_list(s.d),
                         tf32_half(s.a, half), tf32_half(s.b, half), fragment_list(half ? s.d : s.c)));
    return;
  }
  const std::string types = t == Type::BF16 ? "f32.bf16.bf16.f32" : "f32.f32";
  w_.ins(fmt::format("wmma.mma.sync.aligned.{}.{}.m16n16k16.{} {}, {}, {}, {};", layout(k_.fragments[s.a]),
                     layout(k_.fragments[s.b]), types, fragment_list(s.d), fragment_list(s.a), fragment_list(s.b),
                     fragment_list(s.c)));
}

void Translator::stmt(const kir::CopyToShared& s) {
  if (target_.sm < 80) fail(fmt::format("asynchronous copies need sm_80 or newer, and the target is sm_{}", target_.sm));
  // An invalid copy reads nothing (source size 0 fills the 16 bytes with zeros), so its address may be anything;
  // the buffer's base keeps it harmless all the same.
  auto src = buffer_address(s.buffer, s.src);
  auto from = w_.reg(RegClass::B64), bytes = w_.reg(RegClass::B32);
  w_.ins(fmt::format("selp.b64 {}, {}, {}, {};", from, src, buffers_[s.buffer], val(s.valid)));
  w_.ins(fmt::format("selp.b32 {}, 16, 0, {};", bytes, val(s.valid)));
  w_.ins(fmt::format("cp.async.cg.shared.global [{}], [{}], 16, {};", shared_address(s.array, s.dst), from, bytes));
}

void Translator::stmt(const kir::CopyCommit&) { w_.ins("cp.async.commit_group;"); }

void Translator::stmt(const kir::CopyWait& s) { w_.ins(fmt::format("cp.async.wait_group {};", s.pending)); }

}  // namespace spire::ptx
