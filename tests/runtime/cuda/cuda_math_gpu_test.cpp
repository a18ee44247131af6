// The PTX backend's numerics on a real GPU, against independent host references: IEEE-exact operations must
// match bit for bit, the f32 transcendentals within the bounds documented in backends/ptx/ptx_backend.h.
#include "backends/compile_kernel.h"
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "base/half_bits.h"
#include "ir/kernel/builder.h"
#include "tests/runtime/cuda/cuda_gpu_fixture.h"

namespace spire::rt::cuda::testing {
namespace {

using namespace kir;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

class CudaMath : public CudaGpu {
 protected:
  // out[i] = op(x[i]) for a kernel built by `body`, computed on the device.
  template <class Out, class In>
  std::vector<Out> run_unary(const char* name, Type in_t, Type out_t, const std::vector<In>& x,
                             const std::function<Val(Val)>& body) {
    KernelBuilder kb(name, 128);
    auto bx = kb.buffer("x", in_t, Access::Read);
    auto by = kb.buffer("y", out_t, Access::Write);
    auto n = kb.scalar("n", Type::U32);
    auto i = kb.global_id();
    kb.if_(i < n, [&] { by[i] = body(bx[i]); });
    auto k = spire::backends::compile_and_load(*dev, kb.finish());
    auto in = make(x);
    auto out = poisoned<Out>(x.size());
    BufferView views[] = {*in, *out};
    dev->dispatch_now(*k, views, ScalarArgs().u32(uint32_t(x.size())), Grid::threads(x.size(), 128));
    return read<Out>(*out, x.size());
  }
  template <class T>
  std::vector<T> run_binary(const char* name, Type t, const std::vector<T>& a, const std::vector<T>& b,
                            const std::function<Val(Val, Val)>& body) {
    KernelBuilder kb(name, 128);
    auto ba = kb.buffer("a", t, Access::Read);
    auto bb = kb.buffer("b", t, Access::Read);
    auto by = kb.buffer("y", t, Access::Write);
    auto n = kb.scalar("n", Type::U32);
    auto i = kb.global_id();
    kb.if_(i < n, [&] { by[i] = body(ba[i], bb[i]); });
    auto k = spire::backends::compile_and_load(*dev, kb.finish());
    auto da = make(a), db = make(b);
    auto out = poisoned<T>(a.size());
    BufferView views[] = {*da, *db, *out};
    dev->dispatch_now(*k, views, ScalarArgs().u32(uint32_t(a.size())), Grid::threads(a.size(), 128));
    return read<T>(*out, a.size());
  }
};

std::vector<float> sweep(float lo, float hi, size_t n, uint32_t seed) {
  std::vector<float> v;
  for (size_t i = 0; i < n / 2; ++i) v.push_back(lo + (hi - lo) * float(i) / float(n / 2));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  while (v.size() < n) v.push_back(d(rng));
  return v;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

// Relative error against a double reference; NaN/inf/zero references must match exactly.
void expect_close(const std::vector<float>& x, const std::vector<float>& got, double (*ref)(double), double rel,
                  const char* what) {
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double r = ref(double(x[i]));
    if (std::isnan(r) || std::isinf(r) || r == 0) {
      ASSERT_TRUE(same(got[i], float(r))) << what << "(" << x[i] << ") = " << got[i] << ", want " << r;
      continue;
    }
    double e = std::abs(double(got[i]) - r) / std::abs(r);
    if (e > worst) worst = e, worst_x = x[i];
    ASSERT_LE(e, rel) << what << "(" << x[i] << ") = " << got[i] << ", want " << r;
  }
  std::cout << what << ": worst relative error " << worst << " at x = " << worst_x << "\n";
}

TEST_F(CudaMath, ExpWithinOneMillionth) {
  auto x = sweep(-87.0f, 88.0f, 200000, 11);
  for (float s : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.7f, 89.0f, 100.0f, -104.0f, -200.0f, kInf, -kInf, kNaN}) x.push_back(s);
  auto y = run_unary<float>("t_exp", Type::F32, Type::F32, x, [](Val v) { return exp(v); });
  // Where f32 overflows (or underflows to 0) the reference is that f32 value, not the finite double.
  expect_close(x, y, [](double v) {
    double r = std::exp(v);
    float f = float(r);
    return (std::isinf(f) || f == 0) ? double(f) : r;
  }, 1e-6, "exp");
}

TEST_F(CudaMath, LogWithinOneMillionth) {
  std::vector<float> x;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> e(-126, 127), near(-1e-3f, 1e-3f);
  for (int i = 0; i < 100000; ++i) x.push_back(std::exp2(e(rng)));
  for (int i = 0; i < 50000; ++i) x.push_back(1.0f + near(rng));  // log near 1, where lg2.approx would fail
  for (float s : {1.0f, 2.0f, 0.5f, 1e-40f, 1e-45f, 3e38f, 0.0f, -0.0f, -1.0f, kInf, -kInf, kNaN}) x.push_back(s);
  auto y = run_unary<float>("t_log", Type::F32, Type::F32, x, [](Val v) { return log(v); });
  expect_close(x, y, [](double v) { return std::log(v); }, 1e-6, "log");
}

TEST_F(CudaMath, TanhWithinOneMillionth) {
  auto x = sweep(-12.0f, 12.0f, 200000, 13);
  for (float s : {0.0f, -0.0f, 1e-30f, -1e-20f, 1e-5f, 0.35f, 0.3499f, 0.3501f, 9.0f, 50.0f, -50.0f, kInf, -kInf, kNaN})
    x.push_back(s);
  auto y = run_unary<float>("t_tanh", Type::F32, Type::F32, x, [](Val v) { return tanh(v); });
  expect_close(x, y, [](double v) { return std::tanh(v); }, 1e-6, "tanh");
}

TEST_F(CudaMath, PowWithinDocumentedBound) {
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> bx(0.01f, 100.0f), by(-10.0f, 10.0f);
  std::vector<float> a, b;
  for (int i = 0; i < 100000; ++i) {
    float x = bx(rng), y = by(rng);
    if (std::abs(double(y) * std::log(double(x))) > 80) continue;  // keep results finite
    a.push_back(x);
    b.push_back(y);
  }
  auto y = run_binary<float>("t_pow", Type::F32, a, b, [](Val p, Val q) { return pow(p, q); });
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double r = std::pow(double(a[i]), double(b[i]));
    double bound = std::abs(double(b[i]) * std::log(double(a[i]))) * 2.4e-7 + 1e-6;
    double e = std::abs(double(y[i]) - r) / std::abs(r);
    worst = std::max(worst, e);
    ASSERT_LE(e, bound) << "pow(" << a[i] << ", " << b[i] << ") = " << y[i] << ", want " << r;
  }
  std::cout << "pow: worst relative error " << worst << "\n";
  // C's special cases.
  std::vector<float> sa = {-2, -2, 5, kNaN, 1, 0, 0, -0.0f, -0.0f, -1, -1, 2, 0.5f, -8};
  std::vector<float> sb = {3, 0.5f, 0, 0, kNaN, 2, -1, -3, 0.5f, kInf, 3, kInf, kInf, 1.0f / 3};
  auto sy = run_binary<float>("t_pow_special", Type::F32, sa, sb, [](Val p, Val q) { return pow(p, q); });
  for (size_t i = 0; i < sa.size(); ++i) {
    float want = std::pow(sa[i], sb[i]);
    if (std::abs(want) > 1e-30f && std::isfinite(want)) {
      EXPECT_NEAR(sy[i], want, 1e-6 * std::abs(want)) << "pow(" << sa[i] << ", " << sb[i] << ")";
    } else {
      EXPECT_TRUE(same(sy[i], want)) << "pow(" << sa[i] << ", " << sb[i] << ") = " << sy[i] << ", want " << want;
    }
  }
}

