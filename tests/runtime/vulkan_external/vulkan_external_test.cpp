// spire on the host program's own Vulkan device (runtime/vulkan/vulkan_external.h): a test app makes its own
// instance, device, queue and buffers with plain Vulkan calls (app_vulkan.h), hands them to spire, and checks what
// spire computed in its own mapped memory. ctest runs every test in a process of its own with the validation
// layer on (on the app's instance, counted by spire's messenger): any message fails the test, including the
// ones vkDestroyDevice reports for objects spire forgot to destroy.
//
// Except for the last test, nothing here creates spire's own instance, so volk's process-wide function pointers
// stay null: a device-level call that bypassed the adopted device's function table would crash these tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_external.h"
#include "runtime/vulkan/vulkan_instance.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/runtime/vulkan_external/app_vulkan.h"

namespace spire::rt::vulkan {
namespace {

using test_app::AppBuffer;
using test_app::AppFeatures;
using test_app::AppVulkan;

constexpr uint32_t kPoison = 0xDEADBEEFu;

// y[i] = 2 * x[i] + 1 for i < n.
kir::Kernel twice_plus_one() {
  using namespace kir;
  KernelBuilder kb("twice_plus_one", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(x[i]) * 2.0 + 1.0; });
  return kb.finish();
}

kir::Kernel needs_float64() {
  using namespace kir;
  KernelBuilder kb("needs_float64", 64);
  auto y = kb.buffer("y", Type::F64, Access::Write);
  auto i = kb.global_id();
  y[i] = cast(i, Type::F64);
  return kb.finish();
}

// Whole numbers from -48 to 48: 2x+1 is exact in float on every device.
void write_inputs(const AppBuffer& b, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) b.as<float>()[j] = float(int(j % 97) - 48);
}

// How many of the first n outputs differ from 2x+1 (reporting the first few).
int wrong_outputs(const AppBuffer& in, const AppBuffer& out, uint32_t n) {
  int wrong = 0;
  for (uint32_t j = 0; j < n; ++j) {
    float want = 2.0f * in.as<float>()[j] + 1.0f;
    if (out.as<float>()[j] != want && wrong++ < 5)
      ADD_FAILURE() << "element " << j << ": " << out.as<float>()[j] << " (bits 0x" << std::hex << out.as<uint32_t>()[j]
                    << std::dec << "), expected " << want;
  }
  return wrong;
}

// The app's loader entry, wrapped to count how often spire asks it for a function.
std::atomic<int> g_loader_calls{0};
PFN_vkGetInstanceProcAddr g_app_loader = nullptr;
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL counting_loader(VkInstance instance, const char* name) {
  g_loader_calls.fetch_add(1);
  return g_app_loader(instance, name);
}

class ExternalVulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    messages_before_ = validation_message_count();
    app_ = make_app(AppFeatures::VulkanVersionStructs);
    if (!app_) GTEST_SKIP() << "no Vulkan device to adopt: " << why_;
  }
  void TearDown() override {
    extra_apps_.clear();
    app_.reset();  // the app's vkDestroyDevice reports any object spire left on its device
    EXPECT_EQ(validation_message_count(), messages_before_)
        << "the Vulkan validation layer reported messages during this test (printed above on stderr)";
  }

  // A test app with the validation layer on when SPIRE_VULKAN_VALIDATION asks for it, as spire's own instance
  // would have it; nullptr (why_ says why) when there is no device.
  std::unique_ptr<AppVulkan> make_app(AppFeatures features) {
    test_app::AppOptions options;
    options.features = features;
    const char* v = std::getenv("SPIRE_VULKAN_VALIDATION");
    options.validation = v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "sync") == 0);
    messenger_ = debug_messenger_create_info();
    options.messenger = &messenger_;
    return AppVulkan::create(options, &why_);
  }

  AppVulkan& app() { return *app_; }
  std::unique_ptr<AppVulkan> app_;
  std::vector<std::unique_ptr<AppVulkan>> extra_apps_;  // destroyed before app_, in TearDown
  std::string why_;

 private:
  VkDebugUtilsMessengerCreateInfoEXT messenger_{};
  uint64_t messages_before_ = 0;
};

