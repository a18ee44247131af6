#include "backends/ptx/ptx_math.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace spire::ptx {

namespace {

constexpr float kLn2Hi = 0.693145751953125f;
constexpr double kLn2 = 0.69314718055994530942;
const float kLn2Lo = float(kLn2 - double(kLn2Hi));
constexpr double kLog2e64 = 1.44269504088896340736;
constexpr float kLog2e = float(kLog2e64);

std::string f(float v) { return f32_imm(v); }

template <class... Args>
void I(PtxWriter& w, fmt::format_string<Args...> fs, Args&&... args) {
  w.ins(fmt::format(fs, std::forward<Args>(args)...));
}

// What the precision-generic routines (exp, log, tanh, pow) need to know about f32 or f64.
struct Precision {
  RegClass reg;        // F32 / F64
  RegClass bits_reg;   // B32 / B64
  const char* t;       // "f32" / "f64"
  const char* b;       // "b32" / "b64"
  const char* s;       // "s32" / "s64"
  const char* u;       // "u32" / "u64"
  int expm1_degree;    // Taylor degree that makes expm1 exact to the type's precision for |y| < 0.7
  int mantissa_bits;   // 23 / 52
  int exponent_bias;   // 127 / 1023
  int subnormal_scale; // log: subnormals are multiplied by 2^this first (23 / 54) so their exponent field means it
  int atanh_terms;     // log: the last odd power of the atanh series that reaches the type's precision (11 / 21)
  double ln2_hi;       // log: ln 2 split so that e * ln2_hi is exact for the exponents e of the type,
  double ln2_lo;       //      and the rest
  double exp_overflow;   // exp: above this the result is inf (the argument is clamped here, NaN passing)
  double exp_underflow;  //      below this it is 0
  void (*exp)(PtxWriter&, const std::string&, const std::string&);
  void (*log)(PtxWriter&, const std::string&, const std::string&);
  std::string imm(double v) const { return reg == RegClass::F32 ? f32_imm(float(v)) : f64_imm(v); }
  const char* sign_mask() const { return reg == RegClass::F32 ? "0x80000000" : "0x8000000000000000"; }
  const char* mantissa_mask() const { return reg == RegClass::F32 ? "8388607" : "0x000FFFFFFFFFFFFF"; }
  const char* exponent_of_one() const { return reg == RegClass::F32 ? "1065353216" : "0x3FF0000000000000"; }
  const char* quiet_nan() const { return reg == RegClass::F32 ? "0f7FFFFFFF" : "0d7FFFFFFFFFFFFFFF"; }
  double min_normal() const {
    return reg == RegClass::F32 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
  }
};

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^9 (kLn2Hi has 15 significant bits); f64 splits it as fdlibm
// does, exact for |n| < 2^20.
const Precision kF32{RegClass::F32, RegClass::B32, "f32", "b32", "s32", "u32", 10, 23, 127, 23, 11,
                     double(kLn2Hi), double(kLn2Lo), 89.0, -104.0, emit_exp_f32, emit_log_f32};
const Precision kF64{RegClass::F64, RegClass::B64, "f64", "b64", "s64", "u64", 16, 52, 1023, 54, 21,
                     6.93147180369123816490e-01, 1.90821492927058770002e-10, 710.0, -746.0, emit_exp_f64,
                     emit_log_f64};

// Cody-Waite reduction of exp's argument: x, clamped to the type's range with compare+select (min/max would turn
// NaN into the bound), is n*ln2 + r with |r| <= ln2/2. Returns n (an integral float) and r.
std::pair<std::string, std::string> exp_reduce(PtxWriter& w, const Precision& P, const std::string& x) {
  auto p = w.reg(RegClass::Pred);
  auto c = w.reg(P.reg);
  I(w, "setp.gt.{} {}, {}, {};", P.t, p, x, P.imm(P.exp_overflow));
  I(w, "selp.{} {}, {}, {}, {};", P.t, c, P.imm(P.exp_overflow), x, p);
  I(w, "setp.lt.{} {}, {}, {};", P.t, p, c, P.imm(P.exp_underflow));
  I(w, "selp.{} {}, {}, {}, {};", P.t, c, P.imm(P.exp_underflow), c, p);
  auto t = w.reg(P.reg);
  auto nf = w.reg(P.reg);
  auto nneg = w.reg(P.reg);
  auto r = w.reg(P.reg);
  I(w, "mul.rn.{} {}, {}, {};", P.t, t, c, P.imm(kLog2e64));
  I(w, "cvt.rni.{}.{} {}, {};", P.t, P.t, nf, t);
  I(w, "neg.{} {}, {};", P.t, nneg, nf);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, r, nneg, P.imm(P.ln2_hi), c);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, r, nneg, P.imm(P.ln2_lo), r);
  return {nf, r};
}

