// A long row's argmax in two launches (kernels/argmax_kernel.h: each part's choice, then the choice among the parts),
// run directly on every device (lavapipe too, where the lowering keeps one launch), against the rule worked out here:
// the first (or last) position of the largest value, a NaN counting as the largest. Rows of several parts with ties
// across parts, NaNs in a later part, a shorter last part, bf16 values; outputs poisoned first (DeviceRun).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/argmax_kernel.h"
#include "tests/kernels/device_run.h"

namespace argmax_parts_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

struct Case {
  std::string name;
  int64_t rows, length;
  uint32_t parts;
  bool last = false;
  graph::DType dtype = graph::DType::F32;
  bool nans = false;  // NaNs at two positions past the first part (the first NaN, or the last, is the answer)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Integers from -3 to 3 (ties everywhere), with a 7 at two positions in different parts: the answer is the first or
// the last of them.
std::vector<double> row_values(const Case& c, int64_t row) {
  std::vector<double> v(size_t(c.length));
  for (int64_t i = 0; i < c.length; ++i) v[size_t(i)] = double((i * 5 + row * 3) % 7 - 3);
  v[size_t(c.length / 3 + row)] = 7;
  v[size_t(c.length - 2 - row)] = 7;
  if (c.nans) {
    v[size_t(c.length / 2 + row)] = std::numeric_limits<double>::quiet_NaN();
    v[size_t(c.length - 5)] = std::numeric_limits<double>::quiet_NaN();
  }
  return v;
}

int64_t want_position(const std::vector<double>& v, bool last) {
  int64_t at = -1;
  bool nan = false;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool is_nan = std::isnan(v[i]);
    const bool better = at < 0 || (is_nan && (last || !nan)) ||
                        (!is_nan && !nan && (last ? v[i] >= v[size_t(at)] : v[i] > v[size_t(at)]));
    if (better) at = int64_t(i), nan = nan || is_nan;
  }
  return at;
}

using Param = std::tuple<std::string, Case>;
class ArgmaxPartsOnDevice : public testing::TestWithParam<Param> {};

TEST_P(ArgmaxPartsOnDevice, ChoosesAsOneWorkgroupWould) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  const kir::Type x_type = c.dtype == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F32;
  if (x_type == kir::Type::BF16 && !dev.info().features.has(kir::Feature::BFloat16)) GTEST_SKIP() << "no bf16 here";
  graph::Graph empty;
  DeviceRun run(dev, empty);
  std::vector<double> x;
  for (int64_t r = 0; r < c.rows; ++r)
    for (double e : row_values(c, r)) x.push_back(e);
  const heavy::ArgmaxShape s{.outer = c.rows, .axis = c.length, .inner = 1};
  const int32_t xs = run.add_slot(x_type, int64_t(x.size()), "x");
  const int32_t values = run.add_slot(x_type, c.rows * c.parts, "part_values");
  const int32_t positions = run.add_slot(kir::Type::I32, c.rows * c.parts, "part_positions");
  const int32_t ys = run.add_slot(kir::Type::I32, c.rows, "y");
  run.upload(xs, graph::Tensor::from(c.dtype, {int64_t(x.size())}, x));
  heavy::HeavyKernel parts = heavy::argmax_kernel(s, x_type, kir::Type::F32, c.last, 256, 0, c.parts);
  heavy::HeavyKernel choice = heavy::argmax_of_parts_kernel(s, x_type, kir::Type::F32, c.last, 64, 0, c.parts);
  EXPECT_EQ(parts.groups, uint64_t(c.rows) * c.parts);
  run.launch(std::move(parts.kernel), {xs, values, positions}, {}, parts.groups);
  run.launch(std::move(choice.kernel), {values, positions, ys}, {}, choice.groups);
  run.run();
  const graph::Tensor got = run.download(ys, graph::DType::I32, {c.rows});
  for (int64_t r = 0; r < c.rows; ++r) EXPECT_EQ(int64_t(got[r]), want_position(row_values(c, r), c.last)) << "row " << r;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ArgmaxPartsOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()),
                                          testing::Values(Case{"three_parts_first", 2, 9001, 3},
                                                          Case{"three_parts_last", 2, 9001, 3, true},
                                                          Case{"nans_first", 2, 12289, 4, false, graph::DType::F32, true},
                                                          Case{"nans_last", 2, 12289, 4, true, graph::DType::F32, true},
                                                          Case{"bf16_32_parts", 1, 128256, 32, false, graph::DType::BF16})),
                         [](const auto& p) {
                           std::string id = std::get<0>(p.param);
                           for (char& ch : id) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return id + "_" + std::get<1>(p.param).name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ArgmaxPartsOnDevice);

// The parts a row gets: one below two parts' length or on a CPU device, else about kArgmaxPartLength positions each.
TEST(ArgmaxParts, SplitsLongRowsOnAGpu) {
  EXPECT_EQ(heavy::argmax_parts({.outer = 1, .axis = 128256, .inner = 1}, false), 32u);  // Llama's vocabulary
  EXPECT_EQ(heavy::argmax_parts({.outer = 1, .axis = 50257, .inner = 1}, false), 13u);   // GPT-2's
  EXPECT_EQ(heavy::argmax_parts({.outer = 1, .axis = 128256, .inner = 1}, true), 1u);
  EXPECT_EQ(heavy::argmax_parts({.outer = 4, .axis = 8191, .inner = 1}, false), 1u);
  EXPECT_THROW(heavy::argmax_kernel({.outer = 1, .axis = 10, .inner = 1}, kir::Type::F32, kir::Type::F32, false, 64, 0, 11),
               std::invalid_argument);
}

}  // namespace
}  // namespace argmax_parts_test
