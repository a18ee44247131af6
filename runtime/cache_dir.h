// The one definition of where spire keeps what it caches across runs (autotuning results, Vulkan pipeline
// caches, CUDA modules): $SPIRE_CACHE_DIR, else $XDG_CACHE_HOME/spire, else $HOME/.cache/spire. An empty
// variable counts as unset. The folder is not created here: writers create it when they first save.
#pragma once

#include <filesystem>

namespace spire::rt {

// The cache folder, or an empty path when none of the three variables is set (then callers fall back or skip).
std::filesystem::path cache_dir();

// SPIRE_NO_DISK_CACHE=1: the runtime's disk caches (Vulkan pipeline caches, CUDA modules) neither read nor
// write anything. The tuning cache is not affected: it holds measurements, not compiler output.
bool disk_cache_disabled();

}  // namespace spire::rt
