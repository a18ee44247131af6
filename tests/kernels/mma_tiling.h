// The tensor-core tilings the kernel tests name by hand: a tile_m x tile_n block, K slices of tile_k, warps_m x
// warps_n subgroups, `stages` deep (one fragment per register tile: reg 1x1).
#pragma once

#include <cstdint>

#include "kernels/matmul_kernel.h"

namespace spire::heavy_test {

inline lowering::heavy::MatmulTiling mma(uint32_t tm, uint32_t tn, uint32_t tk, uint32_t wm, uint32_t wn,
                                         uint32_t stages = 2) {
  lowering::heavy::MatmulTiling t{tm, tn, tk, 1, 1};
  t.warps_m = wm;
  t.warps_n = wn;
  t.stages = stages;
  return t;
}

// The same tiling with its accumulators leaving `results` at a time (MatmulTiling::results).
inline lowering::heavy::MatmulTiling rounds(lowering::heavy::MatmulTiling t, uint32_t results) {
  t.results = results;
  return t;
}

}  // namespace spire::heavy_test
