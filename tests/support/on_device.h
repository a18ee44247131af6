// A GoogleTest fixture parameterized by device name: opens the device, and fails the test when the Vulkan
// validation layer reported anything while it ran (ctest sets SPIRE_VULKAN_VALIDATION=1).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"

namespace spire::testing_support {

class OnDevice : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dev_ = rt::open_device(GetParam());
    messages_before_ = rt::vulkan::validation_message_count();
  }
  void TearDown() override {
    EXPECT_EQ(rt::vulkan::validation_message_count(), messages_before_) << "the Vulkan validation layer reported messages";
  }
  std::unique_ptr<rt::Device> dev_;
  uint64_t messages_before_ = 0;
};

}  // namespace spire::testing_support
