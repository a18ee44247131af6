// Fences and wait_idle: a fence tells when its submission's work is done (by waiting or by polling), and
// wait_idle waits for everything submitted.
#include <chrono>
#include <thread>

#include "backends/compile_kernel.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"
#include "tests/runtime/conformance/kernels.h"

namespace spire::rt::conformance {
namespace {

SPIRE_CONFORMANCE_SUITE(SyncTest);

// A stream with some work in it: y += x over n elements, then y copied to z.
struct Work {
  static constexpr uint32_t n = 1 << 16;
  std::shared_ptr<Kernel> kernel;
  std::shared_ptr<Buffer> x, y, z;
  std::unique_ptr<CommandStream> stream;
  std::vector<float> xs;

  Work(Device& d, uint32_t seed) : xs(random_small_ints(n, seed)) {
    kernel = backends::compile_and_load(d, accumulate(64));
    x = upload_vector(d, xs);
    y = d.alloc(n * 4);
    z = d.alloc(n * 4);
    d.fill(*y, 0);
    d.fill(*z, kNaNBits);
    stream = d.record();
    BufferView views[] = {BufferView(x), BufferView(y)};
    stream->dispatch(*kernel, views, ScalarArgs().u32(n), Grid::threads(n, 64));
    stream->barrier();
    stream->copy(BufferView(y), BufferView(z));
  }
  void expect_done(Device& d) const { EXPECT_EQ(download_vector<float>(d, *z, n), xs); }
};

TEST_P(SyncTest, AWaitedFenceIsReadyAndItsWorkDone) {
  Work w(dev(), 50);
  auto fence = dev().submit(*w.stream);
  fence->wait();
  EXPECT_TRUE(fence->ready());
  fence->wait();  // waiting again returns at once
  w.expect_done(dev());
}

TEST_P(SyncTest, APolledFenceBecomesReady) {
  Work w(dev(), 51);
  auto fence = dev().submit(*w.stream);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fence->ready()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the fence never became ready";
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  w.expect_done(dev());
}

TEST_P(SyncTest, WaitIdleWaitsForEverySubmission) {
  Work first(dev(), 52), second(dev(), 53);
  auto f1 = dev().submit(*first.stream);
  auto f2 = dev().submit(*second.stream);
  dev().wait_idle();
  EXPECT_TRUE(f1->ready());
  EXPECT_TRUE(f2->ready());
  first.expect_done(dev());
  second.expect_done(dev());
  dev().wait_idle();  // with nothing in flight
}

}  // namespace
}  // namespace spire::rt::conformance
