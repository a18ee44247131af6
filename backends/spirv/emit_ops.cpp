// One kir::Op -> SPIR-V, choosing the signed, unsigned, float or bool variant by the operand type.
#include <fmt/format.h>

#include <stdexcept>

#include "backends/spirv/constant_bits.h"
#include "backends/spirv/kernel_emitter.h"

namespace spire::spirv {

using kir::Op;
using kir::Type;

Id KernelEmitter::instr(const kir::Instr& in) {
  switch (in.op) {
    case Op::Const: return constant(in);
    case Op::ReadBuiltin: return builtin_value(kir::Builtin(in.index));
    case Op::ReadScalar: return scalar_value(in.index);
    case Op::LoadVar: return op(SpvOpLoad, type(in.type), {local_vars_.at(in.index)});
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max:
    case Op::Pow: case Op::And: case Op::Or: case Op::Xor: case Op::Shl: case Op::Shr:
      return arithmetic(in);
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return comparison(in);
    case Op::Neg: case Op::Not: case Op::Abs: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt:
    case Op::Tanh: case Op::Floor:
      return unary(in);
    case Op::Select:
      return op(SpvOpSelect, type(in.type), {value(in.operands[0]), value(in.operands[1]), value(in.operands[2])});
    case Op::Fma:
      return ext(GLSLstd450Fma, type(in.type), {value(in.operands[0]), value(in.operands[1]), value(in.operands[2])});
    case Op::Convert: return convert(value(in.operands[0]), k_.value_types[in.operands[0]], in.type);
    case Op::LoadBuffer: return load_buffer(in.index, type(in.type), buffer_element(in.index, in.operands[0]));
    case Op::LoadShared:
      if (shared_vectors_.at(in.index)) return load_from_vectors(in.index, as_u32(in.operands[0]));
      return load_memory(type(in.type), shared_element(in.index, in.operands[0]));
    case Op::AtomicAdd: return atomic_add(in);
    case Op::ShuffleXor:
      return op(SpvOpGroupNonUniformShuffleXor, type(in.type),
                {m_.constant_u32(SpvScopeSubgroup), value(in.operands[0]), value(in.operands[1])});
    case Op::EpilogueTap: return op(SpvOpCopyObject, type(in.type), {value(in.operands[1])});  // no epilogue folded in
    case Op::MatrixElement: break;  // warpgroup matrices are refused before emission (compile.cpp)
  }
  throw std::logic_error(fmt::format("SPIR-V backend: unhandled op {}", kir::op_name(in.op)));
}

Id KernelEmitter::constant(const kir::Instr& in) {
  if (in.type == Type::Bool) return m_.constant_bool(in.imm.i != 0);
  if (kir::is_float(in.type)) return float_constant(in.type, in.imm.f);
  return int_constant(in.type, in.imm.i);
}

Id KernelEmitter::arithmetic(const kir::Instr& in) {
  Type t = in.type;
  Id rt = type(t);
  Id a = value(in.operands[0]), b = value(in.operands[1]);
  bool f = kir::is_float(t), s = kir::is_signed_int(t);
  switch (in.op) {
    case Op::Add: return op(f ? SpvOpFAdd : SpvOpIAdd, rt, {a, b});
    case Op::Sub: return op(f ? SpvOpFSub : SpvOpISub, rt, {a, b});
    case Op::Mul: return op(f ? SpvOpFMul : SpvOpIMul, rt, {a, b});
    case Op::Div: return op(f ? SpvOpFDiv : s ? SpvOpSDiv : SpvOpUDiv, rt, {a, b});
    case Op::Rem:
      // FRem takes the sign of the dividend, like C's fmod. OpSRem would too, but Vulkan leaves it
      // undefined for negative operands, hence signed_remainder().
      if (f) return op(SpvOpFRem, rt, {a, b});
      return s ? signed_remainder(t, a, b) : op(SpvOpUMod, rt, {a, b});
    case Op::Min: return ext(f ? GLSLstd450FMin : s ? GLSLstd450SMin : GLSLstd450UMin, rt, {a, b});
    case Op::Max: return ext(f ? GLSLstd450FMax : s ? GLSLstd450SMax : GLSLstd450UMax, rt, {a, b});
    case Op::Pow: return pow_c(t, a, b);
    case Op::And: return op(t == Type::Bool ? SpvOpLogicalAnd : SpvOpBitwiseAnd, rt, {a, b});
    case Op::Or: return op(t == Type::Bool ? SpvOpLogicalOr : SpvOpBitwiseOr, rt, {a, b});
    case Op::Xor: return op(t == Type::Bool ? SpvOpLogicalNotEqual : SpvOpBitwiseXor, rt, {a, b});
    case Op::Shl: return op(SpvOpShiftLeftLogical, rt, {a, b});
    case Op::Shr: return op(s ? SpvOpShiftRightArithmetic : SpvOpShiftRightLogical, rt, {a, b});
    default: break;
  }
  throw std::logic_error(fmt::format("SPIR-V backend: {} is not a binary op", kir::op_name(in.op)));
}

Id KernelEmitter::comparison(const kir::Instr& in) {
  Type t = k_.value_types[in.operands[0]];
  Id a = value(in.operands[0]), b = value(in.operands[1]);
  SpvOp code = SpvOpNop;
  if (t == Type::Bool) {
    code = in.op == Op::Eq ? SpvOpLogicalEqual : SpvOpLogicalNotEqual;  // the verifier allows only these
  } else if (kir::is_float(t)) {
    // Ordered compares are false when either side is NaN, as in C; != is the unordered one (true on NaN).
    switch (in.op) {
      case Op::Eq: code = SpvOpFOrdEqual; break;
      case Op::Ne: code = SpvOpFUnordNotEqual; break;
      case Op::Lt: code = SpvOpFOrdLessThan; break;
      case Op::Le: code = SpvOpFOrdLessThanEqual; break;
      case Op::Gt: code = SpvOpFOrdGreaterThan; break;
      case Op::Ge: code = SpvOpFOrdGreaterThanEqual; break;
      default: break;
    }
  } else {
    bool s = kir::is_signed_int(t);
    switch (in.op) {
      case Op::Eq: code = SpvOpIEqual; break;
      case Op::Ne: code = SpvOpINotEqual; break;
      case Op::Lt: code = s ? SpvOpSLessThan : SpvOpULessThan; break;
      case Op::Le: code = s ? SpvOpSLessThanEqual : SpvOpULessThanEqual; break;
      case Op::Gt: code = s ? SpvOpSGreaterThan : SpvOpUGreaterThan; break;
      case Op::Ge: code = s ? SpvOpSGreaterThanEqual : SpvOpUGreaterThanEqual; break;
      default: break;
    }
  }
  return op(code, bool_type(), {a, b});
}

Id KernelEmitter::unary(const kir::Instr& in) {
  Type t = in.type;
  Id rt = type(t);
  Id a = value(in.operands[0]);
  bool f = kir::is_float(t);
  switch (in.op) {
    case Op::Neg: return op(f ? SpvOpFNegate : SpvOpSNegate, rt, {a});
    case Op::Not: return op(t == Type::Bool ? SpvOpLogicalNot : SpvOpNot, rt, {a});
    case Op::Abs: return ext(f ? GLSLstd450FAbs : GLSLstd450SAbs, rt, {a});
    case Op::Exp: return exp_any(t, a);
    case Op::Log: return log_any(t, a);
    case Op::Sqrt: return ext(GLSLstd450Sqrt, rt, {a});
    case Op::Rsqrt: return ext(GLSLstd450InverseSqrt, rt, {a});
    case Op::Tanh: return tanh_safe(t, a);
    case Op::Floor: return ext(GLSLstd450Floor, rt, {a});
    default: break;
  }
  throw std::logic_error(fmt::format("SPIR-V backend: {} is not a unary op", kir::op_name(in.op)));
}

Id KernelEmitter::convert(Id v, Type from, Type to) {
  if (from == to) return v;
  if (from == Type::BF16 || to == Type::BF16) return convert_bf16(v, to);
  bool from_float = kir::is_float(from), to_float = kir::is_float(to);
  if (from_float && to_float) return op(SpvOpFConvert, type(to), {v});
  if (from_float) {
    // Rounds toward zero. ConvertFToU must produce an unsigned type in a shader.
    return op(kir::is_signed_int(to) ? SpvOpConvertFToS : SpvOpConvertFToU, type(to), {v});
  }
  if (to_float) return op(kir::is_signed_int(from) ? SpvOpConvertSToF : SpvOpConvertUToF, type(to), {v});

  // Integer to integer, with C semantics: widening extends by the source's signedness, narrowing keeps
  // the low bits, same width reinterprets. SConvert/UConvert cannot keep the width, and in a shader
  // UConvert must produce an unsigned type, so change the width first and the signedness second.
  if (dtype_bytes(from) == dtype_bytes(to)) return op(SpvOpBitcast, type(to), {v});
  bool from_signed = kir::is_signed_int(from);
  Id resized = from_signed ? op(SpvOpSConvert, signed_type(to), {v}) : op(SpvOpUConvert, unsigned_type(to), {v});
  if (from_signed == kir::is_signed_int(to)) return resized;
  return op(SpvOpBitcast, type(to), {resized});
}

// bf16 is the top half of an f32 (types.h), held as a 16-bit word; the verifier allows only f32 on the other side.
// f32 -> bf16 rounds half to even on the dropped 16 bits (adding 0x7FFF plus the kept lowest bit carries exactly
// then) and keeps a NaN quiet, bit for bit what spire::f32_to_bf16_bits and the PTX backend do.
Id KernelEmitter::convert_bf16(Id v, Type to) {
  const Id u32 = type(Type::U32), u16 = type(Type::BF16);
  auto c = [&](uint32_t x) { return m_.constant_u32(x); };
  if (to == Type::F32) {
    Id wide = op(SpvOpUConvert, u32, {v});
    return op(SpvOpBitcast, type(Type::F32), {op(SpvOpShiftLeftLogical, u32, {wide, c(16)})});
  }
  Id bits = op(SpvOpBitcast, u32, {v});
  Id high = op(SpvOpShiftRightLogical, u32, {bits, c(16)});
  Id bias = op(SpvOpIAdd, u32, {c(0x7FFF), op(SpvOpBitwiseAnd, u32, {high, c(1)})});
  Id rounded = op(SpvOpShiftRightLogical, u32, {op(SpvOpIAdd, u32, {bits, bias}), c(16)});
  Id quiet_nan = op(SpvOpBitwiseOr, u32, {high, c(0x40)});
  Id picked = op(SpvOpSelect, u32, {op(SpvOpIsNan, type(Type::Bool), {v}), quiet_nan, rounded});
  return op(SpvOpUConvert, u16, {picked});
}

Id KernelEmitter::buffer_element(uint32_t buffer, kir::ValueId index) {
  Type elem = k_.buffers.at(buffer).elem;
  return op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassStorageBuffer, type(elem)),
            {buffer_vars_.at(buffer), m_.constant_u32(0), value(index)});
}

