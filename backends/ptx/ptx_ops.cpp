// Value-defining operations: legalization, then one template per (op, type class).
#include <bit>
#include <optional>

#include <fmt/format.h>

#include "base/half_bits.h"
#include "backends/ptx/ptx_math.h"
#include "backends/ptx/ptx_translator.h"

namespace spire::ptx {

using kir::Op;
using kir::Type;

namespace {

bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

// Ops computed on f16 by widening to f32 and rounding the result back (double rounding through f32 is
// harmless for +, -, *, /, sqrt since f32 carries more than 2*11+2 bits; the rest are approximations anyway).
bool computes_in_f32_for_f16(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max:
    case Op::Pow: case Op::Neg: case Op::Abs: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt:
    case Op::Tanh: case Op::Floor: case Op::Fma:
      return true;
    default: return false;
  }
}

}  // namespace

void Translator::value_op(const kir::Instr& in, const std::string& dst) {
  if (in.op == Op::Const) {
    if (kir::is_int(in.type)) int_constants_[in.result] = in.imm.i;
    return constant(in, dst);
  }
  if ((in.op == Op::Add || in.op == Op::Sub) && (in.type == Type::U32 || in.type == Type::I32)) note_constant_offset(in);
  if ((in.op == Op::Div || in.op == Op::Rem) && kir::is_int(in.type)) {
    // By a constant: ptxas expands a division by a register into the generic reciprocal sequence even when a mov
    // just set that register, so name the divisor as an immediate (ptxas then multiplies by its inverse), and
    // divide an unsigned value by a power of two with a shift or a mask.
    auto c = int_constants_.find(in.operands[1]);
    if (c != int_constants_.end() && c->second > 0) {
      const uint64_t d = uint64_t(c->second);
      const std::string a = val(in.operands[0]), bits(ptx_bits(in.type));
      if (!kir::is_signed_int(in.type) && std::has_single_bit(d)) {
        if (in.op == Op::Div) w_.ins(fmt::format("shr.{} {}, {}, {};", bits, dst, a, std::countr_zero(d)));
        else w_.ins(fmt::format("and.{} {}, {}, {};", bits, dst, a, d - 1));
      } else {
        w_.ins(fmt::format("{}.{} {}, {}, {};", in.op == Op::Div ? "div" : "rem", ptx_type(in.type), dst, a, d));
      }
      return;
    }
  }
  int arity = kir::op_arity(in.op);
  if (is_comparison(in.op)) return compare(in.op, type_of(in.operands[0]), dst, val(in.operands[0]), val(in.operands[1]));
  if (in.op == Op::Convert) return convert(type_of(in.operands[0]), in.type, dst, val(in.operands[0]));
  if (in.type == Type::F16 && computes_in_f32_for_f16(in.op)) return compute_f16(in, dst);
  std::vector<std::string> src;
  for (int i = 0; i < arity; ++i) src.push_back(val(in.operands[i]));
  compute(in.op, in.type, dst, src);
}

void Translator::note_constant_offset(const kir::Instr& in) {
  // Small constants only: the offset in bytes stays far within the immediate's signed 32 bits.
  constexpr int64_t kLargest = 1 << 20;
  auto small = [&](kir::ValueId v) -> std::optional<int64_t> {
    auto c = int_constants_.find(v);
    if (c == int_constants_.end()) return std::nullopt;
    const int64_t value = in.type == Type::I32 ? int64_t(int32_t(uint32_t(c->second))) : int64_t(uint32_t(c->second));
    if (value > kLargest || value < -kLargest) return std::nullopt;
    return value;
  };
  ConstantOffset o;
  if (auto c = small(in.operands[1])) o = {in.operands[0], in.op == Op::Sub ? -*c : *c};
  else if (auto c0 = small(in.operands[0]); c0 && in.op == Op::Add) o = {in.operands[1], *c0};
  else return;
  if (type_of(o.base) != in.type) return;
  if (auto inner = offsets_.find(o.base); inner != offsets_.end()) o = {inner->second.base, inner->second.offset + o.offset};
  if (o.offset > kLargest || o.offset < -kLargest) return;
  offsets_[in.result] = o;
}

