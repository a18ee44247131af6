// Copying parts of buffers into workgroup memory the way the staged kernels need it to be fast: every invocation's
// loads emitted before any of its stores, so they fly together. (A loop with one load per iteration serialized them:
// LeNet's staged weight gradient ran 4-6x slower that way, docs/PERFORMANCE.md.)
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "ir/kernel/builder.h"

namespace spire::lowering::heavy {

// `count` elements, element e (0 <= e < count) giving its index in workgroup memory and the value to store there (a
// load, which must be valid for every such e: clamp and select rather than branch).
struct StagedRange {
  uint32_t count = 0;
  std::function<std::pair<kir::Val, kir::Val>(kir::Val e)> element;
};

// Invocation `lid` of `wg` takes elements lid, lid + wg, ... of each range in turn; in a last, partial round the
// invocations past the end load element count - 1 and store nothing. The caller puts the barrier after it.
void stage_ranges(kir::KernelBuilder& kb, const kir::Shared& to, kir::Val lid, uint32_t wg,
                  const std::vector<StagedRange>& ranges);

}  // namespace spire::lowering::heavy
