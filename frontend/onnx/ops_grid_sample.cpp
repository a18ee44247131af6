// GridSample (opset 16, PyTorch's grid_sample): ir/graph/composites/grid_sample.h builds it, as for the torch
// converter; here its attributes are read and what it refuses is refused by name.
#include "ir/graph/composites/grid_sample.h"

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

void grid_sample(NodeContext& c) {
  const graph::TensorType x = c.type(0), grid = c.type(1);
  graph::GridSampleOptions o;
  o.mode = c.attr_string("mode", "bilinear");
  // Opset 20 renamed the modes when it took N-D inputs: its "linear" and "cubic" are 2-D's bilinear and bicubic.
  if (o.mode == "linear") o.mode = "bilinear";
  if (o.mode == "cubic") o.mode = "bicubic";
  o.padding = c.attr_string("padding_mode", "zeros");
  o.align_corners = c.attr_int("align_corners", 0) != 0;
  const std::string refusal = graph::grid_sample_refusal(x, grid, o);
  if (!refusal.empty()) c.refuse(refusal);
  const Value starts = c.constant_value(graph::grid_sample_image_starts(x.shape[0], x.shape[2], x.shape[3]),
                                        c.node().output(0) + ".images");
  c.set_output(0, graph::grid_sample(c.g(), c.value(0), c.value(1), starts, o));
}

}  // namespace

void register_grid_sample_ops(OpTable& t) { t["GridSample"] = {grid_sample, {}}; }

}  // namespace spire::onnx_import
