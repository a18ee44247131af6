// A few-rows product whose result is read only as its two halves by one pointwise tree (fuse.h's paired epilogues:
// SwiGLU's silu(gate) * up over the merged gate and up product): the product's launch computes the tree from each pair
// of its columns and stores it alone. The plan on an H100-like target, and the results on every device present against
// the float64 evaluator (outputs poisoned by the executor): the halves read once each (fused slices) and the gate read
// twice (a window), the product's epilogue in between (a bf16 rounding, as the half policies store a product), a norm
// of A, two rows, the halves the other way round, a tree with a leaf of its own; and the forms that keep the tree's
// launch: B as stored, a half also an output, slices that are not halves.
#include <gtest/gtest.h>

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

namespace paired_epilogue_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

constexpr int64_t kK = 48, kH = 40;

struct Form {
  const char* name;
  bool paired = true;        // the tree computed by the product's launch
  int64_t rows = 1;
  bool norm = false;         // A an rms_norm's result (the launch normalizes it as it reads it)
  bool rounded = false;      // the product rounded to bf16 before its halves are read (its epilogue)
  bool swapped = false;      // the tree's gate is the second half
  bool gate_once = false;    // the tree reads each half once (SiLU as gate * sigmoid(gate) reads the gate twice)
  bool leaf = false;         // the tree also adds a parameter of its shape
  bool b_as_stored = false;  // B [K, 2H]: no pairs
  bool half_output = false;  // the up half is also an output
  int64_t second_start = kH; // not kH: the slices are no halves
  double tolerance = 1e-5;
};

Value slice(graph::Graph& g, Value x, int64_t rows, int64_t start, int64_t width) {
  return g.op("slice", {x}, {{"starts", std::vector<int64_t>{0, 0, start}}, {"steps", std::vector<int64_t>{1, 1, 1}},
                             {"shape", std::vector<int64_t>{1, rows, width}}});
}

graph::Graph graph_of(const Form& f) {
  graph::Graph g;
  Value x = g.input("x", DType::F32, {1, f.rows, kK});
  if (f.norm) x = g.op("rms_norm", {x, g.parameter("scale", DType::F32, {kK})}, {{"epsilon", 1e-6}});
  const Value w = f.b_as_stored ? g.parameter("w", DType::F32, {kK, 2 * kH})
                                : g.permute(g.parameter("w", DType::F32, {2 * kH, kK}), {1, 0});
  Value p = g.matmul(x, w);
  if (f.rounded) p = g.cast(p, DType::BF16);
  Value first = slice(g, p, f.rows, 0, kH), second = slice(g, p, f.rows, f.second_start, kH);
  if (f.rounded) {
    first = g.cast(first, DType::F32);
    second = g.cast(second, DType::F32);
  }
  if (f.half_output) g.output("up", second);
  const Value gate = f.swapped ? second : first, up = f.swapped ? first : second;
  Value y = f.gate_once ? g.mul(g.sigmoid(gate), up) : g.mul(g.mul(gate, g.sigmoid(gate)), up);
  if (f.leaf) y = g.add(y, g.parameter("shift", DType::F32, {1, f.rows, kH}));
  if (f.rounded) y = g.cast(y, DType::BF16);
  g.output("out", y);
  return g;
}

std::vector<Form> forms() {
  return {{"SiLU(gate) x up"},
          {"each half read once", true, 1, false, false, false, true},
          {"A an rms_norm's result, two rows", true, 2, true},
          {"the product rounded to bf16 first", true, 1, true, true, false, false, false, false, false, kH, 1e-2},
          {"the halves the other way round", true, 1, false, false, true},
          {"a leaf of the tree's own", true, 3, false, false, false, false, true},
          {"B as stored", false, 1, false, false, false, false, false, true},
          {"a half also an output", false, 1, false, false, false, false, false, false, true},
          {"slices that are not halves", false, 1, false, false, false, false, false, false, false, kH - 8}};
}

TEST(PairedEpiloguePlan, TheProductsLaunchStoresTheTree) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const lowering::Plan plan = lowering::lower(graph_of(f), testing_support::h100_like_target());
    const std::vector<std::string> kernels = lowering::testing_support::kernels_of(plan);
    int paired = 0;
    for (const std::string& k : kernels) paired += k.find("_paired") != std::string::npos;
    EXPECT_EQ(paired, f.paired ? 1 : 0) << lowering::plan_text(plan);
    if (f.paired) EXPECT_EQ(plan.launches.size(), 1u) << lowering::plan_text(plan);  // no launch of the tree's own
    else EXPECT_GE(plan.launches.size(), 2u) << lowering::plan_text(plan);
  }
}

class PairedEpilogueOnDevice : public testing_support::OnDevice {};

TEST_P(PairedEpilogueOnDevice, EveryFormMatchesTheReference) {
  uint32_t seed = 300;
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    const graph::Graph g = graph_of(f);
    lowering::testing_support::expect_step_matches_float64(
        *dev_, g, lowering::testing_support::uniform_inputs(g, seed), f.tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, PairedEpilogueOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PairedEpilogueOnDevice);

}  // namespace
}  // namespace paired_epilogue_test