TEST_F(CudaMath, IeeeExactOpsMatchTheHost) {
  std::mt19937 rng(15);
  std::uniform_real_distribution<float> d(-1000, 1000);
  std::vector<float> a, b;
  for (int i = 0; i < 50000; ++i) {
    a.push_back(d(rng));
    float y = d(rng) / 100;
    b.push_back(y == 0 ? 1 : y);
  }
  a.insert(a.end(), {-4.0f, 4.0f, 5.5f, -0.0f, 1e-40f, kInf, 3.0f});
  b.insert(b.end(), {2.0f, -2.0f, kInf, 1.0f, 3e-41f, 2.0f, 0.0f});
  auto check = [&](const char* name, std::function<Val(Val, Val)> op, std::function<float(float, float)> ref) {
    auto y = run_binary<float>(name, Type::F32, a, b, op);
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_TRUE(same(y[i], ref(a[i], b[i]))) << name << "(" << a[i] << ", " << b[i] << ") = " << y[i] << ", want "
                                              << ref(a[i], b[i]);
  };
  check("t_add", [](Val p, Val q) { return p + q; }, [](float p, float q) { return p + q; });
  check("t_mul", [](Val p, Val q) { return p * q; }, [](float p, float q) { return p * q; });
  check("t_div", [](Val p, Val q) { return p / q; }, [](float p, float q) { return p / q; });
  check("t_fmod", [](Val p, Val q) { return p % q; }, [](float p, float q) { return std::fmod(p, q); });
  check("t_muladd", [](Val p, Val q) { return p * q + p; }, [](float p, float q) {
    volatile float m = p * q;  // no contraction on the host either
    return m + p;
  });
  auto x = sweep(0, 1e6f, 50000, 16);
  x.insert(x.end(), {0.0f, -0.0f, 1e-40f, kInf, -1.0f, kNaN, 4.0f});
  auto sq = run_unary<float>("t_sqrt", Type::F32, Type::F32, x, [](Val v) { return sqrt(v); });
  auto rs = run_unary<float>("t_rsqrt", Type::F32, Type::F32, x, [](Val v) { return rsqrt(v); });
  auto fl = run_unary<float>("t_floor", Type::F32, Type::F32, x, [](Val v) { return floor(v - 500000.5f); });
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(same(sq[i], std::sqrt(x[i]))) << "sqrt(" << x[i] << ")";
    ASSERT_TRUE(same(rs[i], 1.0f / std::sqrt(x[i]))) << "rsqrt(" << x[i] << ")";
    ASSERT_TRUE(same(fl[i], std::floor(x[i] - 500000.5f))) << "floor(" << x[i] << " - 500000.5)";
  }
}

