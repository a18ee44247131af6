// Instruction sequences for the math PTX lacks as accurate single instructions: exp, log, tanh, pow on f32
// and fmod on f32/f64. Each writes its result into `dst`, an already allocated register of the right class.
//
// PTX's own transcendentals (ex2.approx, lg2.approx) are accurate only near their reduced ranges: exp(x) as
// ex2(x*log2(e)) loses about |x| * 2^-24 relative to the rounding of the product, and lg2.approx has an
// absolute (not relative) error near 1, so log(1+eps) would be wrong in the third digit. These routines
// reduce the argument first so the results stay within about 1e-6 relative error (see each function).
#pragma once

#include <string>

#include "backends/ptx/ptx_writer.h"

namespace spire::ptx {

// exp(x), f32. Cody-Waite reduction x = n*ln2 + r (|r| <= ln2/2), 2^(r*log2 e) with ex2.approx, then the
// exact scale by 2^n in two steps so subnormal results round once. NaN, +-inf and overflow behave as C.
void emit_exp_f32(PtxWriter& w, const std::string& dst, const std::string& x);

// log(x), f32. x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2*atanh(f/(2+f)) by its series;
// subnormals are scaled first. log(0) = -inf, log(x<0) = NaN, log(inf) = inf. Error about 2 ulp.
void emit_log_f32(PtxWriter& w, const std::string& dst, const std::string& x);

// tanh(x), f32, as -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x; expm1 from its Taylor series for
// 2|x| < 0.7 (no cancellation near 0) and from exp above. Relative error below 1e-6.
void emit_tanh_f32(PtxWriter& w, const std::string& dst, const std::string& x);

// pow(x, y), f32, as exp(y * log|x|) plus C's special cases: pow(x, +-0) = 1, pow(+-1, y) = 1 (except
// pow(-1, NaN)), negative x gives NaN unless y is integral, and odd integral y keeps the sign of x.
void emit_pow_f32(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y);

// The same four in f64 (relative error a few ulp of double; pow's grows with |y * log x| as in f32):
// exp by Cody-Waite reduction and Taylor series, log by the same atanh series carried further, tanh and pow
// as above. No approximate instruction is used, so the results are reproducible everywhere.
void emit_exp_f64(PtxWriter& w, const std::string& dst, const std::string& x);
void emit_log_f64(PtxWriter& w, const std::string& dst, const std::string& x);
void emit_tanh_f64(PtxWriter& w, const std::string& dst, const std::string& x);
void emit_pow_f64(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y);

// fmod(x, y) (C semantics: the sign of x), f64 registers: x - trunc(x/y)*y with fma and a one-step fix
// when the rounded quotient overshoots. Exact while |x/y| < 2^53 and the result is representable.
void emit_fmod_f64(PtxWriter& w, const std::string& dst, const std::string& x, const std::string& y);

}  // namespace spire::ptx
