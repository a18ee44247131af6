// The argmax that ends a decode step on the device (tools/spire/next_token.h): over a GPT-2-sized vocabulary, under every
// precision policy on every device present, the id of the largest logit, the first of equal ones (or of NaNs), exactly. Under bf16
// the ids must not be stored in half: bf16 rounds 50001 to 49920.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "base/precision.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "tools/spire/next_token.h"

namespace spire {
namespace {

constexpr int64_t kVocab = 50257;

TEST(NextToken, TheLargestLogitsIdExactlyUnderEveryPolicy) {
  graph::Graph g;
  cli::add_next_token(g, g.input("logits", graph::DType::F32, {1, 1, kVocab}), kVocab);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  graph::Tensor logits(graph::DType::F32, {1, 1, kVocab}, 0.0);
  for (double& x : logits.data) x = double(float(u(rng)));
  for (const auto& info : rt::list_devices()) {
    const auto device = rt::open_device(info.id);
    for (const Precision p : {Precision::Fp32, Precision::Bf16, Precision::F16}) {
      SCOPED_TRACE(info.id + " " + std::string(precision_name(p)));
      auto exe = lowering::compile(g, *device, {.precision = p});
      // One largest logit at an id bf16 cannot hold; then a tie, which the first of goes to.
      for (const auto& [first, second] : {std::pair<int64_t, int64_t>{50001, -1}, {30001, 40003}}) {
        graph::Tensor l = logits;
        l[first] = 8;
        if (second >= 0) l[second] = 8;
        exe->set("logits", l);
        exe->step();
        EXPECT_EQ(exe->get(cli::kNextToken)[0], double(first));
      }
      // A NaN counts as the largest (torch.argmax): the first NaN's position, whatever else the row holds.
      graph::Tensor l = logits;
      l[50001] = 8;
      l[777] = std::numeric_limits<double>::quiet_NaN();
      l[40000] = std::numeric_limits<double>::quiet_NaN();
      exe->set("logits", l);
      exe->step();
      EXPECT_EQ(exe->get(cli::kNextToken)[0], 777.0);
    }
  }
}

}  // namespace
}  // namespace spire
