#include "tools/spire/next_token.h"

namespace spire::cli {

void add_next_token(graph::Graph& g, std::vector<std::pair<std::string, graph::Tensor>>& weights, graph::Value logits,
                    int64_t vocab) {
  using graph::DType;
  graph::Tensor ids(DType::I32, {vocab});
  for (int64_t v = 0; v < vocab; ++v) ids[v] = double(v);
  const graph::Value positions = g.parameter("spire.token_ids", DType::I32, {vocab});
  weights.emplace_back("spire.token_ids", std::move(ids));
  const graph::Value row = g.reshape(logits, {vocab});
  const graph::Value is_top = g.compare(row, g.max(row, {0}, true), graph::CompareMode::Eq);
  // The smallest id among the maxima: -max(-id) over them, -vocab elsewhere.
  const graph::Value minus_ids = g.where(is_top, g.neg(positions), g.constant(-double(vocab), DType::I32, {vocab}));
  g.output(kNextToken, g.neg(g.max(minus_ids, {0}, false)));
}

}  // namespace spire::cli
