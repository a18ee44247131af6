// The C API on the application's own Vulkan device (include/spire/spire_vulkan.h), through libspire_runtime.so:
// a test app (tests/runtime/vulkan_external/app_vulkan.h) makes its own instance, device, queue and host-visible
// buffers with plain Vulkan calls, hands them to spire, writes the input rows into its own mapped memory and
// reads the model's result from its own output buffer, checked against the float64 evaluator. With
// SPIRE_VULKAN_VALIDATION=1 (set by ctest) the validation layer runs on the app's instance and any message
// fails the test, including what the app's vkDestroyDevice reports about objects spire left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bundle/bundle_file.h"
#include "runtime/vulkan/vulkan_instance.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "spire/spire.h"
#include "spire/spire_vulkan.h"
#include "tests/bundle/mlp_model.h"
#include "tests/runtime/vulkan_external/app_vulkan.h"

namespace spire::bundle {
namespace {

using test_app::AppBuffer;
using test_app::AppVulkan;

constexpr uint32_t kPoison = 0xDEADBEEFu;
constexpr int64_t kMaxBatch = 4;

// The status's code, freeing it; the message goes to the test's log.
spire_status_code code_of(spire_status st, std::string* message = nullptr) {
  const spire_status_code c = spire_status_get_code(st);
  if (message) *message = spire_status_message(st);
  if (st) std::printf("  status %d: %s\n", int(c), spire_status_message(st));
  spire_status_free(st);
  return c;
}

spire_vulkan_device_info info_of(const AppVulkan& app) {
  const rt::vulkan::ExternalVulkan e = app.external();
  spire_vulkan_device_info info{};
  info.struct_size = sizeof info;
  info.instance = e.instance;
  info.physical_device = e.physical_device;
  info.device = e.device;
  info.queue_family = e.queue_family;
  info.queue = e.queue;
  info.get_instance_proc_addr = e.get_instance_proc_addr;
  info.api_version = e.api_version;
  info.enabled_features = e.enabled_features;
  return info;
}

class AppVulkanCApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    messages_before_ = rt::vulkan::validation_message_count();
    test_app::AppOptions options;
    const char* v = std::getenv("SPIRE_VULKAN_VALIDATION");
    options.validation = v && std::strcmp(v, "1") == 0;
    messenger_ = rt::vulkan::debug_messenger_create_info();
    options.messenger = &messenger_;
    app_ = AppVulkan::create(options, &why_);
    if (!app_) GTEST_SKIP() << "no Vulkan device to adopt: " << why_;
    bundle_ = serialize(compile_mlp("spirv", true));
  }
  void TearDown() override {
    spire_model_release(model_);
    spire_device_release(device_);
    app_.reset();  // the app's vkDestroyDevice reports any object spire left on its device
    EXPECT_EQ(rt::vulkan::validation_message_count(), messages_before_)
        << "the Vulkan validation layer reported messages during this test (printed above on stderr)";
  }

  void adopt_and_load() {
    const spire_vulkan_device_info info = info_of(*app_);
    ASSERT_EQ(code_of(spire_device_adopt_vulkan(&info, &device_)), SPIRE_STATUS_OK);
    EXPECT_STREQ(spire_device_id(device_), "vulkan:app");
    ASSERT_EQ(code_of(spire_model_load_memory(device_, bundle_.data(), bundle_.size(), &model_)), SPIRE_STATUS_OK);
  }

  // Writes batch rows of fresh inputs into the app's buffer at `offset`; returns them.
  std::vector<float> write_rows(const AppBuffer& b, uint64_t offset, int64_t batch) {
    std::vector<float> x = input_rows(batch);
    std::memcpy(static_cast<uint8_t*>(b.mapped) + offset, x.data(), x.size() * 4);
    return x;
  }

  std::unique_ptr<AppVulkan> app_;
  std::string why_;
  std::vector<uint8_t> bundle_;
  spire_device* device_ = nullptr;
  spire_model* model_ = nullptr;

 private:
  VkDebugUtilsMessengerCreateInfoEXT messenger_{};
  uint64_t messages_before_ = 0;
};

