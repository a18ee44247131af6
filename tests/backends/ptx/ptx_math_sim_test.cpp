// The f32 math sequences of backends/ptx/ptx_math.cpp, run instruction by instruction on the host
// (tests/backends/ptx/ptx_sim.h) and compared with libm in double: the accuracy the GPU will deliver, checked here,
// with ex2.approx modelled exact and also 2 ulp off either way (the hardware's error).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "backends/ptx/ptx_math.h"
#include "tests/backends/ptx/ptx_sim.h"

namespace spire::ptx::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using Emit1 = void (*)(PtxWriter&, const std::string&, const std::string&);
using Emit2 = void (*)(PtxWriter&, const std::string&, const std::string&, const std::string&);

struct Routine {
  std::string body, dst;
};

Routine emit1(Emit1 emit) {
  PtxWriter w;
  std::string dst = w.reg(RegClass::F32);
  emit(w, dst, "%in0");
  return {w.body(), dst};
}

Routine emit2(Emit2 emit) {
  PtxWriter w;
  std::string dst = w.reg(RegClass::F32);
  emit(w, dst, "%in0", "%in1");
  return {w.body(), dst};
}

// One parsed program per (routine, ex2 model), run for many inputs.
float run(const Routine& r, int ulps, float x, float y = 0) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<PtxSim>> cache;
  auto& sim = cache[{r.body, ulps}];
  if (!sim) sim = std::make_unique<PtxSim>(r.body, ulps);
  sim->set_f32("%in0", x);
  sim->set_f32("%in1", y);
  sim->run();
  return sim->f32(r.dst);
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

// Checks every x with every ex2 error model; the reference is exact where f32 overflows, underflows to zero
// or is not a number.
void check_unary(Emit1 emit, const std::vector<float>& xs, double (*ref)(double), double rel, const char* what) {
  Routine r = emit1(emit);
  for (int ulps : {0, 2, -2}) {
    double worst = 0;
    float worst_x = 0;
    for (float x : xs) {
      double want = ref(double(x));
      float got = run(r, ulps, x);
      float want_f = float(want);
      if (std::fpclassify(want_f) == FP_SUBNORMAL) {  // f32 has no relative precision left there
        ASSERT_NEAR(got, want, rel * std::abs(want) + 2 * std::numeric_limits<float>::denorm_min())
            << what << "(" << x << ") (ex2 off by " << ulps << " ulp)";
        continue;
      }
      if (std::isnan(want) || std::isinf(want_f) || want_f == 0) {
        ASSERT_TRUE(same(got, want_f)) << what << "(" << x << ") = " << got << ", want " << want_f << " (ex2 off by "
                                       << ulps << " ulp)";
        continue;
      }
      double e = std::abs(double(got) - want) / std::abs(want);
      if (e > worst) worst = e, worst_x = x;
      ASSERT_LE(e, rel) << what << "(" << x << ") = " << got << ", want " << want << " (ex2 off by " << ulps << " ulp)";
    }
    std::cout << what << " with ex2 off by " << ulps << " ulp: worst relative error " << worst << " at " << worst_x
              << "\n";
  }
}

