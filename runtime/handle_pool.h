// A backend's reusable synchronization handles (CUDA events, Vulkan fences): creating one costs a driver call, and a
// device takes and returns one for every wait between streams or submissions, from any thread.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

namespace spire::rt {

template <class Handle>
class HandlePool {
 public:
  // A handle returned before, or nothing: the caller then creates one.
  std::optional<Handle> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return std::nullopt;
    Handle h = free_.back();
    free_.pop_back();
    return h;
  }
  // Keeps `h` (reset, ready for reuse) for a later take().
  void give(Handle h) {
    std::lock_guard lock(mutex_);
    free_.push_back(h);
  }
  // Every handle kept, for the owner to destroy; the pool is empty after.
  std::vector<Handle> drain() {
    std::lock_guard lock(mutex_);
    return std::move(free_);
  }

 private:
  std::mutex mutex_;
  std::vector<Handle> free_;
};

}  // namespace spire::rt
