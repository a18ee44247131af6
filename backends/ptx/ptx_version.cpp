// Which `.target` and `.version` to emit for a device's compute capability.
//
// The driver JIT refuses a `.version` newer than it knows (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so we emit
// the lowest ISA that introduced the target. Each entry below was checked with ptxas 13.0: it assembles a
// trivial entry at that version and rejects the previous one (sm_88 excepted: ptxas 13.0 accepts it from 7.3
// on, which cannot be right for a target it introduced, so we use 9.0, the ISA of that release; any driver
// that knows sm_88 takes 9.0).
#include <array>
#include <fmt/format.h>

#include "backends/ptx/ptx_backend.h"

namespace spire::ptx {

namespace {

struct TargetIsa {
  uint32_t sm;
  const char* version;
};

// Sorted by sm. Apart from Hopper's warpgroup matrices and tensor copies (PTX 8.0, which the translator asks for on
// sm_90; later targets' minimum is already newer), the code we emit uses nothing newer than PTX 6.3 / sm_75, so the
// target's own minimum is the module's minimum.
constexpr std::array<TargetIsa, 13> kTargets = {{
    {75, "6.3"},
    {80, "7.0"},
    {86, "7.1"},
    {87, "7.4"},
    {88, "9.0"},
    {89, "7.8"},
    {90, "7.8"},
    {100, "8.6"},
    {101, "8.6"},  // CUDA 12.x name of the part CUDA 13 calls sm_110; ptxas 13 no longer accepts it
    {103, "8.8"},
    {110, "9.0"},
    {120, "8.7"},
    {121, "8.8"},
}};

const TargetIsa& lookup(uint32_t sm) {
  if (sm < kTargets.front().sm)
    throw CompileError(fmt::format("sm_{} is below spire's PTX baseline sm_75 (Turing); ptxas 13 cannot assemble "
                                   "for it either", sm));
  // A capability we do not know (a newer GPU, or a minor revision such as 8.5) gets PTX for the newest known
  // target below it: PTX for sm_XY is JIT-compiled by the driver for any GPU of capability >= XY.
  const TargetIsa* best = &kTargets.front();
  for (const auto& t : kTargets)
    if (t.sm <= sm) best = &t;
  return *best;
}

}  // namespace

uint32_t ptx_target_for(uint32_t sm) { return lookup(sm).sm; }

std::string ptx_version_for(uint32_t sm) { return lookup(sm).version; }

}  // namespace spire::ptx