std::vector<float> uniform(float lo, float hi, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(PtxMathSim, Exp) {
  auto xs = uniform(-87.3f, 88.7f, 40000, 1);
  for (float s : {0.0f, -0.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, 88.72f, 88.73f, 89.0f, 1000.0f, -87.4f, -103.9f,
                  -104.0f, -150.0f, kInf, -kInf, kNaN})
    xs.push_back(s);
  // exp of results in f32's subnormal range loses relative precision by nature; compare those absolutely.
  Routine r = emit1(emit_exp_f32);
  for (float x : {-88.0f, -95.0f, -100.0f, -103.0f}) {
    float got = run(r, 0, x);
    EXPECT_NEAR(got, std::exp(double(x)), 2e-45) << x;
  }
  check_unary(emit_exp_f32, xs, [](double v) { return std::exp(v); }, 1e-6, "exp");
}

TEST(PtxMathSim, Log) {
  std::vector<float> xs;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> e(-149, 128), near(-1e-3f, 1e-3f);
  for (int i = 0; i < 25000; ++i) xs.push_back(std::exp2(e(rng)));
  for (int i = 0; i < 15000; ++i) xs.push_back(1.0f + near(rng));
  for (float s : {1.0f, 2.0f, 0.5f, 1.4142135f, 1.4142137f, 0.70710677f, 1e-40f, 1e-45f, 3.4e38f, 0.0f, -0.0f,
                  -1.0f, kInf, -kInf, kNaN})
    xs.push_back(s);
  check_unary(emit_log_f32, xs, [](double v) { return std::log(v); }, 1e-6, "log");
}

TEST(PtxMathSim, Tanh) {
  auto xs = uniform(-12.0f, 12.0f, 40000, 3);
  auto small = uniform(-0.5f, 0.5f, 10000, 4);
  xs.insert(xs.end(), small.begin(), small.end());
  for (float s : {0.0f, -0.0f, 1e-30f, -1e-20f, 1e-5f, 0.35f, 0.3499999f, 0.3500001f, 9.0f, 50.0f, -50.0f, kInf,
                  -kInf, kNaN})
    xs.push_back(s);
  check_unary(emit_tanh_f32, xs, [](double v) { return std::tanh(v); }, 1e-6, "tanh");
}

TEST(PtxMathSim, PowWithinDocumentedBound) {
  Routine r = emit2(emit_pow_f32);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> bx(0.001f, 1000.0f), by(-12.0f, 12.0f);
  for (int ulps : {0, 2, -2}) {
    double worst = 0;
    for (int i = 0; i < 20000; ++i) {
      float x = bx(rng), y = by(rng);
      double want = std::pow(double(x), double(y));
      if (!std::isfinite(float(want)) || float(want) == 0 || std::abs(want) < 1e-37) continue;
      double bound = std::abs(double(y) * std::log(double(x))) * 2.4e-7 + 1e-6;
      double e = std::abs(double(run(r, ulps, x, y)) - want) / want;
      worst = std::max(worst, e / bound);
      ASSERT_LE(e, bound) << "pow(" << x << ", " << y << ") ex2 off by " << ulps;
    }
    std::cout << "pow with ex2 off by " << ulps << " ulp: worst error " << worst << " of the documented bound\n";
  }
  // C's special cases, against the host's powf.
  const float cases[][2] = {{-2, 3}, {-2, 0.5f}, {-2, 2}, {5, 0}, {kNaN, 0}, {1, kNaN}, {kNaN, 1}, {0, 2}, {0, -1},
                            {-0.0f, -3}, {-0.0f, 3}, {-0.0f, 0.5f}, {-1, kInf}, {-1, 3}, {-1, kNaN}, {2, kInf},
                            {0.5f, kInf}, {2, -kInf}, {-8, 1.0f / 3}, {kInf, -1}, {kInf, 2}, {-kInf, 3}, {4, 0.5f}};
  for (const auto& c : cases) {
    float want = std::pow(c[0], c[1]), got = run(r, 0, c[0], c[1]);
    if (std::isfinite(want) && want != 0)
      EXPECT_NEAR(got, want, 1e-6 * std::abs(want)) << "pow(" << c[0] << ", " << c[1] << ")";
    else
      EXPECT_TRUE(same(got, want)) << "pow(" << c[0] << ", " << c[1] << ") = " << got << ", want " << want;
  }
}

// The f64 routines: no approximate instruction, so one model; libm's double results as the reference.
double run64(Emit1 emit, double x) {
  static std::map<Emit1, std::pair<std::unique_ptr<PtxSim>, std::string>> cache;
  auto& [sim, dst] = cache[emit];
  if (!sim) {
    PtxWriter w;
    dst = w.reg(RegClass::F64);
    emit(w, dst, "%in0");
    sim = std::make_unique<PtxSim>(w.body());
  }
  sim->set_f64("%in0", x);
  sim->run();
  return sim->f64(dst);
}

bool same64(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

void check_unary64(Emit1 emit, const std::vector<double>& xs, double (*ref)(double), double rel, const char* what) {
  double worst = 0, worst_x = 0;
  for (double x : xs) {
    double want = ref(x), got = run64(emit, x);
    if (std::fpclassify(want) == FP_SUBNORMAL) {
      ASSERT_NEAR(got, want, rel * std::abs(want) + 2 * std::numeric_limits<double>::denorm_min()) << what << "(" << x << ")";
      continue;
    }
    if (std::isnan(want) || std::isinf(want) || want == 0) {
      ASSERT_TRUE(same64(got, want)) << what << "(" << x << ") = " << got << ", want " << want;
      continue;
    }
    double e = std::abs(got - want) / std::abs(want);
    if (e > worst) worst = e, worst_x = x;
    ASSERT_LE(e, rel) << what << "(" << x << ") = " << got << ", want " << want;
  }
  std::cout << what << ": worst relative error " << worst << " at " << worst_x << "\n";
}

std::vector<double> uniform64(double lo, double hi, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

const double kInf64 = std::numeric_limits<double>::infinity(), kNaN64 = std::numeric_limits<double>::quiet_NaN();

TEST(PtxMathSim, ExpF64) {
  auto xs = uniform64(-745.0, 709.7, 40000, 7);
  auto small = uniform64(-1, 1, 10000, 8);
  xs.insert(xs.end(), small.begin(), small.end());
  for (double s : {0.0, -0.0, 1e-300, -1e-20, 709.78, 709.79, 710.0, -744.4, -745.2, -800.0, kInf64, -kInf64, kNaN64})
    xs.push_back(s);
  check_unary64(emit_exp_f64, xs, [](double v) { return std::exp(v); }, 1e-15, "exp.f64");
}

TEST(PtxMathSim, LogF64) {
  std::vector<double> xs;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> e(-1074, 1024), near(-1e-6, 1e-6);
  for (int i = 0; i < 25000; ++i) xs.push_back(std::exp2(e(rng)));
  for (int i = 0; i < 15000; ++i) xs.push_back(1.0 + near(rng));
  for (double s : {1.0, 2.0, 0.5, 1.4142135623730951, 0.7071067811865476, 4.9e-324, 1e-310, 1.7e308, 0.0, -0.0,
                   -1.0, kInf64, -kInf64, kNaN64})
    xs.push_back(s);
  check_unary64(emit_log_f64, xs, [](double v) { return std::log(v); }, 1e-15, "log.f64");
}

TEST(PtxMathSim, TanhF64) {
  auto xs = uniform64(-25, 25, 30000, 10);
  auto small = uniform64(-0.5, 0.5, 20000, 11);
  xs.insert(xs.end(), small.begin(), small.end());
  for (double s : {0.0, -0.0, 1e-300, -1e-20, 1e-8, 0.35, 19.0, 20.0, 400.0, kInf64, -kInf64, kNaN64}) xs.push_back(s);
  check_unary64(emit_tanh_f64, xs, [](double v) { return std::tanh(v); }, 1e-15, "tanh.f64");
}

TEST(PtxMathSim, PowF64WithinDocumentedBound) {
  PtxWriter w;
  std::string dst = w.reg(RegClass::F64);
  emit_pow_f64(w, dst, "%in0", "%in1");
  PtxSim sim(w.body());
  auto pow_sim = [&](double x, double y) {
    sim.set_f64("%in0", x);
    sim.set_f64("%in1", y);
    sim.run();
    return sim.f64(dst);
  };
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> bx(1e-3, 1e3), by(-40, 40);
  double worst = 0;
  for (int i = 0; i < 20000; ++i) {
    double x = bx(rng), y = by(rng), want = std::pow(x, y);
    double bound = std::abs(y * std::log(x)) * 4e-16 + 1e-15;
    double e = std::abs(pow_sim(x, y) - want) / want;
    worst = std::max(worst, e / bound);
    ASSERT_LE(e, bound) << "pow(" << x << ", " << y << ")";
  }
  std::cout << "pow.f64: worst error " << worst << " of the documented bound\n";
  const double cases[][2] = {{-2, 3}, {-2, 0.5}, {5, 0}, {kNaN64, 0}, {1, kNaN64}, {0, -1}, {-0.0, -3}, {-0.0, 0.5},
                             {-1, kInf64}, {0.5, kInf64}, {-8, 1.0 / 3}, {-kInf64, 3}, {2, 10}, {10, -2}};
  for (const auto& c : cases) {
    double want = std::pow(c[0], c[1]), got = pow_sim(c[0], c[1]);
    if (std::isfinite(want) && want != 0)
      EXPECT_NEAR(got, want, 1e-15 * std::abs(want)) << "pow(" << c[0] << ", " << c[1] << ")";
    else
      EXPECT_TRUE(same64(got, want)) << "pow(" << c[0] << ", " << c[1] << ") = " << got << ", want " << want;
  }
}

TEST(PtxMathSim, FmodIsExactCFmod) {
  PtxWriter w;
  std::string dst = w.reg(RegClass::F64);
  emit_fmod_f64(w, dst, "%in0", "%in1");
  PtxSim sim(w.body());
  auto fmod_sim = [&](double x, double y) {
    sim.set_f64("%in0", x);
    sim.set_f64("%in1", y);
    sim.run();
    return sim.f64(dst);
  };
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> d(-1e6, 1e6), e(-40, 40);
  for (int i = 0; i < 30000; ++i) {
    double x = d(rng), y = std::copysign(std::exp2(e(rng)), d(rng));
    if (std::abs(x / y) >= 9e15) continue;  // the documented exact range
    double want = std::fmod(x, y), got = fmod_sim(x, y);
    ASSERT_EQ(got, want) << "fmod(" << x << ", " << y << ")";
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << "fmod(" << x << ", " << y << ")";
  }
  // Quotients just below an integer, where a rounded x/y overshoots.
  for (double y : {0.1, 0.3, 1.0 / 3, 0.7}) {
    for (int k = 1; k < 2000; ++k) {
      double x = std::nextafter(k * y, 0.0);
      ASSERT_EQ(fmod_sim(x, y), std::fmod(x, y)) << "fmod(" << x << ", " << y << ")";
    }
  }
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double cases[][2] = {{-4, 2}, {4, -2}, {5.5, inf}, {-5.5, -inf}, {3, 0}, {inf, 2}, {nan, 1}, {1, nan}, {0, 3}, {-0.0, 3}};
  for (const auto& c : cases) {
    double want = std::fmod(c[0], c[1]), got = fmod_sim(c[0], c[1]);
    EXPECT_TRUE((std::isnan(want) && std::isnan(got)) || (want == got && std::signbit(want) == std::signbit(got)))
        << "fmod(" << c[0] << ", " << c[1] << ") = " << got << ", want " << want;
  }
}

}  // namespace
}  // namespace spire::ptx::testing