TEST_F(CudaMath, IntegerOpsHaveCSemantics) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> d(-100000, 100000);
  std::vector<int32_t> a, b;
  for (int i = 0; i < 20000; ++i) {
    a.push_back(d(rng));
    int32_t y = d(rng) / 1000;
    b.push_back(y == 0 ? -7 : y);
  }
  auto div = run_binary<int32_t>("t_idiv", Type::I32, a, b, [](Val p, Val q) { return p / q; });
  auto rem = run_binary<int32_t>("t_irem", Type::I32, a, b, [](Val p, Val q) { return p % q; });
  auto shr = run_binary<int32_t>("t_ishr", Type::I32, a, b, [](Val p, Val q) { return p >> (q & 15); });
  auto mn = run_binary<int32_t>("t_imin", Type::I32, a, b, [](Val p, Val q) { return min(p, q) - select(p < q, p, q); });
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(div[i], a[i] / b[i]) << a[i] << " / " << b[i];
    ASSERT_EQ(rem[i], a[i] % b[i]) << a[i] << " % " << b[i];
    ASSERT_EQ(shr[i], a[i] >> (b[i] & 15)) << a[i] << " >> " << (b[i] & 15);
    ASSERT_EQ(mn[i], 0);
  }
  std::vector<uint32_t> ua, ub;
  for (size_t i = 0; i < a.size(); ++i) {
    ua.push_back(uint32_t(a[i]) * 2654435761u);
    ub.push_back(uint32_t(b[i]) | 1u);
  }
  auto udiv = run_binary<uint32_t>("t_udiv", Type::U32, ua, ub, [](Val p, Val q) { return p / q; });
  auto ushr = run_binary<uint32_t>("t_ushr", Type::U32, ua, ub, [](Val p, Val q) { return p >> (q & 31u); });
  auto ult = run_binary<uint32_t>("t_ult", Type::U32, ua, ub,
                                  [](Val p, Val q) { return select(p < q, p.builder()->u32(1), p.builder()->u32(0)); });
  for (size_t i = 0; i < ua.size(); ++i) {
    ASSERT_EQ(udiv[i], ua[i] / ub[i]);
    ASSERT_EQ(ushr[i], ua[i] >> (ub[i] & 31u));
    ASSERT_EQ(ult[i], ua[i] < ub[i] ? 1u : 0u) << ua[i] << " < " << ub[i] << " (unsigned)";
  }
}