// 2^k for an s32 register k within the type's normal exponents, built from the exponent bits.
std::string pow2(PtxWriter& w, const Precision& P, const std::string& k) {
  auto bits = w.reg(P.bits_reg);
  auto out = w.reg(P.reg);
  if (P.reg == RegClass::F64) {
    I(w, "cvt.s64.s32 {}, {};", bits, k);
    I(w, "add.s64 {}, {}, {};", bits, bits, P.exponent_bias);
  } else {
    I(w, "add.s32 {}, {}, {};", bits, k, P.exponent_bias);
  }
  I(w, "shl.{} {}, {}, {};", P.b, bits, bits, P.mantissa_bits);
  I(w, "mov.{} {}, {};", P.b, out, bits);
  return out;
}

// dst = e * 2^n as e * 2^(n/2) * 2^(n - n/2): each factor is a normal number for every n the clamp allows, so a
// subnormal result rounds once. n is exp_reduce's integral float.
void scale_by_pow2(PtxWriter& w, const Precision& P, const std::string& dst, const std::string& e,
                   const std::string& nf) {
  auto n = w.reg(RegClass::B32);
  auto n1 = w.reg(RegClass::B32);
  auto n2 = w.reg(RegClass::B32);
  I(w, "cvt.rzi.s32.{} {}, {};", P.t, n, nf);  // NaN -> 0; the NaN still flows through e
  I(w, "shr.s32 {}, {}, 1;", n1, n);
  I(w, "sub.s32 {}, {}, {};", n2, n, n1);
  auto s1 = pow2(w, P, n1);
  auto s2 = pow2(w, P, n2);
  I(w, "mul.rn.{} {}, {}, {};", P.t, e, e, s1);
  I(w, "mul.rn.{} {}, {}, {};", P.t, dst, e, s2);
}

