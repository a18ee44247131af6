// A layer_norm or rms_norm read only as the A of few-rows products (fuse.h's absorbed norms, matvec_kernel.h's
// RowNorm): the products normalize A's rows as they read them, and the norm has no launch. The plan on an H100-like
// target, and the results on every device present against the float64 evaluator (outputs poisoned by the executor):
// both norms, B as stored and transposed in place, one and three rows, rows staged normalized in workgroup memory and
// rows too long for that, a bf16 input cast up, and the norms that must keep their launch.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/float64_step_check.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace norm_prologue_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

constexpr int64_t kK = 40, kN = 72;

struct Form {
  const char* name;
  bool layer = true;         // layer_norm; else rms_norm
  bool transposed = false;   // B read as the transpose of a [N, K] weight
  int64_t rows = 1;
  bool norm_output = false;  // the norm's result is also an output: stored, so not absorbed
  bool other_reader = false; // an add reads the norm too: not absorbed
  bool half_input = false;   // the norm reads a bf16 value cast up (a half policy's residual stream): the product reads
                             // the bf16 value in place, the cast has no launch
  int64_t k = kK;            // 8200: rows too long for the kernel to stage normalized (it normalizes each read)
  bool absorbed() const { return !norm_output && !other_reader; }
};

graph::Graph graph_of(const Form& f) {
  graph::Graph g;
  Value x = g.input("x", DType::F32, {1, f.rows, f.k});
  if (f.half_input) x = g.cast(g.cast(x, DType::BF16), DType::F32);
  const Value scale = g.parameter("scale", DType::F32, {f.k});
  const Value y = f.layer ? g.op("layer_norm", {x, scale, g.parameter("bias", DType::F32, {f.k})}, {{"epsilon", 1e-5}})
                          : g.op("rms_norm", {x, scale}, {{"epsilon", 1e-6}});
  const Value w = f.transposed ? g.permute(g.parameter("w", DType::F32, {kN, f.k}), {1, 0})
                               : g.parameter("w", DType::F32, {f.k, kN});
  g.output("out", g.matmul(y, w));
  if (f.norm_output) g.output("normalized", y);
  if (f.other_reader) g.output("shifted", g.add(y, 1.0));
  return g;
}

std::vector<Form> forms() {
  return {{"layer_norm"},
          {"rms_norm", false},
          {"layer_norm, B transposed", true, true},
          {"rms_norm, B transposed", false, true},
          {"layer_norm, three rows", true, false, 3},
          {"rms_norm, three rows, B transposed", false, true, 3},
          {"the norm an output", true, false, 1, true},
          {"the norm read by an add", true, false, 1, false, true},
          {"the norm of a bf16 value", true, false, 1, false, false, true},
          {"rms_norm of a bf16 value, B transposed", false, true, 1, false, false, true},
          {"layer_norm, rows too long to stage", true, false, 1, false, false, false, 8200},
          {"rms_norm, rows too long to stage, B transposed", false, true, 2, false, false, false, 8200}};
}

TEST(NormProloguePlan, AbsorbedNormsHaveNoLaunch) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const lowering::Plan plan = lowering::lower(graph_of(f), testing_support::h100_like_target());
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    int norms = 0, products_with_norm = 0, casts_up = 0, half_a = 0;
    for (const std::string& k : kernels) {
      norms += k.rfind("layer_norm", 0) == 0 || k.rfind("rms_norm", 0) == 0;
      products_with_norm += k.rfind("matvec_", 0) == 0 && k.find("_norm_") != std::string::npos;
      casts_up += k.rfind("cast_from_bf16", 0) == 0;
      half_a += k.rfind("matvec_", 0) == 0 && k.find("_abf16") != std::string::npos;
    }
    EXPECT_EQ(norms, f.absorbed() ? 0 : 1) << lowering::plan_text(plan);
    EXPECT_EQ(products_with_norm, f.absorbed() ? 1 : 0) << lowering::plan_text(plan);
    EXPECT_EQ(casts_up, 0) << lowering::plan_text(plan);
    EXPECT_EQ(half_a, f.half_input ? 1 : 0) << lowering::plan_text(plan);
  }
}

class NormPrologueOnDevice : public testing_support::OnDevice {};

TEST_P(NormPrologueOnDevice, EveryFormMatchesTheReference) {
  uint32_t seed = 90;
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const graph::Graph g = graph_of(f);
    std::map<std::string, Tensor> in = lowering::testing_support::uniform_inputs(g, seed);
    // Rows off centre and scaled, so that the mean and the variance matter.
    // A bf16 input form gets bf16 values: the float64 evaluator rounds only its outputs, so the cast must be exact.
    for (double& e : in["x"].data) e = graph::round_to(f.half_input ? DType::BF16 : DType::F32, 3 * e + 0.5);
    lowering::testing_support::expect_step_matches_float64(*dev_, g, in, 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, NormPrologueOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NormPrologueOnDevice);

}  // namespace
}  // namespace norm_prologue_test