void Translator::constant(const kir::Instr& in, const std::string& dst) {
  switch (in.type) {
    case Type::Bool:
      // A predicate from a comparison of constants: ptxas folds it.
      w_.ins(fmt::format("setp.ne.u32 {}, {}, 0;", dst, in.imm.i ? 1 : 0));
      break;
    case Type::I32: case Type::U32:
      w_.ins(fmt::format("mov.b32 {}, 0x{:08X};", dst, uint32_t(in.imm.i)));
      break;
    case Type::I64: w_.ins(fmt::format("mov.b64 {}, 0x{:016X};", dst, uint64_t(in.imm.i))); break;
    case Type::F16: w_.ins(fmt::format("mov.b16 {}, 0x{:04X};", dst, spire::f32_to_f16_bits(float(in.imm.f)))); break;
    case Type::F32: w_.ins(fmt::format("mov.f32 {}, {};", dst, f32_imm(float(in.imm.f)))); break;
    case Type::F64: w_.ins(fmt::format("mov.f64 {}, {};", dst, f64_imm(in.imm.f))); break;
    case Type::BF16: fail("internal: a bf16 constant (the builder makes them from f32)"); break;
  }
}

void Translator::compute_f16(const kir::Instr& in, const std::string& dst) {
  std::vector<std::string> wide;
  for (int i = 0; i < kir::op_arity(in.op); ++i) {
    auto r = w_.reg(RegClass::F32);
    w_.ins(fmt::format("cvt.f32.f16 {}, {};", r, val(in.operands[i])));
    wide.push_back(r);
  }
  auto res = w_.reg(RegClass::F32);
  compute(in.op, Type::F32, res, wide);
  w_.ins(fmt::format("cvt.rn.f16.f32 {}, {};", dst, res));
}

