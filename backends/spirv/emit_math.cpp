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
  // A negative base with a fractional exponent has no real power, except -inf (whose power is |x|^y).
  Id fractional_power = op(SpvOpSelect, rt, {op(SpvOpIsInf, b, {x}), magnitude, nan});
  Id negative_base = op(SpvOpSelect, rt, {y_integral, signed_magnitude, fractional_power});
  Id result = op(SpvOpSelect, rt, {x_negative, negative_base, magnitude});
  // NaN in, NaN out (C's pow(NaN, y) is NaN except for y == 0), which drivers do not promise for Pow.
  // (C's pow(1, NaN) = 1 and the sign of pow(-0, odd y < 0) are not reproduced.)
  Id either_nan = op(SpvOpLogicalOr, b, {op(SpvOpIsNan, b, {x}), op(SpvOpIsNan, b, {y})});
  result = op(SpvOpSelect, rt, {either_nan, nan, result});
  return op(SpvOpSelect, rt, {op(SpvOpFOrdEqual, b, {y, zero}), one, result});
}

Id KernelEmitter::tanh_safe(Type t, Id x) {
  if (t == Type::F64) return tanh_f64(x);
  // Some drivers compute Tanh as (e^2x - 1)/(e^2x + 1) and return NaN once e^2x overflows. tanh is exactly
  // +-1 in f32 (and f16) well before |x| = 20, so clamping changes no result and avoids the overflow.
  // FClamp of NaN is undefined (lavapipe gives -20), so NaN is passed through explicitly.
  Id rt = type(t);
  Id clamped = ext(GLSLstd450FClamp, rt, {x, float_constant(t, -20.0), float_constant(t, 20.0)});
  return op(SpvOpSelect, rt, {op(SpvOpIsNan, bool_type(), {x}), x, ext(GLSLstd450Tanh, rt, {clamped})});
}

Id KernelEmitter::exp_any(Type t, Id x) { return t == Type::F64 ? exp_f64(x) : ext(GLSLstd450Exp, type(t), {x}); }
Id KernelEmitter::log_any(Type t, Id x) { return t == Type::F64 ? log_f64(x) : ext(GLSLstd450Log, type(t), {x}); }

// ---------------------------------------------------------------------------------------------------------
// f64 exp, log and tanh. GLSL.std.450 Exp, Log, Pow and Tanh accept only 16- and 32-bit floats, so f64
// kernels get them from range reduction and polynomials built on the instructions that do take f64
// (arithmetic, RoundEven, Ldexp, FrexpStruct). Accuracy: a few ulp (measured on lavapipe against std::exp,
// std::log and std::tanh: within 2e-15 relative, specials included); pow(x, y) = exp(y log|x|) loses about
// |y log x| ulp more.

namespace {

// fdlibm's split of ln 2: ln2_hi's low 21 mantissa bits are zero, so k * ln2_hi is exact for |k| < 2^21.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLog2e = 1.44269504088896338700e+00;
// exp overflows above this and underflows to zero below the next (the smallest subnormal is 2^-1074).
constexpr double kExpOverflow = 7.09782712893383973096e+02;
constexpr double kExpUnderflow = -7.45133219101941108420e+02;

// Marks the float arithmetic written in its scope NoContraction.
class NoContraction {
 public:
  explicit NoContraction(bool& flag) : flag_(flag), saved_(flag) { flag_ = true; }
  ~NoContraction() { flag_ = saved_; }
  NoContraction(const NoContraction&) = delete;
  NoContraction& operator=(const NoContraction&) = delete;

 private:
  bool& flag_;
  bool saved_;
};

}  // namespace

Id KernelEmitter::expm1_poly_f64(Id r) {
  NoContraction exact_order(no_contraction_);
  // e^r - 1 = r * sum_{j=0..12} r^j / (j+1)!, by Horner; for |r| <= ln2/2 the first omitted term,
  // r^14/14!, is below 5e-18.
  Id dt = type(Type::F64);
  double coefficient[13];
  double factorial = 1;
  for (int j = 0; j < 13; ++j) {
    factorial *= j + 1;
    coefficient[j] = 1.0 / factorial;
  }
  Id p = float_constant(Type::F64, coefficient[12]);
  for (int j = 11; j >= 0; --j)
    p = op(SpvOpFAdd, dt, {op(SpvOpFMul, dt, {p, r}), float_constant(Type::F64, coefficient[j])});
  return op(SpvOpFMul, dt, {p, r});
}

Id KernelEmitter::exp_f64(Id x) {
  NoContraction exact_order(no_contraction_);
  // e^x = 2^k e^r with k = round(x / ln2) and r = x - k ln2 in [-ln2/2, ln2/2].
  Type D = Type::F64;
  Id dt = type(D), it = type(Type::I32), b = bool_type();
  auto c = [&](double v) { return float_constant(D, v); };
  Id xc = ext(GLSLstd450FClamp, dt, {x, c(-746.0), c(710.0)});  // keeps k within int range
  Id k = ext(GLSLstd450RoundEven, dt, {op(SpvOpFMul, dt, {xc, c(kLog2e)})});
  Id r = op(SpvOpFSub, dt, {op(SpvOpFSub, dt, {xc, op(SpvOpFMul, dt, {k, c(kLn2Hi)})}), op(SpvOpFMul, dt, {k, c(kLn2Lo)})});
  Id er = op(SpvOpFAdd, dt, {c(1.0), expm1_poly_f64(r)});
  // Scale by 2^k in two steps: k reaches +-1075, beyond what one Ldexp is required to handle.
  Id ki = op(SpvOpConvertFToS, it, {k});
  Id k_half = op(SpvOpSDiv, it, {ki, int_constant(Type::I32, 2)});
  Id scaled = ext(GLSLstd450Ldexp, dt, {ext(GLSLstd450Ldexp, dt, {er, k_half}), op(SpvOpISub, it, {ki, k_half})});
  Id result = op(SpvOpSelect, dt, {op(SpvOpFOrdGreaterThan, b, {x, c(kExpOverflow)}),
                                   c(std::numeric_limits<double>::infinity()), scaled});
  result = op(SpvOpSelect, dt, {op(SpvOpFOrdLessThan, b, {x, c(kExpUnderflow)}), c(0.0), result});
  return op(SpvOpSelect, dt, {op(SpvOpIsNan, b, {x}), x, result});
}

