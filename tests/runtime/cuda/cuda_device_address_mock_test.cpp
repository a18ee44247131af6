// Executable::set_device / get_device on cuda:0 through the mock driver: an input and a parameter copied in from
// device addresses another library owns (here: buffers the test allocates itself, standing for torch's tensors), an
// output copied out to one, device to device with no host transfer, against the values computed on the host. Also what
// is refused: a streamed value, a wrong byte count, an address that is no allocation (the mock checks). And the same
// exchange ordered against another library's stream on the device (wait_for_stream / signal_stream) with steps in
// flight and no host wait at all, as spire.torch runs a call.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <vector>

#include "ir/graph/text_form.h"
#include "lowering/executable.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_resources.h"

namespace spire::rt::cuda::testing {
namespace {

bool mock_loaded() {
  (void)driver();
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

int mock_stream_waits() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto count = reinterpret_cast<int (*)()>(::dlsym(h, "mock_cuda_stream_wait_count"));
  return count ? count() : -1;
}

constexpr const char* kGraph = R"(x = input() : f32[4,8]
w = parameter() : f32[4,8]
p = mul(x, w) : f32[4,8]
y = add(p, x) : f32[4,8]
output y = y
)";

uint64_t address_of(const std::shared_ptr<Buffer>& b) { return dynamic_cast<const CudaBuffer&>(*b).ptr(); }

TEST(DeviceAddressesOnMockCuda, ValuesGoInAndOutDeviceToDevice) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  auto dev = cuda::open(0);
  auto exe = lowering::compile(graph::parse(kGraph), *dev);  // nothing streamed
  const size_t bytes = 32 * sizeof(float);
  // "Another library's" memory: device buffers whose addresses are all the executable sees.
  auto x_mem = dev->alloc(bytes), w_mem = dev->alloc(bytes), y_mem = dev->alloc(bytes);
  for (int round = 0; round < 2; ++round) {
    std::vector<float> x(32), w(32), y(32, -1.0f);
    for (int i = 0; i < 32; ++i) {
      x[size_t(i)] = 0.25f * float(i - 7) + float(round);
      w[size_t(i)] = 1.5f - 0.125f * float(i) - float(round);
    }
    dev->upload(*x_mem, x.data(), bytes);
    dev->upload(*w_mem, w.data(), bytes);
    dev->upload(*y_mem, y.data(), bytes);
    const SyncCounts before = dev->sync_counts();
    exe->set_device("x", address_of(x_mem), bytes);
    exe->set_device("w", address_of(w_mem), bytes);
    exe->step();
    exe->get_device("y", address_of(y_mem), bytes);
    dev->wait_idle();
    const SyncCounts after = dev->sync_counts();
    // Two copies in, the step, one copy out: four submits; the step's wait and wait_idle(): two waits.
    EXPECT_EQ(after.submits - before.submits, 4u) << "round " << round;
    EXPECT_EQ(after.waits - before.waits, 2u) << "round " << round;
    dev->download(*y_mem, y.data(), bytes);
    for (size_t i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(y[i], x[i] * w[i] + x[i]) << "round " << round << " element " << i;
    // The parameter is read back the same way it went in.
    std::vector<float> w_back(32, 0.0f);
    exe->get_device("w", address_of(y_mem), bytes);
    dev->wait_idle();
    dev->download(*y_mem, w_back.data(), bytes);
    EXPECT_EQ(w_back, w) << "round " << round;
  }
}

TEST(DeviceAddressesOnMockCuda, OrderedAgainstAnotherStreamWithNoHostWait) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  auto dev = cuda::open(0);
  lowering::CompileOptions two_in_flight;
  two_in_flight.steps_in_flight = 2;
  auto exe = lowering::compile(graph::parse(kGraph), *dev, two_in_flight);
  const size_t bytes = 32 * sizeof(float);
  auto x_mem = dev->alloc(bytes), w_mem = dev->alloc(bytes);
  std::vector<std::shared_ptr<Buffer>> y_mem = {dev->alloc(bytes), dev->alloc(bytes)};
  std::vector<std::vector<float>> x(2, std::vector<float>(32)), w = x;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 32; ++i) {
      x[size_t(round)][size_t(i)] = 0.5f * float(i) - 3.0f * float(round);
      w[size_t(round)][size_t(i)] = 2.0f - 0.25f * float(i + round);
    }
  const uint64_t torch_stream = 0;  // the legacy default stream, torch's default current stream
  const int waits_before = mock_stream_waits();
  for (int round = 0; round < 2; ++round) {
    dev->upload(*x_mem, x[size_t(round)].data(), bytes);  // stands for torch writing its tensors
    dev->upload(*w_mem, w[size_t(round)].data(), bytes);
    const SyncCounts start = dev->sync_counts();
    dev->wait_for_stream(torch_stream);
    exe->set_device("x", address_of(x_mem), bytes);
    exe->set_device("w", address_of(w_mem), bytes);
    exe->start_step();
    exe->get_device("y", address_of(y_mem[size_t(round)]), bytes);  // a step is in flight: queued behind it
    dev->signal_stream(torch_stream);
    EXPECT_EQ(dev->sync_counts().waits, start.waits) << "round " << round << ": the host waited";
  }
  EXPECT_EQ(mock_stream_waits() - waits_before, 4) << "two device-side waits per round";
  exe->finish_step();
  exe->finish_step();
  for (int round = 0; round < 2; ++round) {
    std::vector<float> y(32, -1.0f);
    dev->download(*y_mem[size_t(round)], y.data(), bytes);
    for (size_t i = 0; i < 32; ++i) {
      const float xi = x[size_t(round)][i], wi = w[size_t(round)][i];
      EXPECT_FLOAT_EQ(y[i], xi * wi + xi) << "round " << round << " element " << i;
    }
  }
}

TEST(DeviceAddressesOnMockCuda, RefusesStreamedValuesWrongSizesAndBadAddresses) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  auto dev = cuda::open(0);
  auto mem = dev->alloc(32 * sizeof(float));
  const uint64_t at = address_of(mem);
  lowering::CompileOptions streamed;
  streamed.streamed_inputs = {"x"};
  streamed.streamed_outputs = {"y"};
  auto exe = lowering::compile(graph::parse(kGraph), *dev, streamed);
  EXPECT_THROW(exe->set_device("x", at, 128), graph::GraphError);
  exe->set_device("w", at, 128);  // a parameter is never streamed
  exe->step();
  EXPECT_THROW(exe->get_device("y", at, 128), graph::GraphError);
  EXPECT_THROW(exe->set_device("w", at, 64), graph::GraphError);
  // Not an allocation of this context: the driver refuses the copy (the mock checks every address).
  std::vector<float> host(32);
  EXPECT_THROW(exe->set_device("w", reinterpret_cast<uint64_t>(host.data()), 128), Error);
}

}  // namespace
}  // namespace spire::rt::cuda::testing