void emit_log(PtxWriter& w, const Precision& P, const std::string& dst, const std::string& x) {
  w.comment(fmt::format("log.{}: x = m*2^e, m in [sqrt(1/2), sqrt(2)), log(m) = 2*atanh((m-1)/(m+1))", P.t));
  auto psub = w.reg(RegClass::Pred);
  auto xs = w.reg(P.reg);
  auto xm = w.reg(P.reg);
  auto adj = w.reg(P.bits_reg);
  // Subnormals: scaled first so the exponent field is meaningful.
  I(w, "setp.lt.{} {}, {}, {};", P.t, psub, x, P.imm(P.min_normal()));
  I(w, "mul.rn.{} {}, {}, {};", P.t, xs, x, P.imm(std::ldexp(1.0, P.subnormal_scale)));
  I(w, "selp.{} {}, {}, {}, {};", P.t, xm, xs, x, psub);
  I(w, "selp.{} {}, {}, 0, {};", P.b, adj, -P.subnormal_scale, psub);
  auto bits = w.reg(P.bits_reg);
  auto e = w.reg(P.bits_reg);
  auto mb = w.reg(P.bits_reg);
  auto m = w.reg(P.reg);
  I(w, "mov.{} {}, {};", P.b, bits, xm);
  I(w, "shr.{} {}, {}, {};", P.u, e, bits, P.mantissa_bits);  // only positive finite x reach the result
  I(w, "sub.{} {}, {}, {};", P.s, e, e, P.exponent_bias);
  I(w, "add.{} {}, {}, {};", P.s, e, e, adj);
  I(w, "and.{} {}, {}, {};", P.b, mb, bits, P.mantissa_mask());
  I(w, "or.{} {}, {}, {};", P.b, mb, mb, P.exponent_of_one());  // m in [1, 2)
  I(w, "mov.{} {}, {};", P.b, m, mb);
  auto pbig = w.reg(RegClass::Pred);
  auto mh = w.reg(P.reg);
  auto inc = w.reg(P.bits_reg);
  I(w, "setp.gt.{} {}, {}, {};", P.t, pbig, m, P.imm(1.4142135623730951));
  I(w, "mul.rn.{} {}, {}, {};", P.t, mh, m, P.imm(0.5));
  I(w, "selp.{} {}, {}, {}, {};", P.t, m, mh, m, pbig);
  I(w, "selp.{} {}, 1, 0, {};", P.b, inc, pbig);
  I(w, "add.{} {}, {}, {};", P.s, e, e, inc);
  auto fr = w.reg(P.reg);
  auto den = w.reg(P.reg);
  auto s = w.reg(P.reg);
  auto s2 = w.reg(P.reg);
  auto q = w.reg(P.reg);
  I(w, "sub.rn.{} {}, {}, {};", P.t, fr, m, P.imm(1.0));  // exact (Sterbenz)
  I(w, "add.rn.{} {}, {}, {};", P.t, den, fr, P.imm(2.0));
  I(w, "div.rn.{} {}, {}, {};", P.t, s, fr, den);  // |s| <= 0.1716
  I(w, "mul.rn.{} {}, {}, {};", P.t, s2, s, s);
  // 2*atanh(s) = 2s * (1 + s^2/3 + s^4/5 + ... + s^(n-1)/n), n = atanh_terms: the next term is below the type's
  // rounding (1e-10 relative for f32's n = 11, 1e-18 for f64's 21).
  const int n = P.atanh_terms;
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, q, s2, P.imm(1.0 / n), P.imm(1.0 / (n - 2)));
  for (int k = n - 4; k >= 3; k -= 2) I(w, "fma.rn.{} {}, {}, {}, {};", P.t, q, s2, q, P.imm(1.0 / k));
  auto two_s = w.reg(P.reg);
  auto tail = w.reg(P.reg);
  auto lm = w.reg(P.reg);
  I(w, "add.rn.{} {}, {}, {};", P.t, two_s, s, s);
  I(w, "mul.rn.{} {}, {}, {};", P.t, tail, s2, q);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, lm, two_s, tail, two_s);
  auto ef = w.reg(P.reg);
  auto res = w.reg(P.reg);
  I(w, "cvt.rn.{}.{} {}, {};", P.t, P.s, ef, e);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, res, ef, P.imm(P.ln2_lo), lm);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, res, ef, P.imm(P.ln2_hi), res);
  // Special values: log(+-0) = -inf, log(+inf) = +inf, log(<0) = log(-inf) = log(NaN) = NaN.
  const double inf = std::numeric_limits<double>::infinity();
  auto pz = w.reg(RegClass::Pred);
  auto pinf = w.reg(RegClass::Pred);
  auto pok = w.reg(RegClass::Pred);
  auto sp = w.reg(P.reg);
  I(w, "setp.eq.{} {}, {}, {};", P.t, pz, x, P.imm(0.0));
  I(w, "selp.{} {}, {}, {}, {};", P.t, sp, P.imm(-inf), P.quiet_nan(), pz);
  I(w, "setp.eq.{} {}, {}, {};", P.t, pinf, x, P.imm(inf));
  I(w, "selp.{} {}, {}, {}, {};", P.t, sp, P.imm(inf), sp, pinf);
  I(w, "setp.gt.{} {}, {}, {};", P.t, pok, x, P.imm(0.0));
  I(w, "setp.lt.and.{} {}, {}, {}, {};", P.t, pok, x, P.imm(inf), pok);
  I(w, "selp.{} {}, {}, {}, {};", P.t, dst, res, sp, pok);
}