TEST_F(CudaMath, ConversionsRoundAsDocumented) {
  std::vector<float> x = sweep(-3e9f, 3e9f, 20000, 18);
  x.insert(x.end(), {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 65519.0f, 65520.0f, 1e-6f, 6e-8f, 3e-8f});
  auto to_i = run_unary<int32_t>("t_f2i", Type::F32, Type::I32, x, [](Val v) {
    return cast(min(max(v, -2e9f), 2e9f), Type::I32);  // in range: truncation toward zero
  });
  auto to_h = run_unary<uint16_t>("t_f2h", Type::F32, Type::F16, x, [](Val v) { return cast(v, Type::F16); });
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(to_i[i], int32_t(std::min(std::max(x[i], -2e9f), 2e9f))) << x[i];
    ASSERT_EQ(to_h[i], spire::f32_to_f16_bits(x[i])) << x[i];
  }
  std::vector<int32_t> ints;
  std::mt19937 rng(19);
  std::uniform_int_distribution<int32_t> d(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  for (int i = 0; i < 20000; ++i) ints.push_back(d(rng));
  auto i2f = run_unary<float>("t_i2f", Type::I32, Type::F32, ints, [](Val v) { return cast(v, Type::F32); });
  auto i2l = run_unary<int64_t>("t_i2l", Type::I32, Type::I64, ints, [](Val v) { return cast(v, Type::I64); });
  for (size_t i = 0; i < ints.size(); ++i) {
    ASSERT_EQ(i2f[i], float(ints[i])) << ints[i];  // round to nearest even, as the host
    ASSERT_EQ(i2l[i], int64_t(ints[i])) << ints[i];
  }
  std::vector<double> dbl;
  std::uniform_real_distribution<double> dd(-1e10, 1e10);
  for (int i = 0; i < 20000; ++i) dbl.push_back(dd(rng));
  auto d2f = run_unary<float>("t_d2f", Type::F64, Type::F32, dbl, [](Val v) { return cast(v, Type::F32); });
  for (size_t i = 0; i < dbl.size(); ++i) ASSERT_EQ(d2f[i], float(dbl[i])) << dbl[i];
}

TEST_F(CudaMath, HalfArithmeticRoundsThroughF32) {
  std::mt19937 rng(20);
  std::uniform_real_distribution<float> d(-300, 300);
  std::vector<uint16_t> a, b;
  for (int i = 0; i < 20000; ++i) {
    a.push_back(spire::f32_to_f16_bits(d(rng)));
    b.push_back(spire::f32_to_f16_bits(d(rng)));
  }
  auto y = run_binary<uint16_t>("t_hmul_add", Type::F16, a, b, [](Val p, Val q) { return p * q + p; });
  for (size_t i = 0; i < a.size(); ++i) {
    float pa = spire::f16_bits_to_f32(a[i]), pb = spire::f16_bits_to_f32(b[i]);
    float prod = spire::f16_bits_to_f32(spire::f32_to_f16_bits(pa * pb));
    uint16_t want = spire::f32_to_f16_bits(prod + pa);
    ASSERT_EQ(y[i], want) << pa << " * " << pb << " + " << pa;
  }
}

TEST_F(CudaMath, DoubleArithmeticIsExact) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> d(-1e6, 1e6);
  std::vector<double> a, b;
  for (int i = 0; i < 20000; ++i) {
    a.push_back(d(rng));
    b.push_back(d(rng));
  }
  auto y = run_binary<double>("t_dops", Type::F64, a, b, [](Val p, Val q) { return sqrt(abs(p / q)) + floor(p * q); });
  for (size_t i = 0; i < a.size(); ++i) {
    volatile double m = a[i] * b[i];
    ASSERT_EQ(y[i], std::sqrt(std::abs(a[i] / b[i])) + std::floor(m)) << a[i] << ", " << b[i];
  }
}

TEST_F(CudaMath, DoubleTranscendentalsToAFewUlp) {
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> wide(-700, 700), unit(-3, 3), mag(-1000, 1000);
  std::vector<double> ex, lg, th;
  for (int i = 0; i < 20000; ++i) {
    ex.push_back(wide(rng));
    lg.push_back(std::exp2(mag(rng)));
    th.push_back(unit(rng));
  }
  auto check = [&](const char* name, const std::vector<double>& x, std::function<Val(Val)> op, double (*ref)(double)) {
    auto y = run_unary<double>(name, Type::F64, Type::F64, x, op);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double want = ref(x[i]), e = std::abs(y[i] - want) / std::abs(want);
      worst = std::max(worst, e);
      ASSERT_LE(e, 1e-15) << name << "(" << x[i] << ") = " << y[i] << ", want " << want;
    }
    std::cout << name << ": worst relative error " << worst << "\n";
  };
  check("t_exp64", ex, [](Val v) { return exp(v); }, [](double v) { return std::exp(v); });
  check("t_log64", lg, [](Val v) { return log(v); }, [](double v) { return std::log(v); });
  check("t_tanh64", th, [](Val v) { return tanh(v); }, [](double v) { return std::tanh(v); });
}

}  // namespace
}  // namespace spire::rt::cuda::testing
