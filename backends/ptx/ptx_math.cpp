#include "backends/ptx/ptx_math.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace spire::ptx {

namespace {

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^9 (kLn2Hi has 15 significant bits).
constexpr float kLn2Hi = 0.693145751953125f;
constexpr double kLn2 = 0.69314718055994530942;
const float kLn2Lo = float(kLn2 - double(kLn2Hi));
constexpr float kLog2e = 1.44269504088896340736f;

std::string f(float v) { return f32_imm(v); }

template <class... Args>
void I(PtxWriter& w, fmt::format_string<Args...> fs, Args&&... args) {
  w.ins(fmt::format(fs, std::forward<Args>(args)...));
}

// 2^k as f32 for k in [-126, 127], built from the exponent bits.
std::string pow2_f32(PtxWriter& w, const std::string& k) {
  auto e = w.reg(RegClass::B32);
  auto out = w.reg(RegClass::F32);
  I(w, "add.s32 {}, {}, 127;", e, k);
  I(w, "shl.b32 {}, {}, 23;", e, e);
  I(w, "mov.b32 {}, {};", out, e);
  return out;
}

}  // namespace

void emit_exp_f32(PtxWriter& w, const std::string& dst, const std::string& x) {
  w.comment("exp.f32: x = n*ln2 + r, exp(r) by ex2.approx, times 2^n");
  // Clamp with compare+select (min/max would turn NaN into the bound): exp(89) overflows to inf and
  // exp(-104) underflows to 0 in f32, and n stays within the two-step scale's range.
  auto p = w.reg(RegClass::Pred);
  auto c = w.reg(RegClass::F32);
  I(w, "setp.gt.f32 {}, {}, {};", p, x, f(89.0f));
  I(w, "selp.f32 {}, {}, {}, {};", c, f(89.0f), x, p);
  I(w, "setp.lt.f32 {}, {}, {};", p, c, f(-104.0f));
  I(w, "selp.f32 {}, {}, {}, {};", c, f(-104.0f), c, p);
  auto nf = w.reg(RegClass::F32);
  auto nneg = w.reg(RegClass::F32);
  auto r = w.reg(RegClass::F32);
  auto t = w.reg(RegClass::F32);
  auto e = w.reg(RegClass::F32);
  I(w, "mul.rn.f32 {}, {}, {};", t, c, f(kLog2e));
  I(w, "cvt.rni.f32.f32 {}, {};", nf, t);
  I(w, "neg.f32 {}, {};", nneg, nf);
  I(w, "fma.rn.f32 {}, {}, {}, {};", r, nneg, f(kLn2Hi), c);
  I(w, "fma.rn.f32 {}, {}, {}, {};", r, nneg, f(kLn2Lo), r);
  I(w, "mul.rn.f32 {}, {}, {};", t, r, f(kLog2e));
  I(w, "ex2.approx.ftz.f32 {}, {};", e, t);  // argument in [-0.5, 0.5]: result in [0.7, 1.42], no subnormals
  // Scale by 2^n as 2^(n/2) * 2^(n - n/2): each factor is a normal float for n in [-150, 129].
  auto n = w.reg(RegClass::B32);
  auto n1 = w.reg(RegClass::B32);
  auto n2 = w.reg(RegClass::B32);
  I(w, "cvt.rzi.s32.f32 {}, {};", n, nf);  // NaN -> 0; the NaN still flows through e
  I(w, "shr.s32 {}, {}, 1;", n1, n);
  I(w, "sub.s32 {}, {}, {};", n2, n, n1);
  auto s1 = pow2_f32(w, n1);
  auto s2 = pow2_f32(w, n2);
  I(w, "mul.rn.f32 {}, {}, {};", e, e, s1);
  I(w, "mul.rn.f32 {}, {}, {};", dst, e, s2);
}

