// Shared by the Vulkan-specific tests (the contract every backend keeps is tested in tests/runtime/conformance):
// one device per process, and a check after every test that the validation layer reported nothing while it ran.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/device.h"

namespace spire::rt::vulkan::test {

// The Vulkan device the tests run on: index SPIRE_VULKAN_TEST_DEVICE (N of vulkan:N), else the first listed.
// nullptr when there is none.
Device* shared_device();

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  Device& dev() { return *device_; }
  // Messages the test provokes on purpose, so the fixture does not count them as failures.
  void expect_validation_messages(uint64_t n) { expected_messages_ += n; }

 private:
  Device* device_ = nullptr;
  uint64_t messages_before_ = 0;
  uint64_t expected_messages_ = 0;
};

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

constexpr uint32_t kPoison = 0xDEADBEEFu;

template <class T>
std::vector<T> download_vector(Device& d, const Buffer& b, size_t count, uint64_t offset = 0) {
  std::vector<T> out(count);
  d.download(b, out.data(), count * sizeof(T), offset);
  return out;
}

}  // namespace spire::rt::vulkan::test
