// A decoder step's growing key/value cache made a fixed device cache written in place (`spire generate`,
// docs/DECODERS.md). Hugging Face's decoder-with-past form appends a step's key to its past by Concat:
// present = concat(past, new; axis). With the past a state of C - 1 positions, that concat copies the whole cache every
// step and attention reads the copy. Here the state gets C positions (the concat's result shape), the concat becomes
// write_at(state, new, slot; axis), which lowering writes into the state's own buffer (one row a step, nothing
// copied), and attention reads the state with the row written. Attention does not depend on where a key sits, only
// on the mask, so the caller feeds a mask that keeps slots 0..slot (the step's own key now sits at `slot`, not last).
#pragma once

#include <set>
#include <string>

#include "ir/graph/graph.h"

namespace spire::passes {

struct InPlaceCache {
  graph::Graph graph;
  // Empty when every cache matched; else why one did not (the graph is then unchanged, the caller keeps the concat).
  std::string not_applied;
};

// `g` with each state named in `caches` that is read only by concat(state or cast(state), new; axis) of two inputs
// rewritten as above: the state's positions along `axis` become the concat's, the concat's value becomes
// write_at(state, new cast to the state's dtype, g's input `slot` (i64 [1]); axis) (cast back to the concat's dtype
// where the state is stored in another, as a half cache is), and that is the state's update. The state updates g had
// for those states, and the outputs named in `drop_outputs` (the present outputs nobody reads), are dropped: the
// in-place write needs the state's update to be the write_at, and no output to hold the cache. All or none: if one
// cache does not have that form, nothing changes and `not_applied` says why.
InPlaceCache write_cache_in_place(const graph::Graph& g, const std::set<std::string>& caches, const std::string& slot,
                                  const std::set<std::string>& drop_outputs);

}  // namespace spire::passes