TEST_F(AppVulkanCApiTest, TheModelReadsAndWritesTheAppsOwnBuffers) {
  adopt_and_load();
  spire_buffer_layout in_layout{}, out_layout{};
  ASSERT_EQ(code_of(spire_model_set_batch(model_, 3)), SPIRE_STATUS_OK);
  ASSERT_EQ(code_of(spire_model_buffer_layout(model_, "x", &in_layout)), SPIRE_STATUS_OK);
  ASSERT_EQ(code_of(spire_model_buffer_layout(model_, "y", &out_layout)), SPIRE_STATUS_OK);
  EXPECT_EQ(in_layout.element_type, SPIRE_DTYPE_F32);
  EXPECT_EQ(in_layout.bytes, size_t(kMaxBatch * 6 * 4));
  EXPECT_EQ(in_layout.batch_bytes, size_t(3 * 6 * 4));
  EXPECT_EQ(out_layout.bytes, size_t(kMaxBatch * 5 * 4));

  // The input lies at an offset inside a larger buffer; the output fills its own, poisoned first so rows
  // spire must not write (those beyond the batch) show up.
  const uint64_t in_offset = 64;
  AppBuffer& in = app_->create_buffer(in_offset + in_layout.bytes + 32);
  AppBuffer& out = app_->create_buffer(out_layout.bytes);
  std::fill(in.as<uint32_t>(), in.as<uint32_t>() + in.bytes / 4, kPoison);
  std::fill(out.as<uint32_t>(), out.as<uint32_t>() + out.bytes / 4, kPoison);
  ASSERT_EQ(code_of(spire_model_bind_input_buffer(model_, "x", in.buffer, in_offset, VK_WHOLE_SIZE)), SPIRE_STATUS_OK);
  ASSERT_EQ(code_of(spire_model_bind_output_buffer(model_, "y", out.buffer, 0, out_layout.bytes)), SPIRE_STATUS_OK);

  for (int64_t batch : {3, 1, 4}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    ASSERT_EQ(code_of(spire_model_set_batch(model_, batch)), SPIRE_STATUS_OK);
    const std::vector<float> x = write_rows(in, in_offset, batch);
    ASSERT_EQ(code_of(spire_model_run(model_)), SPIRE_STATUS_OK);
    const std::vector<double> ref = reference(batch, x);
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out.as<float>()[i], ref[i], 1e-6) << "element " << i;
    // get_output still reads the same values from spire's own copy.
    std::vector<float> y(ref.size(), std::nanf(""));
    ASSERT_EQ(code_of(spire_model_get_output(model_, "y", y.data(), y.size() * 4)), SPIRE_STATUS_OK);
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(y[i], out.as<float>()[i]) << "element " << i;
    if (batch == 3) {  // the fourth row was never written
      for (size_t i = ref.size(); i < out.bytes / 4; ++i) EXPECT_EQ(out.as<uint32_t>()[i], kPoison) << "element " << i;
    }
  }

  // Unbound, the input comes from set_input again, and the app's buffer no longer matters.
  ASSERT_EQ(code_of(spire_model_bind_input_buffer(model_, "x", VK_NULL_HANDLE, 0, 0)), SPIRE_STATUS_OK);
  std::fill(in.as<uint32_t>(), in.as<uint32_t>() + in.bytes / 4, kPoison);
  ASSERT_EQ(code_of(spire_model_set_batch(model_, 2)), SPIRE_STATUS_OK);
  const std::vector<float> x = input_rows(2);
  ASSERT_EQ(code_of(spire_model_set_input(model_, "x", x.data(), x.size() * 4)), SPIRE_STATUS_OK);
  ASSERT_EQ(code_of(spire_model_run(model_)), SPIRE_STATUS_OK);
  const std::vector<double> ref = reference(2, x);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out.as<float>()[i], ref[i], 1e-6) << "element " << i;
}

TEST_F(AppVulkanCApiTest, WrongAdoptionsAndBindingsAreStatusesThatSayWhy) {
  spire_vulkan_device_info info = info_of(*app_);
  std::string message;
  info.device = VK_NULL_HANDLE;
  EXPECT_EQ(code_of(spire_device_adopt_vulkan(&info, &device_), &message), SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("device"), std::string::npos);
  EXPECT_EQ(device_, nullptr);
  info = info_of(*app_);
  info.struct_size = 0;
  EXPECT_EQ(code_of(spire_device_adopt_vulkan(&info, &device_), &message), SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("struct_size"), std::string::npos);
  EXPECT_EQ(code_of(spire_device_adopt_vulkan(nullptr, &device_)), SPIRE_STATUS_INVALID_ARGUMENT);

  adopt_and_load();
  spire_buffer_layout layout{};
  EXPECT_EQ(code_of(spire_model_buffer_layout(model_, "z", &layout), &message), SPIRE_STATUS_NOT_FOUND);
  EXPECT_NE(message.find("x, y"), std::string::npos) << "the message lists the names the model has";
  AppBuffer& small = app_->create_buffer(16);
  EXPECT_EQ(code_of(spire_model_bind_input_buffer(model_, "x", small.buffer, 0, 16), &message),
            SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("largest batch needs 96"), std::string::npos);
  AppBuffer& big = app_->create_buffer(256);
  EXPECT_EQ(code_of(spire_model_bind_input_buffer(model_, "y", big.buffer, 0, VK_WHOLE_SIZE), &message),
            SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("output"), std::string::npos);
  EXPECT_EQ(code_of(spire_model_bind_input_buffer(model_, "x", big.buffer, 2, 96)), SPIRE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(code_of(spire_model_bind_input_buffer(model_, "x", big.buffer, 0, 1024), &message),
            SPIRE_STATUS_INVALID_ARGUMENT)
      << "more bytes than the VkBuffer holds";

  // A model on a device spire created cannot take the app's buffers: they belong to another VkDevice.
  spire_device* own = nullptr;
  if (code_of(spire_device_open(nullptr, &own)) == SPIRE_STATUS_OK) {
    spire_model* other = nullptr;
    if (code_of(spire_model_load_memory(own, bundle_.data(), bundle_.size(), &other)) == SPIRE_STATUS_OK) {
      EXPECT_EQ(code_of(spire_model_bind_input_buffer(other, "x", big.buffer, 0, VK_WHOLE_SIZE), &message),
                SPIRE_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(message.find("spire_device_adopt_vulkan"), std::string::npos);
      spire_model_release(other);
    }
    spire_device_release(own);
  }
}

}  // namespace
}  // namespace spire::bundle