void Translator::compute(Op op, Type t, const std::string& dst, const std::vector<std::string>& s) {
  const bool flt = kir::is_float(t);
  const std::string ty(ptx_type(t));
  const std::string bits(ptx_bits(t));
  auto emit = [&](const std::string& text) { w_.ins(text); };
  auto unsupported = [&]() {
    fail(fmt::format("{} on {} is not supported by the PTX backend", kir::op_name(op), dtype_name(t)));
  };
  // value_op widens f16 arithmetic to f32 first; only selp moves f16 bits directly.
  if (t == Type::F16 && op != Op::Select) unsupported();
  switch (op) {
    // Floats take an explicit .rn: it keeps IEEE rounding and forbids contraction into fma, so results match
    // a CPU that evaluates the same expression.
    case Op::Add: emit(fmt::format("add{}.{} {}, {}, {};", flt ? ".rn" : "", ty, dst, s[0], s[1])); break;
    case Op::Sub: emit(fmt::format("sub{}.{} {}, {}, {};", flt ? ".rn" : "", ty, dst, s[0], s[1])); break;
    case Op::Mul: emit(fmt::format("mul{}.{} {}, {}, {};", flt ? ".rn" : ".lo", ty, dst, s[0], s[1])); break;
    case Op::Div: emit(fmt::format("div{}.{} {}, {}, {};", flt ? ".rn" : "", ty, dst, s[0], s[1])); break;
    case Op::Fma:
      if (!flt) unsupported();
      emit(fmt::format("fma.rn.{} {}, {}, {}, {};", ty, dst, s[0], s[1], s[2]));
      break;
    case Op::Rem:
      if (!flt) {
        emit(fmt::format("rem.{} {}, {}, {};", ty, dst, s[0], s[1]));  // C: truncating, sign of the dividend
      } else if (t == Type::F64) {
        emit_fmod_f64(w_, dst, s[0], s[1]);
      } else {
        auto x = w_.reg(RegClass::F64), y = w_.reg(RegClass::F64), r = w_.reg(RegClass::F64);
        emit(fmt::format("cvt.f64.f32 {}, {};", x, s[0]));
        emit(fmt::format("cvt.f64.f32 {}, {};", y, s[1]));
        emit_fmod_f64(w_, r, x, y);  // exact for f32 inputs while |x/y| < 2^29
        emit(fmt::format("cvt.rn.f32.f64 {}, {};", dst, r));
      }
      break;
    case Op::Min: emit(fmt::format("min.{} {}, {}, {};", ty, dst, s[0], s[1])); break;
    case Op::Max: emit(fmt::format("max.{} {}, {}, {};", ty, dst, s[0], s[1])); break;
    case Op::And: case Op::Or: case Op::Xor: {
      const char* name = op == Op::And ? "and" : op == Op::Or ? "or" : "xor";
      emit(fmt::format("{}.{} {}, {}, {};", name, bits, dst, s[0], s[1]));
      break;
    }
    case Op::Shl: case Op::Shr: {
      // PTX shift amounts are always .u32; a 64-bit amount is narrowed (amounts >= 64 saturate either way).
      std::string amount = s[1];
      if (t == Type::I64) {
        amount = w_.reg(RegClass::B32);
        emit(fmt::format("cvt.u32.u64 {}, {};", amount, s[1]));
      }
      if (op == Op::Shl)
        emit(fmt::format("shl.{} {}, {}, {};", bits, dst, s[0], amount));
      else
        emit(fmt::format("shr.{} {}, {}, {};", ty, dst, s[0], amount));  // arithmetic for s32/s64
      break;
    }
    case Op::Neg: emit(fmt::format("neg.{} {}, {};", ty, dst, s[0])); break;
    case Op::Abs: emit(fmt::format("abs.{} {}, {};", ty, dst, s[0])); break;
    case Op::Not: emit(fmt::format("not.{} {}, {};", bits, dst, s[0])); break;
    case Op::Sqrt: emit(fmt::format("sqrt.rn.{} {}, {};", ty, dst, s[0])); break;
    case Op::Rsqrt: {
      auto root = w_.reg(t);
      emit(fmt::format("sqrt.rn.{} {}, {};", ty, root, s[0]));
      emit(fmt::format("div.rn.{} {}, {}, {};", ty, dst, t == Type::F64 ? f64_imm(1.0) : f32_imm(1.0f), root));
      break;
    }
    case Op::Floor: emit(fmt::format("cvt.rmi.{}.{} {}, {};", ty, ty, dst, s[0])); break;
    case Op::Exp: case Op::Log: case Op::Tanh: case Op::Pow: {
      // f32 and f64 only: f16 was widened to f32 by value_op.
      const bool d = t == Type::F64;
      if (op == Op::Exp) (d ? emit_exp_f64 : emit_exp_f32)(w_, dst, s[0]);
      else if (op == Op::Log) (d ? emit_log_f64 : emit_log_f32)(w_, dst, s[0]);
      else if (op == Op::Tanh) (d ? emit_tanh_f64 : emit_tanh_f32)(w_, dst, s[0]);
      else (d ? emit_pow_f64 : emit_pow_f32)(w_, dst, s[0], s[1]);
      break;
    }
    case Op::Select:
      if (t == Type::Bool) {
        // selp has no .pred form: (c and a) or (not c and b).
        auto x = w_.reg(RegClass::Pred), y = w_.reg(RegClass::Pred), nc = w_.reg(RegClass::Pred);
        emit(fmt::format("and.pred {}, {}, {};", x, s[0], s[1]));
        emit(fmt::format("not.pred {}, {};", nc, s[0]));
        emit(fmt::format("and.pred {}, {}, {};", y, nc, s[2]));
        emit(fmt::format("or.pred {}, {}, {};", dst, x, y));
      } else {
        emit(fmt::format("selp.{} {}, {}, {}, {};", bits, dst, s[1], s[2], s[0]));
      }
      break;
    default: unsupported();
  }
}

void Translator::compare(Op op, Type t, const std::string& dst, const std::string& a, const std::string& b) {
  if (t == Type::Bool) {
    // Only == and != exist on bools (kir::verify): as predicate xor.
    if (op == Op::Ne) {
      w_.ins(fmt::format("xor.pred {}, {}, {};", dst, a, b));
    } else {
      auto x = w_.reg(RegClass::Pred);
      w_.ins(fmt::format("xor.pred {}, {}, {};", x, a, b));
      w_.ins(fmt::format("not.pred {}, {};", dst, x));
    }
    return;
  }
  if (t == Type::F16) {
    auto wa = w_.reg(RegClass::F32), wb = w_.reg(RegClass::F32);
    w_.ins(fmt::format("cvt.f32.f16 {}, {};", wa, a));
    w_.ins(fmt::format("cvt.f32.f16 {}, {};", wb, b));
    return compare(op, Type::F32, dst, wa, wb);  // exact: every f16 is an f32
  }
  const char* cmp = "eq";
  const bool flt = kir::is_float(t), uns = t == Type::U32;
  switch (op) {
    case Op::Eq: cmp = "eq"; break;
    // C's != is true when either side is NaN: the unordered form.
    case Op::Ne: cmp = flt ? "neu" : "ne"; break;
    // Ordered float compares are false on NaN, as in C; unsigned ints use lo/ls/hi/hs.
    case Op::Lt: cmp = uns ? "lo" : "lt"; break;
    case Op::Le: cmp = uns ? "ls" : "le"; break;
    case Op::Gt: cmp = uns ? "hi" : "gt"; break;
    case Op::Ge: cmp = uns ? "hs" : "ge"; break;
    default: fail(fmt::format("internal: {} is not a comparison", kir::op_name(op)));
  }
  w_.ins(fmt::format("setp.{}.{} {}, {}, {};", cmp, ptx_type(t), dst, a, b));
}