void emit_log_f32(PtxWriter& w, const std::string& dst, const std::string& x) {
  w.comment("log.f32: x = m*2^e, m in [sqrt(1/2), sqrt(2)), log(m) = 2*atanh((m-1)/(m+1))");
  auto psub = w.reg(RegClass::Pred);
  auto xs = w.reg(RegClass::F32);
  auto xm = w.reg(RegClass::F32);
  auto adj = w.reg(RegClass::B32);
  // Subnormals: scale by 2^23 first so the exponent field is meaningful.
  I(w, "setp.lt.f32 {}, {}, {};", psub, x, f(std::numeric_limits<float>::min()));
  I(w, "mul.rn.f32 {}, {}, {};", xs, x, f(8388608.0f));
  I(w, "selp.f32 {}, {}, {}, {};", xm, xs, x, psub);
  I(w, "selp.b32 {}, -23, 0, {};", adj, psub);
  auto bits = w.reg(RegClass::B32);
  auto e = w.reg(RegClass::B32);
  auto mb = w.reg(RegClass::B32);
  auto m = w.reg(RegClass::F32);
  I(w, "mov.b32 {}, {};", bits, xm);
  I(w, "shr.u32 {}, {}, 23;", e, bits);  // only positive finite x reach the result
  I(w, "sub.s32 {}, {}, 127;", e, e);
  I(w, "add.s32 {}, {}, {};", e, e, adj);
  I(w, "and.b32 {}, {}, 8388607;", mb, bits);
  I(w, "or.b32 {}, {}, 1065353216;", mb, mb);  // exponent of 1.0: m in [1, 2)
  I(w, "mov.b32 {}, {};", m, mb);
  auto pbig = w.reg(RegClass::Pred);
  auto mh = w.reg(RegClass::F32);
  auto inc = w.reg(RegClass::B32);
  I(w, "setp.gt.f32 {}, {}, {};", pbig, m, f(1.41421356f));
  I(w, "mul.rn.f32 {}, {}, 0f3F000000;", mh, m);
  I(w, "selp.f32 {}, {}, {}, {};", m, mh, m, pbig);
  I(w, "selp.b32 {}, 1, 0, {};", inc, pbig);
  I(w, "add.s32 {}, {}, {};", e, e, inc);
  auto fr = w.reg(RegClass::F32);
  auto den = w.reg(RegClass::F32);
  auto s = w.reg(RegClass::F32);
  auto s2 = w.reg(RegClass::F32);
  auto q = w.reg(RegClass::F32);
  I(w, "sub.rn.f32 {}, {}, 0f3F800000;", fr, m);  // exact (Sterbenz)
  I(w, "add.rn.f32 {}, {}, 0f40000000;", den, fr);
  I(w, "div.rn.f32 {}, {}, {};", s, fr, den);     // |s| <= 0.1716
  I(w, "mul.rn.f32 {}, {}, {};", s2, s, s);
  // 2*atanh(s) = 2s * (1 + s^2/3 + s^4/5 + ... + s^10/11); the next term is below 1e-10 relative.
  I(w, "fma.rn.f32 {}, {}, {}, {};", q, s2, f(1.0f / 11), f(1.0f / 9));
  I(w, "fma.rn.f32 {}, {}, {}, {};", q, s2, q, f(1.0f / 7));
  I(w, "fma.rn.f32 {}, {}, {}, {};", q, s2, q, f(1.0f / 5));
  I(w, "fma.rn.f32 {}, {}, {}, {};", q, s2, q, f(1.0f / 3));
  auto two_s = w.reg(RegClass::F32);
  auto tail = w.reg(RegClass::F32);
  auto lm = w.reg(RegClass::F32);
  I(w, "add.rn.f32 {}, {}, {};", two_s, s, s);
  I(w, "mul.rn.f32 {}, {}, {};", tail, s2, q);
  I(w, "fma.rn.f32 {}, {}, {}, {};", lm, two_s, tail, two_s);
  auto ef = w.reg(RegClass::F32);
  auto res = w.reg(RegClass::F32);
  I(w, "cvt.rn.f32.s32 {}, {};", ef, e);
  I(w, "fma.rn.f32 {}, {}, {}, {};", res, ef, f(kLn2Lo), lm);
  I(w, "fma.rn.f32 {}, {}, {}, {};", res, ef, f(kLn2Hi), res);
  // Special values: log(+-0) = -inf, log(+inf) = +inf, log(<0) = log(-inf) = log(NaN) = NaN.
  auto pz = w.reg(RegClass::Pred);
  auto pinf = w.reg(RegClass::Pred);
  auto pok = w.reg(RegClass::Pred);
  auto sp = w.reg(RegClass::F32);
  const float inf = std::numeric_limits<float>::infinity();
  I(w, "setp.eq.f32 {}, {}, 0f00000000;", pz, x);
  I(w, "selp.f32 {}, {}, 0f7FFFFFFF, {};", sp, f(-inf), pz);
  I(w, "setp.eq.f32 {}, {}, {};", pinf, x, f(inf));
  I(w, "selp.f32 {}, {}, {}, {};", sp, f(inf), sp, pinf);
  I(w, "setp.gt.f32 {}, {}, 0f00000000;", pok, x);
  I(w, "setp.lt.and.f32 {}, {}, {}, {};", pok, x, f(inf), pok);
  I(w, "selp.f32 {}, {}, {}, {};", dst, res, sp, pok);
}