Id KernelEmitter::shared_element(uint32_t array, kir::ValueId index) {
  Type elem = k_.shared.at(array).elem;
  return op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassWorkgroup, type(elem)),
            {shared_vars_.at(array), value(index)});
}

Id KernelEmitter::atomic_add(const kir::Instr& in) {
  Id pointer = buffer_element(in.index, in.operands[0]);
  Id device = m_.constant_u32(SpvScopeDevice);
  Id relaxed = m_.constant_u32(SpvMemorySemanticsMaskNone);
  Id v = value(in.operands[1]);
  if (in.type == Type::F32) {
    m_.add_capability(SpvCapabilityAtomicFloat32AddEXT);
    m_.add_extension("SPV_EXT_shader_atomic_float_add");
    return op(SpvOpAtomicFAddEXT, type(in.type), {pointer, device, relaxed, v});
  }
  if (in.type != Type::I32 && in.type != Type::U32)
    throw std::logic_error(fmt::format("SPIR-V backend: atomic add on {}", dtype_name(in.type)));
  return op(SpvOpAtomicIAdd, type(in.type), {pointer, device, relaxed, v});
}

// ---------------------------------------------------------------------------------------------------------
// Constants of kir types

Id KernelEmitter::float_constant(Type t, double v) {
  return m_.constant(type(t), float_constant_words(dtype_bytes(t) * 8, v));
}

Id KernelEmitter::int_constant(Type t, int64_t v) {
  return m_.constant(type(t), int_constant_words(dtype_bytes(t) * 8, v));
}

}  // namespace spire::spirv
