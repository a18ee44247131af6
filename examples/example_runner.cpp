#include "backends/compile_kernel.h"
#include "examples/example_runner.h"

#include <cmath>
#include <cstring>
#include <random>

#include "examples/builtin_kernels.h"

namespace spire::examples {

namespace {

std::vector<float> random_floats(uint64_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool is_poison(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits == kPoison;
}

std::shared_ptr<rt::Buffer> upload(rt::Device& dev, const std::vector<float>& v) {
  auto b = dev.alloc(std::max<uint64_t>(v.size(), 1) * 4);
  dev.upload(*b, v.data(), v.size() * 4);
  return b;
}

std::shared_ptr<rt::Buffer> poisoned(rt::Device& dev, uint64_t n) {
  auto b = dev.alloc(std::max<uint64_t>(n, 1) * 4);
  dev.fill(*b, kPoison);
  return b;
}

// Compares an elementwise output with the CPU's answer, counting unwritten (poisoned) elements.
void compare(ExampleResult& r, const std::vector<float>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (is_poison(got[i])) {
      ++r.unwritten;
      continue;
    }
    double err = std::abs(double(got[i]) - want[i]) / std::max(std::abs(want[i]), 1.0);
    if (!(err <= r.max_rel_error)) r.max_rel_error = std::isnan(err) ? INFINITY : std::max(err, r.max_rel_error);
  }
  r.passed = r.unwritten == 0 && r.max_rel_error <= r.tolerance;
}

// Runs one elementwise kernel over `inputs`, timing it with device timestamps.
std::vector<float> run_elementwise(rt::Device& dev, const kir::Kernel& ir, const std::vector<std::vector<float>>& inputs,
                                   uint64_t n, uint64_t elems_per_group, double& ms) {
  auto kernel = spire::backends::compile_and_load(dev, ir);
  std::vector<std::shared_ptr<rt::Buffer>> bufs;
  for (const auto& in : inputs) bufs.push_back(upload(dev, in));
  auto out = poisoned(dev, n);
  std::vector<rt::BufferView> views;
  for (auto& b : bufs) views.emplace_back(b);
  views.emplace_back(out);
  auto s = dev.record();
  uint32_t t0 = s->timestamp();
  s->dispatch(*kernel, views, rt::ScalarArgs().u32(uint32_t(n)), rt::Grid::threads(n, uint32_t(elems_per_group)));
  uint32_t t1 = s->timestamp();
  dev.run(*s);
  ms = s->elapsed_ms(t0, t1);
  std::vector<float> got(n);
  dev.download(*out, got.data(), n * 4);
  return got;
}

ExampleResult run_vector_add(rt::Device& dev, uint64_t n, uint64_t seed) {
  ExampleResult r{"vector_add", n};
  r.tolerance = 1e-6;  // one rounding of a float add
  auto a = random_floats(n, seed, -10, 10), b = random_floats(n, seed + 1, -10, 10);
  auto got = run_elementwise(dev, vector_add_kernel(), {a, b}, n, 256, r.device_ms);
  std::vector<double> want(n);
  for (uint64_t i = 0; i < n; ++i) want[i] = double(a[i]) + double(b[i]);
  compare(r, got, want);
  return r;
}

ExampleResult run_relu(rt::Device& dev, uint64_t n, uint64_t seed) {
  ExampleResult r{"relu", n};
  r.tolerance = 0;  // exact
  auto x = random_floats(n, seed, -1, 1);
  auto got = run_elementwise(dev, relu_kernel(), {x}, n, kReluBlock, r.device_ms);
  std::vector<double> want(n);
  for (uint64_t i = 0; i < n; ++i) want[i] = std::max(double(x[i]), 0.0);
  compare(r, got, want);
  return r;
}

ExampleResult run_silu(rt::Device& dev, uint64_t n, uint64_t seed) {
  ExampleResult r{"silu", n};
  r.tolerance = 1e-5;  // float32 exp and divide on GPUs are within a few ulp
  auto x = random_floats(n, seed, -20, 20);
  auto got = run_elementwise(dev, silu_kernel(), {x}, n, 256, r.device_ms);
  std::vector<double> want(n);
  for (uint64_t i = 0; i < n; ++i) want[i] = double(x[i]) / (1.0 + std::exp(-double(x[i])));
  compare(r, got, want);
  return r;
}

ExampleResult run_add_relu(rt::Device& dev, uint64_t n, uint64_t seed) {
  ExampleResult r{"add_relu", n};
  r.tolerance = 1e-6;
  auto a = random_floats(n, seed, -1, 1), b = random_floats(n, seed + 1, -1, 1);
  auto got = run_elementwise(dev, add_relu_kernel(), {a, b}, n, 256, r.device_ms);
  std::vector<double> want(n);
  for (uint64_t i = 0; i < n; ++i) want[i] = std::max(double(a[i]) + double(b[i]), 0.0);
  compare(r, got, want);
  return r;
}

// Sums by repeated passes, each shrinking the vector 256-fold, all recorded in one command stream.
ExampleResult run_sum(rt::Device& dev, uint64_t n, uint64_t seed) {
  ExampleResult r{"sum_reduce", n};
  auto x = random_floats(n, seed, -1, 1);
  auto kernel = spire::backends::compile_and_load(dev, sum_reduce_pass_kernel());
  std::vector<std::shared_ptr<rt::Buffer>> levels{upload(dev, x)};
  std::vector<uint64_t> sizes{n};
  while (sizes.back() > 1) {
    uint64_t next = (sizes.back() + kReduceWorkgroup - 1) / kReduceWorkgroup;
    levels.push_back(poisoned(dev, next));
    sizes.push_back(next);
  }
  if (n == 1) levels.push_back(levels[0]);  // nothing to reduce; the answer is x[0]
  auto s = dev.record();
  uint32_t t0 = s->timestamp();
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    if (l) s->barrier();
    rt::BufferView views[] = {rt::BufferView(levels[l]), rt::BufferView(levels[l + 1])};
    s->dispatch(*kernel, views, rt::ScalarArgs().u32(uint32_t(sizes[l])), rt::Grid::threads(sizes[l], kReduceWorkgroup));
  }
  uint32_t t1 = s->timestamp();
  dev.run(*s);
  r.device_ms = s->elapsed_ms(t0, t1);
  float got = 0;
  dev.download(*levels.back(), &got, 4);
  double want = 0, magnitude = 0;
  for (float v : x) {
    want += v;
    magnitude += std::abs(v);
  }
  r.unwritten = is_poison(got) ? 1 : 0;
  // Float32 tree summation: error grows like log2(n) roundings of partial sums bounded by sum |x|.
  r.tolerance = 1e-6 * std::max(1.0, std::log2(double(n) + 1));
  r.max_rel_error = std::abs(double(got) - want) / std::max(magnitude, 1e-30);
  if (std::isnan(r.max_rel_error)) r.max_rel_error = INFINITY;
  r.passed = r.unwritten == 0 && r.max_rel_error <= r.tolerance;
  return r;
}

}  // namespace

const std::vector<Example>& examples() {
  static const std::vector<Example> all = {
      {"vector_add", "c = a + b", run_vector_add},
      {"relu", "the LeNet article's ReLU: 1024 elements per workgroup", run_relu},
      {"silu", "x * sigmoid(x) in float32", run_silu},
      {"add_relu", "fused add + ReLU", run_add_relu},
      {"sum_reduce", "sum of a vector through workgroup memory and barriers", run_sum},
  };
  return all;
}

}  // namespace spire::examples
