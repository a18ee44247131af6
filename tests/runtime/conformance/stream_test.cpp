// Command streams: recorded once and submitted many times; barriers order kernels, fills and copies; copies
// and fills inside a stream, and the views they refuse; timestamps; recording ends at finish() or submit().
#include <numeric>

#include "backends/compile_kernel.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"
#include "tests/runtime/conformance/kernels.h"

namespace spire::rt::conformance {
namespace {

SPIRE_CONFORMANCE_SUITE(StreamTest);

TEST_P(StreamTest, RecordedOnceSubmittedManyTimes) {
  // y += x, then y is copied to z. Fresh x and a poisoned z before each submission show that every
  // submission reruns all of the recorded work, not a cached result.
  const uint32_t n = 1000;
  auto k = backends::compile_and_load(dev(), accumulate(64));
  auto ys = random_small_ints(n, 30);
  auto x = dev().alloc(n * 4), y = upload_vector(dev(), ys), z = dev().alloc(n * 4);
  auto s = dev().record();
  BufferView views[] = {BufferView(x), BufferView(y)};
  s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->barrier();
  s->copy(BufferView(y), BufferView(z));
  s->finish();
  for (uint32_t round = 0; round < 4; ++round) {
    SCOPED_TRACE("submission " + std::to_string(round));
    auto xs = random_small_ints(n, 31 + round);
    dev().upload(*x, xs.data(), n * 4);
    dev().fill(*z, kNaNBits);
    dev().run(*s);
    for (uint32_t i = 0; i < n; ++i) ys[i] += xs[i];
    EXPECT_EQ(download_vector<float>(dev(), *y, n), ys);
    EXPECT_EQ(download_vector<float>(dev(), *z, n), ys);
  }
}

TEST_P(StreamTest, BarriersOrderKernelsFillsAndCopies) {
  // fill a -> kernel b = a + x -> copy b to c -> kernel d = c + c, each step reading the one before it, then
  // five dependent y += x in place.
  const uint32_t n = 777;
  auto add = backends::compile_and_load(dev(), vector_add(64));
  auto acc = backends::compile_and_load(dev(), accumulate(64));
  auto xs = random_small_ints(n, 40);
  auto x = upload_vector(dev(), xs);
  auto a = dev().alloc(n * 4), b = dev().alloc(n * 4), c = dev().alloc(n * 4), d = dev().alloc(n * 4);
  for (auto* buf : {&b, &c, &d}) dev().fill(**buf, kNaNBits);
  auto y = upload_vector(dev(), std::vector<float>(n, 1.0f));
  auto s = dev().record();
  s->fill(BufferView(a), float_bits(3.0f));
  s->barrier();
  BufferView first[] = {BufferView(a), BufferView(x), BufferView(b)};
  s->dispatch(*add, first, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->barrier();
  s->copy(BufferView(b), BufferView(c));
  s->barrier();
  BufferView second[] = {BufferView(c), BufferView(c), BufferView(d)};
  s->dispatch(*add, second, ScalarArgs().u32(n), Grid::threads(n, 64));
  BufferView in_place[] = {BufferView(x), BufferView(y)};
  for (int r = 0; r < 5; ++r) {
    s->barrier();
    s->dispatch(*acc, in_place, ScalarArgs().u32(n), Grid::threads(n, 64));
  }
  dev().run(*s);
  auto ds = download_vector<float>(dev(), *d, n), got_y = download_vector<float>(dev(), *y, n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(ds[i], 2.0f * (3.0f + xs[i])) << i;
    ASSERT_EQ(got_y[i], 1.0f + 5.0f * xs[i]) << i;
  }
}

TEST_P(StreamTest, FillsAndCopiesInsideAStream) {
  const size_t n = 1000;
  auto a = dev().alloc(n * 4);
  auto b = dev().alloc(n * 4, Memory::HostVisible);
  dev().fill(*b, kPoison);
  auto s = dev().record();
  s->fill(BufferView(a), 0x12345678u);
  s->fill(BufferView(a, 200 * 4, 8), 0x0badf00du);  // a part, later in the stream: it wins
  s->barrier();
  s->copy(BufferView(a, 0, 400 * 4), BufferView(b, 100 * 4));  // a[0..400) -> b[100..500)
  dev().run(*s);
  auto v = download_vector<uint32_t>(dev(), *b, n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t want = kPoison;
    if (i >= 100 && i < 500) want = (i == 300 || i == 301) ? 0x0badf00du : 0x12345678u;
    ASSERT_EQ(v[i], want) << "word " << i;
  }
}

TEST_P(StreamTest, CopiesAtOddByteOffsetsAndAFillWithARaggedTail) {
  auto a = dev().alloc(103), b = dev().alloc(103);
  std::vector<uint8_t> bytes(103);
  std::iota(bytes.begin(), bytes.end(), 0);
  dev().upload(*a, bytes.data(), bytes.size());
  dev().fill(*b, 0);
  auto s = dev().record();
  s->copy(BufferView(a, 3, 50), BufferView(b, 7));  // copies have no alignment rule
  s->barrier();
  s->fill(BufferView(b, 64, 8), 0xFFFFFFFFu);
  s->fill(BufferView(b, 96), 0x44332211u);  // up to the end of the buffer: 7 bytes, the last word cut off
  dev().run(*s);
  auto got = download_vector<uint8_t>(dev(), *b, 103);
  for (size_t i = 0; i < 103; ++i) {
    uint8_t want = 0;
    if (i >= 7 && i < 57) want = uint8_t(i - 7 + 3);
    if (i >= 64 && i < 72) want = 0xFF;
    if (i >= 96) want = uint8_t(0x44332211u >> (8 * (i % 4)));
    ASSERT_EQ(got[i], want) << "byte " << i;
  }
}

TEST_P(StreamTest, BadCopiesAndFillsAreErrors) {
  auto a = dev().alloc(64), b = dev().alloc(32);
  auto s = dev().record();
  EXPECT_THROW(s->copy(BufferView(a), BufferView(b)), Error);              // 64 bytes into 32
  EXPECT_THROW(s->copy(BufferView(a, 0, 16), BufferView(b, 0, 8)), Error); // sizes differ
  EXPECT_THROW(s->copy(BufferView(a, 60, 8), BufferView(b)), Error);       // source overrun
  EXPECT_THROW(s->copy(BufferView(a, 0, 16), BufferView(a, 8)), Error);    // overlap within one buffer
  EXPECT_THROW(s->copy(BufferView(), BufferView(b)), Error);               // no buffer
  EXPECT_THROW(s->fill(BufferView(a, 2, 8), 0), Error);                    // misaligned offset
  EXPECT_THROW(s->fill(BufferView(a, 0, 6), 0), Error);                    // partial word short of the end
  EXPECT_THROW(s->fill(BufferView(a, 0, 68), 0), Error);                   // overrun
  EXPECT_THROW(s->fill(BufferView(), 0), Error);                           // no buffer
  // Refused commands leave nothing behind: the stream still runs.
  EXPECT_NO_THROW(dev().run(*s));
}

TEST_P(StreamTest, TimestampsMeasureTheCompletedSubmission) {
  const uint32_t n = 1 << 16;
  auto k = backends::compile_and_load(dev(), accumulate(64));
  auto x = dev().alloc(n * 4), y = dev().alloc(n * 4), z = dev().alloc(n * 4);
  dev().fill(*x, 0);
  dev().fill(*y, 0);
  BufferView views[] = {BufferView(x), BufferView(y)};
  auto s = dev().record();
  uint32_t t0 = s->timestamp();
  s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->barrier();
  uint32_t t1 = s->timestamp();
  s->copy(BufferView(y), BufferView(z));
  uint32_t t2 = s->timestamp();
  EXPECT_EQ(t0, 0u);
  EXPECT_EQ(t1, 1u);
  EXPECT_EQ(t2, 2u);
  EXPECT_THROW(s->elapsed_ms(t0, t1), Error) << "no submission yet";
  for (int round = 0; round < 3; ++round) {
    dev().run(*s);
    double a01 = s->elapsed_ms(t0, t1), a12 = s->elapsed_ms(t1, t2), a02 = s->elapsed_ms(t0, t2);
    EXPECT_GE(a01, 0.0);
    EXPECT_GE(a12, 0.0);
    EXPECT_NEAR(a02, a01 + a12, 1e-3 + 1e-4 * a02) << "intervals of one submission add up";
    EXPECT_LT(a02, 10000.0) << "a small kernel and copy take milliseconds, not seconds";
  }
  EXPECT_THROW(s->elapsed_ms(0, 3), Error) << "only 3 timestamps were recorded";
}

TEST_P(StreamTest, AFinishedStreamRefusesMoreWorkAndStillRuns) {
  auto k = backends::compile_and_load(dev(), vector_add(64));
  auto a = dev().alloc(64), b = dev().alloc(64);
  auto s = dev().record();
  s->fill(BufferView(a), 1);
  s->finish();
  s->finish();  // finishing twice is harmless
  BufferView views[] = {BufferView(a), BufferView(a), BufferView(b)};
  EXPECT_THROW(s->dispatch(*k, views, ScalarArgs().u32(16), Grid{1}), Error);
  EXPECT_THROW(s->fill(BufferView(a), 2), Error);
  EXPECT_THROW(s->copy(BufferView(a), BufferView(b)), Error);
  EXPECT_THROW(s->barrier(), Error);
  EXPECT_THROW(s->timestamp(), Error);
  dev().run(*s);
  EXPECT_EQ(download_vector<uint32_t>(dev(), *a, 16), std::vector<uint32_t>(16, 1u));
}

TEST_P(StreamTest, SubmitEndsRecording) {
  auto k = backends::compile_and_load(dev(), vector_add(64));
  auto a = dev().alloc(64);
  auto s = dev().record();
  s->fill(BufferView(a), 5);
  dev().run(*s);
  BufferView views[] = {BufferView(a), BufferView(a), BufferView(a)};
  EXPECT_THROW(s->dispatch(*k, views, ScalarArgs().u32(16), Grid{1}), Error);
  EXPECT_THROW(s->fill(BufferView(a), 6), Error);
  EXPECT_EQ(download_vector<uint32_t>(dev(), *a, 16), std::vector<uint32_t>(16, 5u));
}

TEST_P(StreamTest, AnEmptyStreamRuns) {
  auto s = dev().record();
  EXPECT_NO_THROW(dev().run(*s));
  EXPECT_NO_THROW(dev().run(*s));
}

TEST_P(StreamTest, AStreamMayGoBeforeItsFence) {
  auto a = dev().alloc(1 << 20);
  std::unique_ptr<Fence> fence;
  {
    auto s = dev().record();
    s->fill(BufferView(a), 3);
    fence = dev().submit(*s);
  }
  fence->wait();
  EXPECT_TRUE(fence->ready());
  EXPECT_EQ(download_vector<uint32_t>(dev(), *a, 4), std::vector<uint32_t>(4, 3u));
}

}  // namespace
}  // namespace spire::rt::conformance
