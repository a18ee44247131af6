#include "lowering/memory_plan.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "lowering/parameter_launches.h"

namespace spire::lowering {

namespace {

uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Bytes a buffer occupies in the arena: at least one word, so every binding has a nonzero range.
uint64_t footprint(const PlannedBuffer& b, uint64_t alignment) { return round_up(std::max<uint64_t>(b.bytes(), 4), alignment); }

bool lifetimes_overlap(const PlannedBuffer& a, const PlannedBuffer& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

}  // namespace

uint64_t arena_alignment(const rt::DeviceInfo& info) { return std::max<uint64_t>(info.min_storage_offset_alignment, 16); }

void plan_memory(Plan& plan, const rt::DeviceInfo& info) {
  uint64_t alignment = arena_alignment(info);
  plan.arena_alignment = uint32_t(alignment);
  for (auto& b : plan.buffers) b.first_use = b.last_use = -1;
  for (size_t l = 0; l < plan.launches.size(); ++l)
    for (int32_t id : plan.launches[l].buffers) {
      auto& b = plan.buffers[size_t(id)];
      if (b.first_use < 0) b.first_use = int32_t(l);
      b.last_use = int32_t(l);
    }
  // What a parameters-only launch leaves for the others must survive the steps that do not run it.
  const std::vector<bool> kept = kept_across_steps(plan);
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (kept[i]) plan.buffers[i].first_use = 0, plan.buffers[i].last_use = int32_t(plan.launches.size()) - 1;
  // A window's buffer lives while the window is used: its memory is the window's.
  for (const auto& w : plan.buffers) {
    if (w.view_of < 0 || w.first_use < 0) continue;
    auto& b = plan.buffers[size_t(w.view_of)];
    b.first_use = b.first_use < 0 ? w.first_use : std::min(b.first_use, w.first_use);
    b.last_use = std::max(b.last_use, w.last_use);
  }

  // Largest first (the classic greedy for interval packing); each takes the lowest offset where it fits
  // beside every placed buffer whose lifetime overlaps its own.
  std::vector<size_t> order;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    auto& b = plan.buffers[i];
    b.arena_offset = -1;
    if (b.persistent() || b.view_of >= 0) continue;
    if (b.first_use < 0) {
      b.arena_offset = 0;  // never bound
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].bytes() > plan.buffers[b].bytes();
  });
  std::vector<size_t> placed;
  uint64_t arena = 0;
  for (size_t i : order) {
    auto& b = plan.buffers[i];
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of live neighbours
    for (size_t j : placed)
      if (lifetimes_overlap(b, plan.buffers[j]))
        busy.push_back({uint64_t(plan.buffers[j].arena_offset),
                        uint64_t(plan.buffers[j].arena_offset) + footprint(plan.buffers[j], alignment)});
    std::sort(busy.begin(), busy.end());
    uint64_t size = footprint(b, alignment), offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    b.arena_offset = int64_t(offset);
    arena = std::max(arena, offset + size);
    placed.push_back(i);
  }
  for (auto& w : plan.buffers)
    if (w.view_of >= 0) w.arena_offset = plan.buffers[size_t(w.view_of)].arena_offset + int64_t(w.view_offset);
  plan.arena_bytes = arena;
}

std::string check_memory_plan(const Plan& plan) {
  const auto& bs = plan.buffers;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (bs[i].persistent() || bs[i].first_use < 0) continue;
    if (bs[i].arena_offset < 0 || bs[i].arena_offset % plan.arena_alignment != 0)
      return fmt::format("buffer '{}' has offset {}, not a multiple of {}", bs[i].slot.name, bs[i].arena_offset,
                         plan.arena_alignment);
    if (uint64_t(bs[i].arena_offset) + bs[i].bytes() > plan.arena_bytes)
      return fmt::format("buffer '{}' ends past the arena", bs[i].slot.name);
    if (bs[i].view_of >= 0) {  // its memory is its buffer's, checked as that buffer's
      const auto& of = bs[size_t(bs[i].view_of)];
      if (of.persistent() || of.view_of >= 0 || bs[i].arena_offset != of.arena_offset + int64_t(bs[i].view_offset) ||
          bs[i].view_offset + bs[i].bytes() > of.bytes() || bs[i].first_use < of.first_use || bs[i].last_use > of.last_use)
        return fmt::format("buffer '{}' is not a window within the life and memory of '{}'", bs[i].slot.name,
                           of.slot.name);
      continue;
    }
    for (size_t j = i + 1; j < bs.size(); ++j) {
      if (bs[j].persistent() || bs[j].first_use < 0 || bs[j].view_of >= 0 || !lifetimes_overlap(bs[i], bs[j])) continue;
      uint64_t a0 = uint64_t(bs[i].arena_offset), a1 = a0 + std::max<uint64_t>(bs[i].bytes(), 4);
      uint64_t b0 = uint64_t(bs[j].arena_offset), b1 = b0 + std::max<uint64_t>(bs[j].bytes(), 4);
      if (a0 < b1 && b0 < a1)
        return fmt::format("buffers '{}' (launches {}..{}) and '{}' (launches {}..{}) overlap in the arena",
                           bs[i].slot.name, bs[i].first_use, bs[i].last_use, bs[j].slot.name, bs[j].first_use,
                           bs[j].last_use);
    }
  }
  return "";
}

}  // namespace spire::lowering