void emit_tanh_f32(PtxWriter& w, const std::string& dst, const std::string& x) {
  w.comment("tanh.f32: -expm1(-2|x|) / (2 + expm1(-2|x|)), sign of x");
  auto t = w.reg(RegClass::F32);
  auto y = w.reg(RegClass::F32);
  I(w, "abs.f32 {}, {};", t, x);
  I(w, "add.rn.f32 {}, {}, {};", y, t, t);
  I(w, "neg.f32 {}, {};", y, y);  // y = -2|x| <= 0, exact
  // expm1(y) for |y| < 0.7 by Taylor to y^10/10! (truncation below 1e-9 relative): y + y^2 * q(y).
  auto q = w.reg(RegClass::F32);
  double fact = 3628800.0;  // 10!
  I(w, "fma.rn.f32 {}, {}, {}, {};", q, y, f(float(1.0 / fact)), f(float(1.0 / (fact / 10))));
  fact /= 10;  // 9!
  for (int k = 8; k >= 2; --k) {
    fact /= (k + 1);  // k!
    I(w, "fma.rn.f32 {}, {}, {}, {};", q, y, q, f(float(1.0 / fact)));
  }
  auto yy = w.reg(RegClass::F32);
  auto em_small = w.reg(RegClass::F32);
  I(w, "mul.rn.f32 {}, {}, {};", yy, y, y);
  I(w, "fma.rn.f32 {}, {}, {}, {};", em_small, yy, q, y);
  // expm1(y) = exp(y) - 1 for |y| >= 0.7, where exp(y) <= 0.5 so the subtraction loses nothing.
  auto ey = w.reg(RegClass::F32);
  emit_exp_f32(w, ey, y);
  auto em = w.reg(RegClass::F32);
  auto psmall = w.reg(RegClass::Pred);
  I(w, "sub.rn.f32 {}, {}, 0f3F800000;", em, ey);
  I(w, "setp.lt.f32 {}, {}, {};", psmall, t, f(0.35f));
  I(w, "selp.f32 {}, {}, {}, {};", em, em_small, em, psmall);
  auto num = w.reg(RegClass::F32);
  auto den = w.reg(RegClass::F32);
  auto r = w.reg(RegClass::F32);
  I(w, "neg.f32 {}, {};", num, em);
  I(w, "add.rn.f32 {}, {}, 0f40000000;", den, em);
  I(w, "div.rn.f32 {}, {}, {};", r, num, den);  // in [0, 1]; NaN stays NaN
  // copysign(r, x). r is mathematically >= 0 but is -0 when em is +0 (-(+0)/2), so clear its sign first.
  auto rb = w.reg(RegClass::B32);
  auto sb = w.reg(RegClass::B32);
  I(w, "abs.f32 {}, {};", r, r);
  I(w, "mov.b32 {}, {};", rb, r);
  I(w, "mov.b32 {}, {};", sb, x);
  I(w, "and.b32 {}, {}, 0x80000000;", sb, sb);
  I(w, "or.b32 {}, {}, {};", rb, rb, sb);
  I(w, "mov.b32 {}, {};", dst, rb);
}

void emit_pow_f32(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y) {
  w.comment("pow.f32: exp(y * log|x|) with C's special cases");
  auto ax = w.reg(RegClass::F32);
  auto l = w.reg(RegClass::F32);
  auto t = w.reg(RegClass::F32);
  auto r = w.reg(RegClass::F32);
  I(w, "abs.f32 {}, {};", ax, x);
  emit_log_f32(w, l, ax);
  I(w, "mul.rn.f32 {}, {}, {};", t, y, l);
  emit_exp_f32(w, r, t);
  // Is y integral, and odd? (+-inf counts as even and integral, NaN as neither.)
  auto yi = w.reg(RegClass::F32);
  auto hy = w.reg(RegClass::F32);
  auto hyi = w.reg(RegClass::F32);
  auto pint = w.reg(RegClass::Pred);
  auto podd = w.reg(RegClass::Pred);
  I(w, "cvt.rzi.f32.f32 {}, {};", yi, y);
  I(w, "setp.eq.f32 {}, {}, {};", pint, yi, y);
  I(w, "mul.rn.f32 {}, {}, 0f3F000000;", hy, y);
  I(w, "cvt.rzi.f32.f32 {}, {};", hyi, hy);
  I(w, "setp.ne.and.f32 {}, {}, {}, {};", podd, hyi, hy, pint);
  // pow(+-1, y) = 1 (the sign fix below makes pow(-1, odd) = -1).
  auto pone = w.reg(RegClass::Pred);
  I(w, "setp.eq.f32 {}, {}, 0f3F800000;", pone, ax);
  I(w, "selp.f32 {}, 0f3F800000, {}, {};", r, r, pone);
  // A negative x (sign bit set, so -0 too) with odd integral y gives a negative result.
  auto xb = w.reg(RegClass::B32);
  auto pflip = w.reg(RegClass::Pred);
  auto rn = w.reg(RegClass::F32);
  I(w, "mov.b32 {}, {};", xb, x);
  I(w, "setp.lt.and.s32 {}, {}, 0, {};", pflip, xb, podd);
  I(w, "neg.f32 {}, {};", rn, r);
  I(w, "selp.f32 {}, {}, {}, {};", r, rn, r, pflip);
  // x < 0 with non-integral y: NaN.
  auto pnan = w.reg(RegClass::Pred);
  auto pnint = w.reg(RegClass::Pred);
  I(w, "not.pred {}, {};", pnint, pint);
  I(w, "setp.lt.and.f32 {}, {}, 0f00000000, {};", pnan, x, pnint);
  I(w, "selp.f32 {}, 0f7FFFFFFF, {}, {};", r, r, pnan);
  // pow(x, +-0) = 1 for every x, NaN included.
  auto pyz = w.reg(RegClass::Pred);
  I(w, "setp.eq.f32 {}, {}, 0f00000000;", pyz, y);
  I(w, "selp.f32 {}, 0f3F800000, {}, {};", dst, r, pyz);
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
