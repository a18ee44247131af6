// runtime/vulkan/vulkan_cuda_bridge.h between the Vulkan device present (lavapipe in CI) and the mock CUDA driver,
// whose external memory is the exported descriptor's pages mapped into the process, as lavapipe's exported memory is:
// an executable on vulkan:0 takes an input and a parameter from CUDA addresses (buffers of the mock's cuda:0, standing
// for torch's CUDA tensors) and writes its output to one, through Executable::set_device / get_device and the stream
// ordering calls, as spire.torch runs a call; the values are checked against the host's. Also what is refused: a
// Vulkan device that is not the CUDA device's GPU, and a copy past a buffer's end.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/graph/text_form.h"
#include "lowering/executable.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_resources.h"
#include "runtime/cuda_peer.h"
#include "runtime/vulkan/vulkan_device.h"

namespace spire::rt::vulkan::testing {
namespace {

bool mock_loaded() {
  (void)cuda::driver();
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

constexpr const char* kGraph = R"(x = input() : f32[4,8]
w = parameter() : f32[4,8]
p = mul(x, w) : f32[4,8]
y = add(p, x) : f32[4,8]
output y = y
)";

uint64_t address_of(const std::shared_ptr<Buffer>& b) { return dynamic_cast<const cuda::CudaBuffer&>(*b).ptr(); }

// The mock CUDA device answers cuDeviceGetUuid with SPIRE_MOCK_CUDA_UUID: here, the Vulkan device's own, or another.
void set_mock_uuid(const VulkanDevice& vk, bool same) {
  std::string hex;
  for (uint8_t b : vk.context()->facts.device_uuid) hex += fmt::format("{:02x}", same ? b : uint8_t(b ^ 0xff));
  ::setenv("SPIRE_MOCK_CUDA_UUID", hex.c_str(), 1);
}

class VulkanCudaBridge : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(mock_loaded()) << "ctest runs this with the mock CUDA driver on LD_LIBRARY_PATH; driver: "
                               << cuda::driver_status();
    vk_ = vulkan::open(0);
    vulkan_ = dynamic_cast<VulkanDevice*>(vk_.get());
    ASSERT_NE(vulkan_, nullptr);
    ASSERT_TRUE(vulkan_->context()->facts.has_external_memory_fd)
        << vk_->info().name << " lacks VK_KHR_external_memory_fd, which lavapipe has";
    cuda_ = cuda::open(0);
  }
  std::unique_ptr<Device> vk_, cuda_;
  VulkanDevice* vulkan_ = nullptr;
};

TEST_F(VulkanCudaBridge, ValuesComeFromAndGoToCudaAddresses) {
  set_mock_uuid(*vulkan_, true);
  ASSERT_EQ(cuda_peer(*vk_), 0);
  auto exe = lowering::compile(graph::parse(kGraph), *vk_);
  const size_t bytes = 32 * sizeof(float);
  auto x_mem = cuda_->alloc(bytes), w_mem = cuda_->alloc(bytes), y_mem = cuda_->alloc(bytes);
  for (int round = 0; round < 2; ++round) {
    std::vector<float> x(32), w(32), y(32, -1.0f);
    for (int i = 0; i < 32; ++i) {
      x[size_t(i)] = 0.25f * float(i - 7) + float(round);
      w[size_t(i)] = 1.5f - 0.125f * float(i) - float(round);
    }
    cuda_->upload(*x_mem, x.data(), bytes);  // stands for torch writing its tensors
    cuda_->upload(*w_mem, w.data(), bytes);
    cuda_->upload(*y_mem, y.data(), bytes);  // poison: an element the copy out misses stays -1
    const SyncCounts before = vk_->sync_counts();
    vk_->wait_for_stream(0);                  // torch's legacy default stream
    exe->set_device("x", address_of(x_mem), bytes);
    exe->set_device("w", address_of(w_mem), bytes);
    exe->step();
    exe->get_device("y", address_of(y_mem), bytes);
    vk_->signal_stream(0);
    // Two hand-overs a call, whatever the number of values: the copies in as one submission, then the step, then the
    // copies out as one (each submission waited for).
    EXPECT_EQ(vk_->sync_counts().submits - before.submits, 3u) << "round " << round;
    cuda_->download(*y_mem, y.data(), bytes);
    for (size_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(y[i], x[i] * w[i] + x[i]) << "round " << round << " element " << i;
    // The parameter comes back the way it went in.
    std::vector<float> w_back(32, 0.0f);
    exe->get_device("w", address_of(y_mem), bytes);
    vk_->wait_idle();  // a copy out lands by signal_stream or wait_idle
    cuda_->download(*y_mem, w_back.data(), bytes);
    EXPECT_EQ(w_back, w) << "round " << round;
  }
  // lavapipe exports no semaphore, so the host orders the two sides here (the device does on NVIDIA's driver, where
  // tools/gpu/run-torch.sh runs the same calls through spire.torch).
  const std::string ordering = vulkan_->cuda_ordering();
  EXPECT_EQ(ordering.rfind("the host (", 0), 0u) << ordering;
  EXPECT_NE(ordering.find("cannot export a timeline semaphore"), std::string::npos) << ordering;
  // A copy at an offset, and one past the buffer's end.
  auto part = vk_->alloc(64);
  std::vector<float> ones(4, 1.0f), back(16, 0.0f);
  cuda_->upload(*x_mem, ones.data(), 16);
  vk_->copy_from_address(*part, address_of(x_mem), 16, 48);
  vk_->download(*part, back.data(), 64, 0);
  EXPECT_EQ(back[12], 1.0f);
  EXPECT_EQ(back[15], 1.0f);
  EXPECT_THROW(vk_->copy_from_address(*part, address_of(x_mem), 32, 48), InvalidUse);
}

TEST_F(VulkanCudaBridge, AnotherGpuIsRefusedByName) {
  set_mock_uuid(*vulkan_, false);
  EXPECT_FALSE(cuda_peer(*vk_).has_value());
  auto buf = vk_->alloc(16);
  auto mem = cuda_->alloc(16);
  try {
    vk_->copy_from_address(*buf, address_of(mem), 16, 0);
    FAIL() << "a copy from a CUDA device that is another GPU went through";
  } catch (const InvalidUse& e) {
    EXPECT_NE(std::string(e.what()).find("none of the CUDA driver's 1 device(s) is vulkan:0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace spire::rt::vulkan::testing