void Translator::convert(Type from, Type to, const std::string& dst, const std::string& src) {
  if (from == to) {
    w_.ins(fmt::format("mov.{} {}, {};", ptx_bits(to), dst, src));
    return;
  }
  if (from == Type::BF16 || to == Type::BF16) return convert_bf16(to, dst, src);
  // f16 converts as its own cvt type; registers are .b16.
  auto cvt_type = [](Type t) { return std::string(ptx_type(t)); };
  const bool ff = kir::is_float(from), ft = kir::is_float(to);
  if (!ff && !ft) {
    if (dtype_bytes(from) == dtype_bytes(to)) {  // i32 <-> u32: same bits
      w_.ins(fmt::format("mov.b32 {}, {};", dst, src));
    } else if (dtype_bytes(to) < dtype_bytes(from)) {  // i64 -> 32 bits: keep the low word
      w_.ins(fmt::format("cvt.u32.u64 {}, {};", dst, src));
    } else {  // widen: sign-extend i32, zero-extend u32
      w_.ins(fmt::format("cvt.{}.{} {}, {};", from == Type::I32 ? "s64" : "u64", cvt_type(from), dst, src));
    }
  } else if (!ff && ft) {
    w_.ins(fmt::format("cvt.rn.{}.{} {}, {};", cvt_type(to), cvt_type(from), dst, src));
  } else if (ff && !ft) {
    // Truncation toward zero; out-of-range values saturate and NaN gives 0 (undefined in C).
    w_.ins(fmt::format("cvt.rzi.{}.{} {}, {};", cvt_type(to), cvt_type(from), dst, src));
  } else if (dtype_bytes(to) > dtype_bytes(from)) {
    w_.ins(fmt::format("cvt.{}.{} {}, {};", cvt_type(to), cvt_type(from), dst, src));  // widening is exact
  } else {
    w_.ins(fmt::format("cvt.rn.{}.{} {}, {};", cvt_type(to), cvt_type(from), dst, src));
  }
}

// bf16 <-> f32 on the bits (the verifier allows only f32 on the other side), with integer instructions rather than
// cvt's bf16 forms (sm_80 / sm_90): f32 -> bf16 rounds half to even and keeps a NaN quiet, bit for bit what
// spire::f32_to_bf16_bits and the SPIR-V backend do.
void Translator::convert_bf16(Type to, const std::string& dst, const std::string& src) {
  const std::string wide = w_.reg(RegClass::B32);
  if (to == Type::F32) {
    w_.ins(fmt::format("cvt.u32.u16 {}, {};", wide, src));
    w_.ins(fmt::format("shl.b32 {}, {}, 16;", wide, wide));
    w_.ins(fmt::format("mov.b32 {}, {};", dst, wide));
    return;
  }
  const std::string high = w_.reg(RegClass::B32), bias = w_.reg(RegClass::B32), quiet = w_.reg(RegClass::B32);
  const std::string nan = w_.reg(RegClass::Pred);
  w_.ins(fmt::format("mov.b32 {}, {};", wide, src));
  w_.ins(fmt::format("shr.u32 {}, {}, 16;", high, wide));
  w_.ins(fmt::format("and.b32 {}, {}, 1;", bias, high));
  w_.ins(fmt::format("add.u32 {}, {}, 32767;", bias, bias));
  w_.ins(fmt::format("add.u32 {}, {}, {};", wide, wide, bias));
  w_.ins(fmt::format("shr.u32 {}, {}, 16;", wide, wide));
  w_.ins(fmt::format("or.b32 {}, {}, 64;", quiet, high));
  w_.ins(fmt::format("setp.nan.f32 {}, {}, {};", nan, src, src));
  w_.ins(fmt::format("selp.b32 {}, {}, {}, {};", wide, quiet, wide, nan));
  w_.ins(fmt::format("cvt.u16.u32 {}, {};", dst, wide));
}

}  // namespace spire::ptx