void emit_tanh(PtxWriter& w, const Precision& P, const std::string& dst, const std::string& x) {
  w.comment(fmt::format("tanh.{}: -expm1(-2|x|) / (2 + expm1(-2|x|)), sign of x", P.t));
  auto t = w.reg(P.reg);
  auto y = w.reg(P.reg);
  I(w, "abs.{} {}, {};", P.t, t, x);
  I(w, "add.rn.{} {}, {}, {};", P.t, y, t, t);
  I(w, "neg.{} {}, {};", P.t, y, y);  // y = -2|x| <= 0, exact
  // expm1(y) for |y| < 0.7 by its Taylor series (truncation below the type's rounding): y + y^2 * q(y),
  // q = 1/2! + y/3! + ... + y^(d-2)/d!.
  auto q = w.reg(P.reg);
  std::vector<double> inv_fact(P.expm1_degree + 1);
  double fact = 1;
  for (int k = 1; k <= P.expm1_degree; ++k) inv_fact[k] = 1.0 / (fact *= k);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, q, y, P.imm(inv_fact[P.expm1_degree]), P.imm(inv_fact[P.expm1_degree - 1]));
  for (int k = P.expm1_degree - 2; k >= 2; --k) I(w, "fma.rn.{} {}, {}, {}, {};", P.t, q, y, q, P.imm(inv_fact[k]));
  auto yy = w.reg(P.reg);
  auto em_small = w.reg(P.reg);
  I(w, "mul.rn.{} {}, {}, {};", P.t, yy, y, y);
  I(w, "fma.rn.{} {}, {}, {}, {};", P.t, em_small, yy, q, y);
  // expm1(y) = exp(y) - 1 for |y| >= 0.7, where exp(y) <= 0.5 so the subtraction loses nothing.
  auto ey = w.reg(P.reg);
  P.exp(w, ey, y);
  auto em = w.reg(P.reg);
  auto psmall = w.reg(RegClass::Pred);
  I(w, "sub.rn.{} {}, {}, {};", P.t, em, ey, P.imm(1.0));
  I(w, "setp.lt.{} {}, {}, {};", P.t, psmall, t, P.imm(0.35));
  I(w, "selp.{} {}, {}, {}, {};", P.t, em, em_small, em, psmall);
  auto num = w.reg(P.reg);
  auto den = w.reg(P.reg);
  auto r = w.reg(P.reg);
  I(w, "neg.{} {}, {};", P.t, num, em);
  I(w, "add.rn.{} {}, {}, {};", P.t, den, em, P.imm(2.0));
  I(w, "div.rn.{} {}, {}, {};", P.t, r, num, den);  // in [0, 1]; NaN stays NaN
  // copysign(r, x). r is mathematically >= 0 but is -0 when em is +0 (-(+0)/2), so clear its sign first.
  auto rb = w.reg(P.bits_reg);
  auto sb = w.reg(P.bits_reg);
  I(w, "abs.{} {}, {};", P.t, r, r);
  I(w, "mov.{} {}, {};", P.b, rb, r);
  I(w, "mov.{} {}, {};", P.b, sb, x);
  I(w, "and.{} {}, {}, {};", P.b, sb, sb, P.sign_mask());
  I(w, "or.{} {}, {}, {};", P.b, rb, rb, sb);
  I(w, "mov.{} {}, {};", P.b, dst, rb);
}

