#include "lowering/prepare.h"

#include "lowering/compute_in_f32.h"
#include "lowering/decompose.h"
#include "lowering/fold_transposes.h"
#include "lowering/pool_grad_by_argmax.h"
#include "lowering/sum_through_max_pool.h"

namespace spire::lowering {

graph::Graph canonicalize(const graph::Graph& g) {
  return pool_grad_by_argmax(sum_through_max_pool(fold_transposes(decompose(compute_in_f32(g)))));
}

graph::Graph prepare_for_fusion(const graph::Graph& g, const passes::PassPipeline* passes,
                                const passes::PassObserver& observer) {
  graph::Graph decomposed = canonicalize(g);
  if (!passes) return decomposed;
  return passes->run(passes::PassPoint::BeforeFusion, std::move(decomposed), observer);
}

}  // namespace spire::lowering
