// Where the SPIR-V backend lands kir's copies into workgroup memory (emit_copies.cpp stages each copy in registers
// and stores it later): which wait lands which copy statements ("sites"), worked out once over the kernel's
// structured body.
//
// A wait with `pending` = n must land every copy of a closed batch older than the newest n; younger ones and the
// open batch may stay in registers, so that a pipeline S stages deep keeps S - 1 slices in flight. The plan tracks,
// per site, how many batches have closed since it last ran (its age): a wait lands the sites that may be older
// than its count, where "may" takes the oldest age over every path (an If's two branches, a loop's entry and its
// previous round). Landing a copy early is always allowed, so that over-approximation only costs overlap: a
// pipeline gets its full depth where each slice's copies are distinct sites (a K loop unrolled by the stage
// count), while one site per operand reused every round lands its previous copy when it runs again.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::spirv {

struct CopyPlan {
  std::map<const kir::CopyToShared*, uint32_t> site_of;          // each copy statement's site, numbered in body order
  std::map<const kir::CopyWait*, std::vector<uint32_t>> lands;    // the sites a wait lands (if they hold a copy)
  std::set<uint32_t> lands_before_rerun;  // sites that may still hold their previous copy when they run again
};

CopyPlan plan_copy_sites(const kir::Block& body);

}  // namespace spire::spirv
