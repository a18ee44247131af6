// Which launches of a recorded stream must wait for the ones before them.
//
// A barrier after every launch (what a stream is safe with) makes each dispatch wait for the previous one to drain,
// even when the two touch different memory: a training step's weight gradient and input gradient of one layer, or
// two independent branches. On Vulkan every barrier is a pipeline drain plus cache maintenance, a few microseconds on
// a GPU, which at small batches is most of a step. LaunchHazards tracks the bytes the launches since the last
// barrier read and wrote, so a recorder puts a barrier only before a launch that reads what they wrote (read after
// write) or writes what they read or wrote (write after read, write after write). Ranges are byte ranges of the
// bound views, so transient buffers that share an arena are told apart by their offsets. CUDA streams order their
// launches anyway; there a barrier is free and this changes nothing.
#pragma once

#include <span>
#include <vector>

#include "runtime/device.h"

namespace spire::rt {

struct BufferUse {
  BufferView view;
  Access access = Access::ReadWrite;
};

// The uses of a launch of `kernel` over `views` (in its buffer declaration order), with the kernel's declared access.
std::vector<BufferUse> launch_uses(const KernelInterface& kernel, std::span<const BufferView> views);

class LaunchHazards {
 public:
  // True when a launch with these uses must not overlap the launches recorded since the last clear().
  bool conflicts(std::span<const BufferUse> uses) const;
  // A launch was recorded without a barrier before it.
  void add(std::span<const BufferUse> uses);
  // A barrier was recorded: everything before it is complete and visible.
  void clear();
  // What a recorder does per launch: a barrier into `stream` first if the launch conflicts (then clear()), the dispatch,
  // then add(). Returns whether it recorded a barrier.
  bool dispatch(CommandStream& stream, const Kernel& kernel, std::span<const BufferView> views, const ScalarArgs& scalars,
                Grid grid);

 private:
  struct Range {
    const Buffer* buffer;
    uint64_t begin, end;
    bool overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
  };
  static bool any_overlap(const std::vector<Range>& set, const Range& r);
  std::vector<Range> reads_, writes_;
};

}  // namespace spire::rt
