// The op table: every family's rows, built once.
#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {

void add_graph_ops(OpTable& t, std::initializer_list<std::pair<const char*, Handler>> rows) {
  for (const auto& [name, emit] : rows) t[name] = {emit, {}};
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_elementwise_ops(t);
    register_activation_ops(t);
    register_nn_ops(t);
    register_shape_ops(t);
    register_reduce_ops(t);
    register_constant_ops(t);
    register_loss_ops(t);
    register_indexing_ops(t);
    register_resize_ops(t);
    register_trig_ops(t);
    register_recurrent_ops(t);
    register_topk_ops(t);
    register_norm_ops(t);
    register_optimizer_ops(t);
    register_signal_ops(t);
    register_linalg_ops(t);
    register_grid_sample_ops(t);
    register_einsum_ops(t);
    register_roi_align_ops(t);
    register_control_flow_ops(t);
    register_ops_along_one_axis(t);
    return t;
  }();
  return table;
}

}  // namespace spire::onnx_import
