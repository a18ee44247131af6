// split_sum_kernel (kernels/split_sum_kernel.h) on every device: the partial sums of a split-K launch
// added in the documented order, computed here on the host in f32 (each of `parts` invocations adds every parts-th
// split in order from zero, then the parts are added in order; one part: the splits in order). The inputs span
// 2^-12 .. 2^12, so another order gives other bits somewhere; outputs start poisoned (DeviceRun), so an output no
// invocation stores shows up.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "kernels/split_sum_kernel.h"
#include "tests/kernels/device_run.h"

namespace split_sum_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;

namespace {

struct Shape {
  uint32_t count, splits, parts;  // parts: what split_sum_parts must choose
};

// The partials [splits][count], spread over 25 binades.
std::vector<float> partials(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<float> v(size_t(s.count) * s.splits);
  for (float& x : v) x = std::ldexp(u(rng), exponent(rng));
  return v;
}

// The documented order, written out independently of the kernel code.
float reference(const std::vector<float>& p, const Shape& s, uint32_t e) {
  if (s.parts == 1) {
    float acc = p[e];
    for (uint32_t sp = 1; sp < s.splits; ++sp) acc += p[size_t(sp) * s.count + e];
    return acc;
  }
  float total = 0;
  for (uint32_t j = 0; j < s.parts; ++j) {
    float acc = 0;
    for (uint32_t sp = j; sp < s.splits; sp += s.parts) acc += p[size_t(sp) * s.count + e];
    total = j == 0 ? acc : total + acc;
  }
  return total;
}

using Param = std::tuple<std::string, Shape>;
class SplitSumOnDevice : public testing::TestWithParam<Param> {};

TEST_P(SplitSumOnDevice, AddsThePartialsInTheDocumentedOrder) {
  const auto& [device_id, s] = GetParam();
  ASSERT_EQ(lowering::heavy::split_sum_parts(s.count, s.splits), s.parts);
  rt::Device& dev = device(device_id);
  const uint64_t messages_before = validation_messages();
  const std::vector<float> p = partials(s, 7 + s.count);
  graph::Graph empty;
  DeviceRun run(dev, empty);
  int32_t in = run.add_slot(kir::Type::F32, int64_t(p.size()), "partial");
  int32_t out = run.add_slot(kir::Type::F32, s.count, "out");
  run.upload(in, graph::Tensor::from(graph::DType::F32, {int64_t(p.size())}, std::vector<double>(p.begin(), p.end())));
  lowering::heavy::HeavyKernel k = lowering::heavy::split_sum_kernel("split_sum_test", kir::Type::F32, s.count, s.splits);
  run.launch(std::move(k.kernel), {in, out}, {}, k.groups);
  run.run();
  graph::Tensor got = run.download(out, graph::DType::F32, {int64_t(s.count)});
  bool order_shows = false;  // a plain left-to-right sum gives other bits somewhere
  int failures = 0;
  for (uint32_t e = 0; e < s.count; ++e) {
    const float want = reference(p, s, e);
    float seq = p[e];
    for (uint32_t sp = 1; sp < s.splits; ++sp) seq += p[size_t(sp) * s.count + e];
    order_shows |= std::bit_cast<uint32_t>(seq) != std::bit_cast<uint32_t>(want);
    if (std::bit_cast<uint32_t>(float(got[e])) != std::bit_cast<uint32_t>(want) && failures++ < 5)
      ADD_FAILURE() << "output " << e << ": got " << got[e] << ", the documented order gives " << want;
  }
  if (s.parts > 1) {
    EXPECT_TRUE(order_shows) << "the inputs do not tell the summation order apart";
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(validation_messages(), messages_before);
}

// LeNet's first and second convolutions' weights over 256 and 512 splits (32 parts), a ragged last round of splits
// (37 outputs over 70 splits: 32 parts, the last round 6 of them), 64 splits (1000 outputs: 32 parts; 5000: 16),
// and one part: many outputs, or fewer than 64 splits (the splits in order, as before parts existed).
INSTANTIATE_TEST_SUITE_P(AllDevices, SplitSumOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()),
                                          testing::Values(Shape{150, 256, 32}, Shape{2400, 512, 32}, Shape{37, 70, 32},
                                                          Shape{1000, 64, 32}, Shape{5000, 64, 16}, Shape{94080, 64, 1},
                                                          Shape{2400, 22, 1})),
                         [](const testing::TestParamInfo<Param>& p) {
                           const Shape& s = std::get<1>(p.param);
                           return fmt::format("{}_{}x{}", test_name_of(std::get<0>(p.param)), s.count, s.splits);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SplitSumOnDevice);

}  // namespace
}  // namespace split_sum_test
