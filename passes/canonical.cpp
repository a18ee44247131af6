#include "passes/canonical.h"

#include "passes/compute_in_f32.h"
#include "passes/decompose.h"
#include "passes/fold_transposes.h"
#include "passes/fuse_norms.h"
#include "passes/pool_grad_by_argmax.h"
#include "passes/sum_through_max_pool.h"

namespace spire::passes {

const std::vector<Pass>& canonical_passes() {
  static const std::vector<Pass> list = {
      {"fuse_norms", fuse_norms},
      {"compute_in_f32", compute_in_f32},
      {"decompose", decompose},
      {"fold_transposes", fold_transposes},
      {"sum_through_max_pool", sum_through_max_pool},
      {"pool_grad_by_argmax", pool_grad_by_argmax},
  };
  return list;
}

graph::Graph canonicalize(const graph::Graph& g, const PassObserver& observer) {
  static const PassPipeline pipeline = [] {
    PassPipeline p;
    for (const Pass& pass : canonical_passes()) p.add(PassPoint::Canonical, pass);
    return p;
  }();
  return pipeline.run(PassPoint::Canonical, g, observer);
}

graph::Graph prepare_for_fusion(const graph::Graph& g, const PassPipeline* pipeline, const PassObserver& observer) {
  graph::Graph canonical = canonicalize(g);
  if (!pipeline) return canonical;
  return pipeline->run(PassPoint::BeforeFusion, std::move(canonical), observer);
}

}  // namespace spire::passes