void emit_pow(PtxWriter& w, const Precision& P, const std::string& dst, const std::string& x, const std::string& y) {
  w.comment(fmt::format("pow.{}: exp(y * log|x|) with C's special cases", P.t));
  const std::string one = P.imm(1.0), zero = P.imm(0.0), half = P.imm(0.5);
  const std::string nan = P.reg == RegClass::F32 ? "0f7FFFFFFF" : "0d7FFFFFFFFFFFFFFF";
  auto ax = w.reg(P.reg);
  auto l = w.reg(P.reg);
  auto t = w.reg(P.reg);
  auto r = w.reg(P.reg);
  I(w, "abs.{} {}, {};", P.t, ax, x);
  P.log(w, l, ax);
  I(w, "mul.rn.{} {}, {}, {};", P.t, t, y, l);
  P.exp(w, r, t);
  // Is y integral, and odd? (+-inf counts as even and integral, NaN as neither.)
  auto yi = w.reg(P.reg);
  auto hy = w.reg(P.reg);
  auto hyi = w.reg(P.reg);
  auto pint = w.reg(RegClass::Pred);
  auto podd = w.reg(RegClass::Pred);
  I(w, "cvt.rzi.{}.{} {}, {};", P.t, P.t, yi, y);
  I(w, "setp.eq.{} {}, {}, {};", P.t, pint, yi, y);
  I(w, "mul.rn.{} {}, {}, {};", P.t, hy, y, half);
  I(w, "cvt.rzi.{}.{} {}, {};", P.t, P.t, hyi, hy);
  I(w, "setp.ne.and.{} {}, {}, {}, {};", P.t, podd, hyi, hy, pint);
  // pow(+-1, y) = 1 (the sign fix below makes pow(-1, odd) = -1).
  auto pone = w.reg(RegClass::Pred);
  I(w, "setp.eq.{} {}, {}, {};", P.t, pone, ax, one);
  I(w, "selp.{} {}, {}, {}, {};", P.t, r, one, r, pone);
  // A negative x (sign bit set, so -0 too) with odd integral y gives a negative result.
  auto xb = w.reg(P.bits_reg);
  auto pflip = w.reg(RegClass::Pred);
  auto rn = w.reg(P.reg);
  I(w, "mov.{} {}, {};", P.b, xb, x);
  I(w, "setp.lt.and.{} {}, {}, 0, {};", P.s, pflip, xb, podd);
  I(w, "neg.{} {}, {};", P.t, rn, r);
  I(w, "selp.{} {}, {}, {}, {};", P.t, r, rn, r, pflip);
  // x < 0 with non-integral y: NaN.
  auto pnan = w.reg(RegClass::Pred);
  auto pnint = w.reg(RegClass::Pred);
  I(w, "not.pred {}, {};", pnint, pint);
  I(w, "setp.lt.and.{} {}, {}, {}, {};", P.t, pnan, x, zero, pnint);
  I(w, "selp.{} {}, {}, {}, {};", P.t, r, nan, r, pnan);
  // pow(x, +-0) = 1 for every x, NaN included.
  auto pyz = w.reg(RegClass::Pred);
  I(w, "setp.eq.{} {}, {}, {};", P.t, pyz, y, zero);
  I(w, "selp.{} {}, {}, {}, {};", P.t, dst, one, r, pyz);
}

}  // namespace

void emit_log_f32(PtxWriter& w, const std::string& dst, const std::string& x) { emit_log(w, kF32, dst, x); }
void emit_log_f64(PtxWriter& w, const std::string& dst, const std::string& x) { emit_log(w, kF64, dst, x); }
void emit_tanh_f32(PtxWriter& w, const std::string& dst, const std::string& x) { emit_tanh(w, kF32, dst, x); }
void emit_tanh_f64(PtxWriter& w, const std::string& dst, const std::string& x) { emit_tanh(w, kF64, dst, x); }
void emit_pow_f32(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y) {
  emit_pow(w, kF32, dst, x, y);
}
void emit_pow_f64(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y) {
  emit_pow(w, kF64, dst, x, y);
}

void emit_exp_f32(PtxWriter& w, const std::string& dst, const std::string& x) {
  w.comment("exp.f32: x = n*ln2 + r, exp(r) by ex2.approx, times 2^n");
  auto [nf, r] = exp_reduce(w, kF32, x);
  auto t = w.reg(RegClass::F32);
  auto e = w.reg(RegClass::F32);
  I(w, "mul.rn.f32 {}, {}, {};", t, r, f(kLog2e));
  I(w, "ex2.approx.ftz.f32 {}, {};", e, t);  // argument in [-0.5, 0.5]: result in [0.7, 1.42], no subnormals
  scale_by_pow2(w, kF32, dst, e, nf);
}