TEST_F(ExternalVulkanTest, AKernelComputesInTheAppsOwnBuffers) {
  const uint32_t n = 1000;  // not a multiple of the workgroup: the last group has idle invocations
  AppBuffer& in = app().create_buffer(n * 4);
  AppBuffer& out = app().create_buffer(n * 4);
  write_inputs(in, n);
  std::fill(out.as<uint32_t>(), out.as<uint32_t>() + n, kPoison);  // what spire does not write stays poison

  ExternalVulkan e = app().external();
  g_app_loader = e.get_instance_proc_addr;
  e.get_instance_proc_addr = counting_loader;
  auto dev = adopt_device(e);
  EXPECT_GT(g_loader_calls.load(), 0) << "spire must load the adopted device's functions through the app's loader";
  EXPECT_EQ(dev->info().id, "vulkan:app");
  EXPECT_EQ(dev->info().index, -1);
  EXPECT_EQ(dev->info().name, app().device_name());

  auto kernel = backends::compile_and_load(*dev, twice_plus_one());
  auto x = adopt_buffer(*dev, in.buffer, n * 4);
  auto y = adopt_buffer(*dev, out.buffer, n * 4);
  EXPECT_EQ(x->size(), n * 4);
  BufferView views[] = {BufferView(x), BufferView(y)};
  dev->dispatch_now(*kernel, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  EXPECT_EQ(wrong_outputs(in, out, n), 0);
}

TEST_F(ExternalVulkanTest, DestroyingSpiresDeviceLeavesTheAppsDeviceUsable) {
  const uint32_t n = 256;
  AppBuffer& in = app().create_buffer(n * 4);
  AppBuffer& out = app().create_buffer(n * 4);
  write_inputs(in, n);
  {
    // Everything spire makes on the device: pipelines, streams with descriptor and query pools, fences, its own
    // buffers and the staging buffer (a download from an adopted buffer needs it).
    auto dev = adopt_device(app().external());
    auto kernel = backends::compile_and_load(*dev, twice_plus_one());
    auto x = adopt_buffer(*dev, in.buffer, n * 4), y = adopt_buffer(*dev, out.buffer, n * 4);
    auto own = dev->alloc(n * 4);
    auto stream = dev->record();
    BufferView views[] = {BufferView(x), BufferView(y)};
    stream->dispatch(*kernel, views, ScalarArgs().u32(n), Grid::threads(n, 64));
    stream->barrier();
    stream->copy(BufferView(y), BufferView(own));
    stream->timestamp();
    dev->submit(*stream)->wait();
    std::vector<float> copied(n);
    dev->download(*own, copied.data(), n * 4);
    std::vector<float> read_back(n);
    dev->download(*y, read_back.data(), n * 4);
    EXPECT_EQ(copied, read_back);
    EXPECT_EQ(wrong_outputs(in, out, n), 0);
  }
  // spire is gone: the app's device, queue and buffers still work with the app's own commands.
  app().fill_with_own_commands(out, 0x12345678u);
  int wrong = 0;
  for (uint32_t j = 0; j < n; ++j) wrong += out.as<uint32_t>()[j] != 0x12345678u;
  EXPECT_EQ(wrong, 0);
  write_inputs(in, n);
  EXPECT_EQ(in.as<float>()[n - 1], float(int((n - 1) % 97) - 48)) << "the app's memory stays mapped";
}

TEST_F(ExternalVulkanTest, BadAdoptionsAreRefusedClearly) {
  auto dev = adopt_device(app().external());
  AppBuffer& small = app().create_buffer(256);
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string null_buffer = error_of([&] { adopt_buffer(*dev, VK_NULL_HANDLE, 256); });
  EXPECT_NE(null_buffer.find("VK_NULL_HANDLE"), std::string::npos) << null_buffer;
  EXPECT_NE(null_buffer.find("vulkan:app"), std::string::npos) << null_buffer;
  std::string too_small = error_of([&] { adopt_buffer(*dev, small.buffer, 1 << 20); });
  EXPECT_NE(too_small.find("1048576 bytes were asked for"), std::string::npos) << too_small;
  for (uint64_t bad : {uint64_t(0), uint64_t(6)}) {
    std::string msg = error_of([&] { adopt_buffer(*dev, small.buffer, bad); });
    EXPECT_NE(msg.find("multiple of 4"), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_NO_THROW(adopt_buffer(*dev, small.buffer, 256));

  ExternalVulkan no_device = app().external();
  no_device.device = VK_NULL_HANDLE;
  EXPECT_NE(error_of([&] { adopt_device(no_device); }).find("ExternalVulkan::device is null"), std::string::npos);
  ExternalVulkan half_lock = app().external();
  half_lock.lock_queue = [](void*) {};
  EXPECT_NE(error_of([&] { adopt_device(half_lock); }).find("or neither"), std::string::npos);
  ExternalVulkan bad_family = app().external();
  bad_family.queue_family = 1000;
  EXPECT_NE(error_of([&] { adopt_device(bad_family); }).find("queue family 1000"), std::string::npos);
  ExternalVulkan old = app().external();
  old.api_version = VK_API_VERSION_1_0;
  EXPECT_NE(error_of([&] { adopt_device(old); }).find("needs Vulkan 1.1"), std::string::npos);
}

TEST_F(ExternalVulkanTest, FeaturesAreOnlyThoseTheAppEnabled) {
  const bool supports_float64 = app().device_supports_float64();
  auto all = adopt_device(app().external());
  EXPECT_EQ(all->info().features.has(kir::Feature::Float64), supports_float64);

  // The same features described with the per-feature structures instead of Vulkan11/12Features.
  extra_apps_.push_back(make_app(AppFeatures::PerFeatureStructs));
  ASSERT_TRUE(extra_apps_.back()) << why_;
  auto per_feature = adopt_device(extra_apps_.back()->external());
  EXPECT_EQ(per_feature->info().features, all->info().features);

  // No chain: only Vulkan 1.1 core, whatever the device could have offered.
  extra_apps_.push_back(make_app(AppFeatures::None));
  ASSERT_TRUE(extra_apps_.back()) << why_;
  auto bare = adopt_device(extra_apps_.back()->external());
  const kir::Features bare_features = bare->info().features;
  // Subgroup shuffles are a property query of Vulkan 1.1 with nothing to enable: they stay whenever the device has them.
  // Copies into workgroup memory are plain loads and stores (backends/spirv/emit_copies.cpp): every device has them.
  kir::Features core = kir::Features(kir::Feature::AtomicAddInt) | kir::Feature::AsyncCopy;
  if (all->info().features.has(kir::Feature::SubgroupShuffle)) core |= kir::Feature::SubgroupShuffle;
  EXPECT_EQ(bare_features, core) << kir::features_to_string(bare_features);
  try {
    backends::compile_and_load(*bare, needs_float64());
    ADD_FAILURE() << "a float64 kernel loaded on a device whose app did not enable shaderFloat64";
  } catch (const MissingFeature& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan:app"), std::string::npos) << e.what();
  }
  if (supports_float64) {
    auto k = backends::compile_and_load(*all, needs_float64());  // and where it was enabled, it loads
    EXPECT_TRUE(k);
  }
}

TEST_F(ExternalVulkanTest, TransfersFillsAndCopiesStayInsideTheLentBytes) {
  const uint32_t lent = 64, extra = 16;  // the app lends the first 64 words of 80
  AppBuffer& b = app().create_buffer((lent + extra) * 4);
  std::fill(b.as<uint32_t>(), b.as<uint32_t>() + lent + extra, kPoison);
  auto dev = adopt_device(app().external());
  auto adopted = adopt_buffer(*dev, b.buffer, lent * 4);
  auto tail_untouched = [&] {
    return std::all_of(b.as<uint32_t>() + lent, b.as<uint32_t>() + lent + extra, [](uint32_t w) { return w == kPoison; });
  };

  dev->fill(*adopted, 0x11111111u);
  EXPECT_TRUE(std::all_of(b.as<uint32_t>(), b.as<uint32_t>() + lent, [](uint32_t w) { return w == 0x11111111u; }));
  EXPECT_TRUE(tail_untouched());

  std::vector<uint32_t> words(lent);
  for (uint32_t j = 0; j < lent; ++j) words[j] = j * 7 + 3;
  dev->upload(*adopted, words.data(), lent * 4);
  EXPECT_TRUE(std::equal(words.begin(), words.end(), b.as<uint32_t>()));
  EXPECT_TRUE(tail_untouched());

  for (uint32_t j = 0; j < lent; ++j) b.as<uint32_t>()[j] = j * 11 + 5;  // the app writes, spire reads
  std::vector<uint32_t> downloaded(lent);
  dev->download(*adopted, downloaded.data(), lent * 4, 0);
  EXPECT_TRUE(std::equal(downloaded.begin(), downloaded.end(), b.as<uint32_t>()));

  // In a stream: a fill of a view up to the end, and a copy into the adopted buffer from one of spire's own.
  auto own = dev->alloc(16 * 4);
  dev->fill(*own, 0x22222222u);
  auto s = dev->record();
  s->fill(BufferView(adopted, 32 * 4), 0x33333333u);
  s->barrier();
  s->copy(BufferView(own), BufferView(adopted, 8 * 4));
  dev->run(*s);
  for (uint32_t j = 0; j < lent; ++j) {
    uint32_t want = j < 8 ? j * 11 + 5 : j < 24 ? 0x22222222u : j < 32 ? j * 11 + 5 : 0x33333333u;
    EXPECT_EQ(b.as<uint32_t>()[j], want) << "word " << j;
  }
  EXPECT_TRUE(tail_untouched()) << "spire wrote past the bytes the app lent it";
}

struct CountingLock {
  std::atomic<int> locks{0}, unlocks{0}, nested{0};
  std::atomic<bool> held{false};
  static void lock(void* self) {
    auto* c = static_cast<CountingLock*>(self);
    if (c->held.exchange(true)) c->nested.fetch_add(1);
    c->locks.fetch_add(1);
  }
  static void unlock(void* self) {
    auto* c = static_cast<CountingLock*>(self);
    c->held = false;
    c->unlocks.fetch_add(1);
  }
};

TEST_F(ExternalVulkanTest, TheAppsQueueLockWrapsEveryUseOfTheQueue) {
  const uint32_t n = 128;
  AppBuffer& in = app().create_buffer(n * 4);
  AppBuffer& out = app().create_buffer(n * 4);
  write_inputs(in, n);
  CountingLock lock;
  ExternalVulkan e = app().external();
  e.lock_queue = &CountingLock::lock;
  e.unlock_queue = &CountingLock::unlock;
  e.queue_lock_user_data = &lock;
  {
    auto dev = adopt_device(e);
    auto kernel = backends::compile_and_load(*dev, twice_plus_one());
    auto x = adopt_buffer(*dev, in.buffer, n * 4), y = adopt_buffer(*dev, out.buffer, n * 4);
    BufferView views[] = {BufferView(x), BufferView(y)};
    const int before = lock.locks.load();
    dev->dispatch_now(*kernel, views, ScalarArgs().u32(n), Grid::threads(n, 64));
    EXPECT_GE(lock.locks.load(), before + 1) << "the submission took no lock";
    std::vector<float> host(n);
    dev->download(*y, host.data(), n * 4);  // waits for the queue and submits a copy: both under the lock
    EXPECT_GE(lock.locks.load(), before + 3);
    EXPECT_FALSE(lock.held.load()) << "spire returned with the app's queue still locked";
  }
  EXPECT_EQ(lock.locks.load(), lock.unlocks.load());
  EXPECT_EQ(lock.nested.load(), 0) << "spire took the lock while holding it";
  EXPECT_EQ(wrong_outputs(in, out, n), 0);
}

// Last in this file: spire's own instance then exists in the process, beside the app's.
TEST_F(ExternalVulkanTest, SpiresOwnDeviceKeepsWorkingBesideTheAdoptedOne) {
  std::string own_id;
  for (const auto& d : list_devices())
    if (d.backend == Backend::Vulkan && own_id.empty()) own_id = d.id;
  if (own_id.empty()) GTEST_SKIP() << "spire lists no Vulkan device of its own";
  auto own = open_device(own_id);
  auto adopted = adopt_device(app().external());
  const uint32_t n = 300;
  AppBuffer& in = app().create_buffer(n * 4);
  AppBuffer& out = app().create_buffer(n * 4);
  write_inputs(in, n);
  std::fill(out.as<uint32_t>(), out.as<uint32_t>() + n, kPoison);

  auto k_own = backends::compile_and_load(*own, twice_plus_one());
  auto k_adopted = backends::compile_and_load(*adopted, twice_plus_one());
  std::vector<float> host(n);
  for (uint32_t j = 0; j < n; ++j) host[j] = in.as<float>()[j];
  auto x_own = own->alloc(n * 4), y_own = own->alloc(n * 4);
  own->upload(*x_own, host.data(), n * 4);
  own->fill(*y_own, kPoison);
  auto x = adopt_buffer(*adopted, in.buffer, n * 4), y = adopt_buffer(*adopted, out.buffer, n * 4);
  for (int round = 0; round < 3; ++round) {  // interleaved, so each keeps working after the other ran
    BufferView own_views[] = {BufferView(x_own), BufferView(y_own)};
    own->dispatch_now(*k_own, own_views, ScalarArgs().u32(n), Grid::threads(n, 64));
    BufferView adopted_views[] = {BufferView(x), BufferView(y)};
    adopted->dispatch_now(*k_adopted, adopted_views, ScalarArgs().u32(n), Grid::threads(n, 64));
  }
  EXPECT_EQ(wrong_outputs(in, out, n), 0);
  std::vector<float> got(n);
  own->download(*y_own, got.data(), n * 4);
  for (uint32_t j = 0; j < n; ++j) EXPECT_EQ(got[j], 2.0f * host[j] + 1.0f) << j;
  // A buffer of one device is refused by the other.
  BufferView mixed[] = {BufferView(x_own), BufferView(y)};
  EXPECT_THROW(adopted->dispatch_now(*k_adopted, mixed, ScalarArgs().u32(n), Grid::threads(n, 64)), Error);
}

}  // namespace
}  // namespace spire::rt::vulkan
