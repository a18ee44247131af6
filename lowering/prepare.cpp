#include "lowering/prepare.h"

#include "lowering/decompose.h"

namespace spire::lowering {

graph::Graph prepare_for_fusion(const graph::Graph& g, const passes::PassPipeline* passes,
                                const passes::PassObserver& observer) {
  graph::Graph decomposed = decompose(g);
  if (!passes) return decomposed;
  return passes->run(passes::PassPoint::BeforeFusion, std::move(decomposed), observer);
}

}  // namespace spire::lowering
