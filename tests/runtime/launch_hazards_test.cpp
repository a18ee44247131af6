// LaunchHazards: which launches must wait for the ones recorded since the last barrier. The buffers are stand-ins
// (only their identity and the views' byte ranges matter), so every hazard kind is checked without a device.
#include "runtime/launch_hazards.h"

#include <gtest/gtest.h>

namespace spire::rt {
namespace {

class FakeBuffer final : public Buffer {
 public:
  explicit FakeBuffer(uint64_t bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_; }
  Memory memory() const override { return Memory::DeviceLocal; }
  void* mapped() const override { return nullptr; }

 private:
  uint64_t bytes_;
};

BufferUse use(Buffer& b, uint64_t offset, uint64_t bytes, Access a) { return {BufferView(b, offset, bytes), a}; }

constexpr auto R = Access::Read;
constexpr auto W = Access::Write;
constexpr auto RW = Access::ReadWrite;

TEST(LaunchHazards, EmptyHistoryNeverConflicts) {
  FakeBuffer a(64);
  LaunchHazards h;
  std::vector<BufferUse> u{use(a, 0, 64, RW)};
  EXPECT_FALSE(h.conflicts(u));
}

TEST(LaunchHazards, ReadAfterWriteConflicts) {
  FakeBuffer a(64), b(64);
  LaunchHazards h;
  std::vector<BufferUse> first{use(a, 0, 64, R), use(b, 0, 64, W)};
  h.add(first);
  std::vector<BufferUse> reads_b{use(b, 0, 64, R)};
  EXPECT_TRUE(h.conflicts(reads_b));
}

TEST(LaunchHazards, WriteAfterReadAndWriteAfterWriteConflict) {
  FakeBuffer a(64), b(64);
  LaunchHazards h;
  std::vector<BufferUse> first{use(a, 0, 64, R), use(b, 0, 64, W)};
  h.add(first);
  std::vector<BufferUse> writes_a{use(a, 0, 64, W)};
  std::vector<BufferUse> writes_b{use(b, 0, 64, W)};
  std::vector<BufferUse> updates_a{use(a, 0, 64, RW)};
  EXPECT_TRUE(h.conflicts(writes_a));
  EXPECT_TRUE(h.conflicts(writes_b));
  EXPECT_TRUE(h.conflicts(updates_a));
}

TEST(LaunchHazards, ReadsOfTheSameInputDoNotConflict) {
  // Two gradients of one layer read the same activations and write different buffers.
  FakeBuffer x(64), dy(64), dx(64), dw(64);
  LaunchHazards h;
  std::vector<BufferUse> input_grad{use(dy, 0, 64, R), use(dx, 0, 64, W)};
  std::vector<BufferUse> weight_grad{use(x, 0, 64, R), use(dy, 0, 64, R), use(dw, 0, 64, W)};
  h.add(input_grad);
  EXPECT_FALSE(h.conflicts(weight_grad));
  h.add(weight_grad);
  std::vector<BufferUse> reads_dw{use(dw, 0, 64, R)};
  EXPECT_TRUE(h.conflicts(reads_dw)) << "the history must keep the second launch's write too";
}

TEST(LaunchHazards, DisjointRangesOfOneBufferDoNotConflictAndTouchingOnesDoNot) {
  // Transient values share one arena: what tells them apart is their byte range.
  FakeBuffer arena(1024);
  LaunchHazards h;
  std::vector<BufferUse> first{use(arena, 0, 256, W)};
  h.add(first);
  std::vector<BufferUse> after{use(arena, 256, 256, RW)};  // starts where the first ends
  EXPECT_FALSE(h.conflicts(after));
  std::vector<BufferUse> overlapping{use(arena, 255, 2, R)};
  EXPECT_TRUE(h.conflicts(overlapping));
}

TEST(LaunchHazards, ViewToTheEndCoversTheRestOfTheBuffer) {
  FakeBuffer arena(1024);
  LaunchHazards h;
  std::vector<BufferUse> first{use(arena, 512, 0, W)};  // size 0: to the end
  h.add(first);
  std::vector<BufferUse> tail{use(arena, 1000, 8, R)};
  EXPECT_TRUE(h.conflicts(tail));
}

TEST(LaunchHazards, ClearForgetsTheHistory) {
  FakeBuffer a(64);
  LaunchHazards h;
  std::vector<BufferUse> w{use(a, 0, 64, W)};
  h.add(w);
  ASSERT_TRUE(h.conflicts(w));
  h.clear();
  EXPECT_FALSE(h.conflicts(w));
}

TEST(LaunchHazards, LaunchUsesTakeTheKernelsDeclaredAccess) {
  KernelInterface k;
  k.name = "k";
  k.buffers = {{"in", DType::F32, R}, {"out", DType::F32, W}};
  FakeBuffer a(64), b(64);
  std::vector<BufferView> views{BufferView(a, 0, 64), BufferView(b, 0, 64)};
  std::vector<BufferUse> u = launch_uses(k, views);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].access, R);
  EXPECT_EQ(u[1].access, W);
  EXPECT_EQ(u[1].view.buffer, &b);
  std::vector<BufferView> one{BufferView(a, 0, 64)};
  EXPECT_THROW(launch_uses(k, one), Error);
}

}  // namespace
}  // namespace spire::rt
