#include "tools/spire/decode_traffic.h"

namespace spire::cli {

double weight_bytes_per_step(const graph::Graph& g, const std::function<double(graph::DType)>& stored_bytes) {
  const auto users = g.users();
  double bytes = 0;
  for (graph::Value p : g.parameters()) {
    const graph::Node& n = g.node(p);
    if (users[size_t(p.id)].empty()) continue;  // held, never read
    const double element = stored_bytes(n.type.dtype);
    bool gathered_only = true;
    double gathered = 0;  // the elements the gathers read
    for (graph::Value u : users[size_t(p.id)]) {
      const graph::Node& user = g.node(u);
      if (graph::op_name(user.op) != "gather" || user.inputs[0] != p || user.inputs[1] == p) {
        gathered_only = false;
        break;
      }
      const int64_t rows = n.type.shape.at(size_t(user.attrs.get_int("axis")));
      gathered += double(n.type.numel() / rows) * double(g.type(user.inputs[1]).numel());
    }
    bytes += element * (gathered_only ? gathered : double(n.type.numel()));
  }
  return bytes;
}

}  // namespace spire::cli