Id KernelEmitter::log_f64(Id x) {
  NoContraction exact_order(no_contraction_);
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s) = 2 s sum_j s^2j/(2j+1), s = (m-1)/(m+1),
  // |s| <= 0.172, so twelve terms leave an error below 1e-18.
  Type D = Type::F64;
  Id dt = type(D), it = type(Type::I32), b = bool_type();
  auto c = [&](double v) { return float_constant(D, v); };
  if (frexp_struct_ == 0) frexp_struct_ = m_.type_struct({dt, it});
  // Subnormals are scaled into the normal range first: devices that flush them (lavapipe's Frexp does)
  // would otherwise see 2^-1022 for every one of them.
  Id subnormal = op(SpvOpFOrdLessThan, b, {ext(GLSLstd450FAbs, dt, {x}), c(std::numeric_limits<double>::min())});
  Id xs = op(SpvOpSelect, dt, {subnormal, op(SpvOpFMul, dt, {x, c(0x1p54)}), x});
  Id parts = ext(GLSLstd450FrexpStruct, frexp_struct_, {xs});
  Id m = op(SpvOpCompositeExtract, dt, {parts, 0});
  Id e = op(SpvOpCompositeExtract, it, {parts, 1});
  e = op(SpvOpISub, it, {e, op(SpvOpSelect, it, {subnormal, int_constant(Type::I32, 54), int_constant(Type::I32, 0)})});
  Id low = op(SpvOpFOrdLessThan, b, {m, c(0.70710678118654752440)});
  m = op(SpvOpSelect, dt, {low, op(SpvOpFMul, dt, {m, c(2.0)}), m});
  e = op(SpvOpSelect, it, {low, op(SpvOpISub, it, {e, int_constant(Type::I32, 1)}), e});
  Id s = op(SpvOpFDiv, dt, {op(SpvOpFSub, dt, {m, c(1.0)}), op(SpvOpFAdd, dt, {m, c(1.0)})});
  Id z = op(SpvOpFMul, dt, {s, s});
  Id series = c(1.0 / 23.0);
  for (int j = 10; j >= 0; --j) series = op(SpvOpFAdd, dt, {op(SpvOpFMul, dt, {series, z}), c(1.0 / (2 * j + 1))});
  Id log_m = op(SpvOpFMul, dt, {op(SpvOpFMul, dt, {c(2.0), s}), series});
  Id ed = op(SpvOpConvertSToF, dt, {e});
  Id result = op(SpvOpFAdd, dt, {op(SpvOpFMul, dt, {ed, c(kLn2Hi)}),
                                 op(SpvOpFAdd, dt, {op(SpvOpFMul, dt, {ed, c(kLn2Lo)}), log_m})});
  // log(+inf) = +inf, log(0) = -inf, log(x < 0) = NaN, log(NaN) = NaN.
  Id inf = c(std::numeric_limits<double>::infinity());
  result = op(SpvOpSelect, dt, {op(SpvOpFOrdEqual, b, {x, inf}), inf, result});
  result = op(SpvOpSelect, dt, {op(SpvOpFOrdEqual, b, {x, c(0.0)}), c(-std::numeric_limits<double>::infinity()), result});
  result = op(SpvOpSelect, dt, {op(SpvOpFOrdLessThan, b, {x, c(0.0)}), c(std::numeric_limits<double>::quiet_NaN()), result});
  return op(SpvOpSelect, dt, {op(SpvOpIsNan, b, {x}), x, result});
}

Id KernelEmitter::tanh_f64(Id x) {
  NoContraction exact_order(no_contraction_);
  // tanh|x| = u / (u + 2) with u = e^(2|x|) - 1, taken from the series while 2|x| is small (no cancellation)
  // and from exp above. tanh is exactly 1 in f64 beyond |x| = 19.1, so |x| is clamped to 20 (and u stays
  // finite).
  Type D = Type::F64;
  Id dt = type(D), b = bool_type();
  auto c = [&](double v) { return float_constant(D, v); };
  Id a = ext(GLSLstd450FMin, dt, {ext(GLSLstd450FAbs, dt, {x}), c(20.0)});
  Id y = op(SpvOpFAdd, dt, {a, a});
  Id u_small = expm1_poly_f64(y);
  Id u_large = op(SpvOpFSub, dt, {exp_f64(y), c(1.0)});
  Id u = op(SpvOpSelect, dt, {op(SpvOpFOrdLessThan, b, {y, c(0.34657359027997264)}), u_small, u_large});
  Id t = op(SpvOpFDiv, dt, {u, op(SpvOpFAdd, dt, {u, c(2.0)})});
  Id result = op(SpvOpSelect, dt, {op(SpvOpFOrdLessThan, b, {x, c(0.0)}), op(SpvOpFNegate, dt, {t}), t});
  return op(SpvOpSelect, dt, {op(SpvOpIsNan, b, {x}), x, result});
}

}  // namespace spire::spirv
