// Operations whose plain SPIR-V / GLSL.std.450 form does not give the C semantics the kernel IR promises
// (and the reference evaluator computes), or does not exist for a type.
#include "backends/spirv/kernel_emitter.h"

#include <limits>

namespace spire::spirv {

using kir::Type;

Id KernelEmitter::signed_remainder(Type t, Id a, Id b) {
  // C's a % b (sign of the dividend) as |a| umod |b| with a's sign: Vulkan leaves OpSRem undefined for
  // negative operands. SAbs(INT_MIN) is INT_MIN, whose unsigned reading 2^31 is the right magnitude.
  Id rt = type(t), ut = unsigned_type(t);
  Id ua = op(SpvOpBitcast, ut, {ext(GLSLstd450SAbs, rt, {a})});
  Id ub = op(SpvOpBitcast, ut, {ext(GLSLstd450SAbs, rt, {b})});
  Id magnitude = op(SpvOpBitcast, rt, {op(SpvOpUMod, ut, {ua, ub})});
  Id negative = op(SpvOpSLessThan, bool_type(), {a, int_constant(t, 0)});
  return op(SpvOpSelect, rt, {negative, op(SpvOpSNegate, rt, {magnitude}), magnitude});
}

Id KernelEmitter::pow_c(Type t, Id x, Id y) {
  // GLSL.std.450 Pow is undefined for x < 0 and for x == 0 with y <= 0, where C's pow is defined:
  // a negative base with an integral exponent gives +-|x|^y, pow(0, y<0) = inf, pow(x, 0) = 1.
  Id rt = type(t);
  Id b = bool_type();
  Id zero = float_constant(t, 0.0), one = float_constant(t, 1.0), half = float_constant(t, 0.5);
  Id inf = float_constant(t, std::numeric_limits<double>::infinity());
  Id nan = float_constant(t, std::numeric_limits<double>::quiet_NaN());

  Id ax = ext(GLSLstd450FAbs, rt, {x});
  Id magnitude = t == Type::F64 ? exp_f64(op(SpvOpFMul, rt, {y, log_f64(ax)})) : ext(GLSLstd450Pow, rt, {ax, y});
  Id x_zero = op(SpvOpFOrdEqual, b, {x, zero});
  Id y_negative = op(SpvOpFOrdLessThan, b, {y, zero});
  magnitude = op(SpvOpSelect, rt, {x_zero, op(SpvOpSelect, rt, {y_negative, inf, zero}), magnitude});

  Id y_integral = op(SpvOpFOrdEqual, b, {ext(GLSLstd450Floor, rt, {y}), y});
  Id half_y = op(SpvOpFMul, rt, {y, half});
  Id y_odd = op(SpvOpLogicalAnd, b, {y_integral, op(SpvOpFOrdNotEqual, b, {ext(GLSLstd450Floor, rt, {half_y}), half_y})});
  Id signed_magnitude = op(SpvOpSelect, rt, {y_odd, op(SpvOpFNegate, rt, {magnitude}), magnitude});
  Id x_negative = op(SpvOpFOrdLessThan, b, {x, zero});
  Id negative_base = op(SpvOpSelect, rt, {y_integral, signed_magnitude, nan});
  Id result = op(SpvOpSelect, rt, {x_negative, negative_base, magnitude});
  return op(SpvOpSelect, rt, {op(SpvOpFOrdEqual, b, {y, zero}), one, result});
}

Id KernelEmitter::tanh_safe(Type t, Id x) {
  if (t == Type::F64) return tanh_f64(x);
  // Some drivers compute Tanh as (e^2x - 1)/(e^2x + 1) and return NaN once e^2x overflows. tanh is exactly
  // +-1 in f32 (and f16) well before |x| = 20, so clamping changes no result and avoids the overflow.
  Id rt = type(t);
  return ext(GLSLstd450Tanh, rt, {ext(GLSLstd450FClamp, rt, {x, float_constant(t, -20.0), float_constant(t, 20.0)})});
}

Id KernelEmitter::exp_any(Type t, Id x) { return t == Type::F64 ? exp_f64(x) : ext(GLSLstd450Exp, type(t), {x}); }
Id KernelEmitter::log_any(Type t, Id x) { return t == Type::F64 ? log_f64(x) : ext(GLSLstd450Log, type(t), {x}); }

// GLSL.std.450 Exp, Log, Pow and Tanh accept only 16- and 32-bit floats.
// TODO(precision): these compute in f32; replace with f64 range reduction + polynomials.
Id KernelEmitter::exp_f64(Id x) {
  Id f32 = type(Type::F32);
  return op(SpvOpFConvert, type(Type::F64), {ext(GLSLstd450Exp, f32, {op(SpvOpFConvert, f32, {x})})});
}

Id KernelEmitter::log_f64(Id x) {
  Id f32 = type(Type::F32);
  return op(SpvOpFConvert, type(Type::F64), {ext(GLSLstd450Log, f32, {op(SpvOpFConvert, f32, {x})})});
}

Id KernelEmitter::tanh_f64(Id x) {
  Id f32 = type(Type::F32);
  return op(SpvOpFConvert, type(Type::F64), {tanh_safe(Type::F32, op(SpvOpFConvert, f32, {x}))});
}

}  // namespace spire::spirv
