// LeNet's training step (forward, loss, every gradient, then the SGD update) compiled for cuda:0 and run
// through the mock driver, whose kernels the PTX interpreter executes, against the float64 reference
// evaluator: the whole model path of the CUDA backend checked without a GPU. Skips without the mock.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"

namespace spire::rt::cuda::testing {
namespace cuda_lenet_mock_test {  // named, not anonymous: test executables build as unity batches

bool mock_loaded() {
  (void)driver();
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

graph::Tensor uniform(graph::Shape shape, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  graph::Tensor t(graph::DType::F32, std::move(shape));
  for (auto& v : t.data) v = d(rng);
  return t.round_to_dtype();
}

graph::Tensor labels(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 9);
  graph::Tensor t(graph::DType::I64, {n});
  for (auto& v : t.data) v = d(rng);
  return t;
}

// max |got - want| <= rel * max |want|, per tensor.
void expect_close(const graph::Tensor& got, const graph::Tensor& want, double rel, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  double max_want = 0, max_err = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    max_want = std::max(max_want, std::fabs(want.data[i]));
    double e = std::fabs(got.data[i] - want.data[i]);
    max_err = std::isnan(e) ? INFINITY : std::max(max_err, e);
  }
  EXPECT_LE(max_err, rel * max_want) << what << ": max error " << max_err << " of max |value| " << max_want;
}

TEST(LeNetOnMockCuda, TrainingStepsMatchTheReference) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  auto dev = cuda::open(0);
  nn::LeNetGraphOptions opt;
  opt.batch = 4;
  opt.sgd = true;
  graph::Graph g = nn::build_lenet_graph(opt);
  std::map<std::string, graph::Tensor> inputs;
  for (auto& [name, t] : nn::lenet_initial_parameters(7)) {
    inputs[name] = t;
    inputs["momentum." + name] = graph::Tensor(t.dtype, t.shape, 0.0);  // SGD momentum starts at zero
  }
  inputs["x"] = uniform({4, 1, 28, 28}, 61, 0.0, 1.0);
  inputs["y"] = labels(4, 62);

  auto exe = lowering::compile(g, *dev);
  for (const auto& [name, t] : inputs) exe->set(name, t);
  exe->step();
  auto reference = graph::evaluate(g, inputs);
  for (const auto& o : g.outputs())
    expect_close(exe->get(o.name), reference.at(o.name), 1e-4, "step 1 output " + o.name);
  // The updated parameters (state updates copied back inside the stream) feed the second step.
  for (auto& [name, t] : nn::lenet_initial_parameters(7)) {
    graph::Tensor updated = exe->get(name);
    EXPECT_NE(updated.data, t.data) << name << " was not updated by the SGD step";
  }
  exe->step();
  EXPECT_TRUE(std::isfinite(exe->get("loss").data.at(0)));
}

}  // namespace cuda_lenet_mock_test
}  // namespace spire::rt::cuda::testing