void emit_exp_f64(PtxWriter& w, const std::string& dst, const std::string& x) {
  w.comment("exp.f64: x = n*ln2 + r, exp(r) = 1 + expm1(r) by Taylor to r^13, times 2^n");
  auto d = [](double v) { return f64_imm(v); };
  auto [nf, r] = exp_reduce(w, kF64, x);  // |r| <= 0.3466
  // expm1(r) = r + r^2 * (1/2! + r/3! + ... + r^11/13!); the next term is below 1e-17 relative.
  auto q = w.reg(RegClass::F64);
  double inv_fact[14];
  double fact = 1;
  for (int k = 1; k <= 13; ++k) inv_fact[k] = 1.0 / (fact *= k);
  I(w, "fma.rn.f64 {}, {}, {}, {};", q, r, d(inv_fact[13]), d(inv_fact[12]));
  for (int k = 11; k >= 2; --k) I(w, "fma.rn.f64 {}, {}, {}, {};", q, r, q, d(inv_fact[k]));
  auto rr = w.reg(RegClass::F64);
  auto em = w.reg(RegClass::F64);
  auto e = w.reg(RegClass::F64);
  I(w, "mul.rn.f64 {}, {}, {};", rr, r, r);
  I(w, "fma.rn.f64 {}, {}, {}, {};", em, rr, q, r);
  I(w, "add.rn.f64 {}, {}, {};", e, em, d(1.0));
  scale_by_pow2(w, kF64, dst, e, nf);
}

void emit_fmod_f64(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y) {
  w.comment("fmod.f64: x - trunc(x/y)*y, sign of x");
  auto q = w.reg(RegClass::F64);
  auto r = w.reg(RegClass::F64);
  I(w, "div.rn.f64 {}, {}, {};", q, x, y);
  I(w, "cvt.rzi.f64.f64 {}, {};", q, q);
  I(w, "neg.f64 {}, {};", q, q);
  I(w, "fma.rn.f64 {}, {}, {}, {};", r, q, y, x);
  // The rounded quotient can overshoot by one (x/y just below an integer rounds up): then r has the wrong
  // sign and one |y| brings it back.
  auto ay = w.reg(RegClass::F64);
  auto nay = w.reg(RegClass::F64);
  auto step = w.reg(RegClass::F64);
  auto fixed = w.reg(RegClass::F64);
  auto pa = w.reg(RegClass::Pred);
  auto pb = w.reg(RegClass::Pred);
  auto prn = w.reg(RegClass::Pred);
  I(w, "abs.f64 {}, {};", ay, y);
  I(w, "neg.f64 {}, {};", nay, ay);
  I(w, "setp.lt.f64 {}, {}, 0d0000000000000000;", prn, r);
  I(w, "selp.f64 {}, {}, {}, {};", step, ay, nay, prn);
  I(w, "add.rn.f64 {}, {}, {};", fixed, r, step);
  I(w, "setp.lt.f64 {}, {}, 0d0000000000000000;", pa, x);
  I(w, "setp.gt.and.f64 {}, {}, 0d0000000000000000, {};", pa, r, pa);  // x < 0 and r > 0
  I(w, "setp.ge.f64 {}, {}, 0d0000000000000000;", pb, x);
  I(w, "and.pred {}, {}, {};", pb, pb, prn);                             // x >= 0 and r < 0
  I(w, "or.pred {}, {}, {};", pa, pa, pb);
  I(w, "selp.f64 {}, {}, {}, {};", r, fixed, r, pa);
  // The result has the sign of x, zero included (fmod(-4, 2) = -0).
  auto rb = w.reg(RegClass::B64);
  auto sb = w.reg(RegClass::B64);
  I(w, "abs.f64 {}, {};", r, r);
  I(w, "mov.b64 {}, {};", rb, r);
  I(w, "mov.b64 {}, {};", sb, x);
  I(w, "and.b64 {}, {}, 0x8000000000000000;", sb, sb);
  I(w, "or.b64 {}, {}, {};", rb, rb, sb);
  I(w, "mov.b64 {}, {};", r, rb);
  // fmod(finite x, +-inf) = x (the fma above made NaN from 0 * inf).
  auto pyinf = w.reg(RegClass::Pred);
  auto ax = w.reg(RegClass::F64);
  I(w, "abs.f64 {}, {};", ax, x);
  I(w, "setp.eq.f64 {}, {}, 0d7FF0000000000000;", pyinf, ay);
  I(w, "setp.lt.and.f64 {}, {}, 0d7FF0000000000000, {};", pyinf, ax, pyinf);
  I(w, "selp.f64 {}, {}, {}, {};", dst, x, r, pyinf);
}

}  // namespace spire::ptx
