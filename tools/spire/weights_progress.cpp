#include "tools/spire/weights_progress.h"

#include <memory>

#include "training/progress_bar.h"

namespace spire::cli {

std::function<void(uint64_t, uint64_t)> weights_progress(std::string label) {
  constexpr uint64_t kShownFrom = uint64_t(64) << 20;
  auto bar = std::make_shared<std::unique_ptr<training::ProgressBar>>();
  return [bar, label = std::move(label)](uint64_t done, uint64_t total) {
    if (total < kShownFrom) return;
    if (!*bar) *bar = std::make_unique<training::ProgressBar>(label, total >> 20, stderr, "MB");
    if (done < total) (*bar)->update(done >> 20);
    else (*bar)->finish();
  };
}

}  // namespace spire::cli
