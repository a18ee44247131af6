#include "kernels/staged_copy.h"

#include <algorithm>
#include <map>
#include <optional>

namespace spire::lowering::heavy {

using namespace kir;

void stage_ranges(KernelBuilder& kb, const Shared& to, Val lid, uint32_t wg, const std::vector<StagedRange>& ranges) {
  struct Item {
    Val at, value;
    std::optional<Val> present;
  };
  std::vector<Item> items;
  for (const StagedRange& r : ranges)
    for (uint32_t base = 0; base < r.count; base += wg) {
      Val e = lid + base;
      std::optional<Val> present;
      if (base + wg > r.count) present = e < r.count;
      const Val item = present ? min(e, r.count - 1) : e;
      if (r.elements) {
        for (const auto& [at, value] : r.elements(item)) items.push_back({at, value, present});
      } else {
        auto [at, value] = r.element(item);
        items.push_back({at, value, present});
      }
    }
  for (const Item& it : items) {
    auto store = [&] { to[it.at] = it.value; };
    if (it.present) kb.if_(*it.present, store);
    else store();
  }
}

uint32_t bank_friendly_stride(uint32_t min_stride, uint32_t lanes,
                              const std::function<uint32_t(uint32_t lane, uint32_t stride)>& address) {
  constexpr uint32_t kBanks = 32, kSubgroup = 32;
  const uint32_t align = min_stride % 4 == 0 ? 4 : min_stride % 2 == 0 ? 2 : 1;
  const uint32_t phase = kSubgroup / align;  // invocations served together by one wide load
  uint32_t best = min_stride, best_cost = ~0u;
  for (uint32_t stride = min_stride; stride < min_stride + kBanks; stride += align) {
    uint32_t cost = 0;
    for (uint32_t first = 0; first < lanes; first += phase) {
      std::map<uint32_t, std::vector<uint32_t>> banks;  // bank -> the distinct addresses read from it
      for (uint32_t lane = first; lane < std::min(first + phase, lanes); ++lane)
        for (uint32_t word = 0; word < align; ++word) {
          const uint32_t at = address(lane, stride) + word;
          auto& addresses = banks[at % kBanks];
          if (std::find(addresses.begin(), addresses.end(), at) == addresses.end()) addresses.push_back(at);
        }
      size_t worst = 0;
      for (const auto& [bank, addresses] : banks) worst = std::max(worst, addresses.size());
      cost += uint32_t(worst);
    }
    if (cost < best_cost) best_cost = cost, best = stride;
  }
  return best;
}

Val clamped_index(Val v, int64_t size) { return cast(min(max(v, 0), int32_t(size - 1)), Type::U32); }

}  // namespace spire::lowering::heavy
