#include "lowering/heavy_kernels/staged_copy.h"

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
      auto [at, value] = r.element(present ? min(e, r.count - 1) : e);
      items.push_back({at, value, present});
    }
  for (const Item& it : items) {
    auto store = [&] { to[it.at] = it.value; };
    if (it.present) kb.if_(*it.present, store);
    else store();
  }
}

}  // namespace spire::lowering::heavy
