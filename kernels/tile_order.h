// Which output block a workgroup of a tiled product computes: the order that keeps operands in L2.
#pragma once

#include <cstdint>

#include "ir/kernel/builder.h"

namespace spire::lowering::heavy {

struct TilePosition {
  kir::Val batch, tile_row, tile_col;
};

// Workgroups run in bands of 8 tile rows, column by column within a band: the workgroups resident at once then
// share a few rows of A and a few columns of B, which stay in L2 (row by row, every band would stream all of B from
// memory again). `group` is the linear workgroup id over batch x tiles_m x tiles_n; `batch` may reach past the last
// batch on a folded grid, which the kernel checks.
TilePosition banded_tile_position(kir::KernelBuilder& kb, kir::Val group, uint32_t tiles_m, uint32_t tiles_n);

}  // namespace spire::lowering::heavy
