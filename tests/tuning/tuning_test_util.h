// What the tuning tests share: seeded random tensors, a scratch folder per test, and a fixture that opens
// each device present and fails a test on any Vulkan validation message.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "ir/graph/tensor.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/support/on_device.h"
#include "tests/lowering/device_list.h"

namespace spire::tuning_test {

// Uniform in [lo, hi] (whole numbers for integer dtypes), rounded to the dtype.
inline graph::Tensor random_tensor(graph::DType dtype, const graph::Shape& shape, uint64_t seed, double lo = -1,
                                   double hi = 1) {
  graph::Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int64_t> k{int64_t(lo), int64_t(hi)};
  for (double& v : t.data) v = graph::is_float(dtype) ? u(rng) : double(k(rng));
  return t.round_to_dtype();
}

// An empty folder of its own for the running test (removed first if an earlier run left it).
inline std::filesystem::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
  auto dir = std::filesystem::temp_directory_path() / "spire_tuning_tests" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

using OnDevice = testing_support::OnDevice;

}  // namespace spire::tuning_test
