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
  // Instead of `element`: item e's several (index, value) pairs, computed together (a pooling gradient's window).
  std::function<std::vector<std::pair<kir::Val, kir::Val>>(kir::Val e)> elements{};  // ({}: may be left out)
};

// Invocation `lid` of `wg` takes elements lid, lid + wg, ... of each range in turn; in a last, partial round the
// invocations past the end load element count - 1 and store nothing. The caller puts the barrier after it.
void stage_ranges(kir::KernelBuilder& kb, const kir::Shared& to, kir::Val lid, uint32_t wg,
                  const std::vector<StagedRange>& ranges);

// The row stride from min_stride on (at most 32 more) under which one read of `lanes` invocations, invocation i
// reading the 4-byte element address(i, stride) and the ones after it, takes the fewest workgroup-memory wavefronts
// (a bank serves one address per wavefront; invocations reading the same address share it), summed over subgroups of
// 32; ties go to the shortest. Staged kernels pad their rows so: a subgroup spanning rows a power-of-two stride
// apart reads one bank. The stride keeps min_stride's alignment (up to 4 elements, 16 bytes), so that compilers
// still pair or quadruple neighbouring loads, and the cost counts such reads: a wide load of `align` elements per
// invocation is served 32 / align invocations at a time. (On the H100, padding LeNet's second convolution's
// 18-element rows to 19 made ptxas's build of its weight gradient 8% slower.)
uint32_t bank_friendly_stride(uint32_t min_stride, uint32_t lanes,
                              const std::function<uint32_t(uint32_t lane, uint32_t stride)>& address);

// A signed index clamped into 0 .. size - 1, as u32: the index of a load that a select then masks where `v` was
// outside (every invocation loads, none branches).
kir::Val clamped_index(kir::Val v, int64_t size);

}  // namespace spire::lowering::heavy
