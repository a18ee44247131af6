#include "tuning/tuning_setup.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuning/tune_graph.h"
#include "tuning/tuning_cache.h"

namespace spire::tuning {

lowering::MapTuningChoices prepare_tuning(const TuningFlags& flags, rt::Device& device,
                                          const std::vector<const graph::Graph*>& graphs, std::FILE* log) {
  TuningCache cache(flags.cache_file.empty() ? TuningCache::default_path() : flags.cache_file);
  if (flags.tune) {
    std::vector<TunedOp> rows;
    for (const graph::Graph* g : graphs)
      for (TunedOp& r : tune_graph(*g, device, cache, {}, flags.precision))
        if (std::none_of(rows.begin(), rows.end(), [&](const TunedOp& o) { return o.key == r.key; }))
          rows.push_back(std::move(r));
    if (log) {
      fmt::print(log, "tuning on {} ({}), cache {}:\n", device.info().id, device.info().name, cache.path());
      fmt::print(log, "{}", tuning_table(rows));
    }
  }
  return cache.choices_for(device.info());
}

}  // namespace spire::tuning
