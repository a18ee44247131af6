// PyTorch's grid_sample (ONNX's GridSample, opset 16) as graph ops, for every importer (frontend/onnx's GridSample,
// frontend/torch's F.grid_sample and aten.grid_sampler_2d): the input [N, C, H, W] read at the grid's points
// [N, Ho, Wo, (x, y)], normalized to [-1, 1], bilinearly (the four neighbours weighed by distance), bicubically (the
// 16 neighbours weighed by cubic convolution) or at the nearest pixel, with zeros, border or reflection padding. The
// grid is data, so the points are computed on the device: each neighbour's position becomes a flat row of the input
// seen as [N H W, C], which the graph's gather op reads; a neighbour outside the input reads row 0 and is then zeroed,
// so nothing is read out of bounds.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph {

struct GridSampleOptions {
  std::string mode = "bilinear";   // or "nearest", "bicubic"
  std::string padding = "zeros";   // or "border", "reflection"
  bool align_corners = false;
};

// Why spire cannot sample `x` at `grid` so ("" where it can): not float tensors of one type, not 2-D, a grid of
// another shape than [N, Ho, Wo, 2], an input of more than 2^24 pixels (rows are f32 positions), another mode.
std::string grid_sample_refusal(const TensorType& x, const TensorType& grid, const GridSampleOptions& o);

// The first row of each image in the input seen as rows, [N, 1, 1] of f32: a constant the caller makes into a value
// (importers keep constants their own way) and passes as `image_starts`.
Tensor grid_sample_image_starts(int64_t n, int64_t h, int64_t w);

// The sampled values [N, C, Ho, Wo]; grid_sample_refusal must be "" for these types and options.
Value grid_sample(Graph& g, Value x, Value grid, Value image_starts, const GridSampleOptions& o);

}  // namespace spire::graph
