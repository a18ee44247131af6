// The f32 math sequences of backends/ptx/ptx_math.cpp, run instruction by instruction on the host
// (tests/ptx/ptx_sim.h) and compared with libm in double: the accuracy the GPU will deliver, checked here,
// with ex2.approx modelled exact and also 2 ulp off either way (the hardware's error).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "backends/ptx/ptx_math.h"
#include "tests/ptx/ptx_sim.h"

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
