#include "tools/spire/next_token.h"

namespace spire::cli {

void add_next_token(graph::Graph& g, graph::Value logits, int64_t vocab) {
  const graph::Value row = g.reshape(logits, {vocab});
  g.output(kNextToken, g.op("argmax", {row}, {{"axis", int64_t(0)}, {"keepdim", false}, {"select_last_index", false}}));
}

}  // namespace spire::cli
