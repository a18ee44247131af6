#include "kernels/tile_order.h"

namespace spire::lowering::heavy {

namespace {
constexpr uint32_t kBand = 8;  // tile rows of a band
}  // namespace

TilePosition banded_tile_position(kir::KernelBuilder& kb, kir::Val group, uint32_t tiles_m, uint32_t tiles_n) {
  using kir::min;
  kir::Val batch = group / (tiles_n * tiles_m);
  kir::Val in_batch = group % (tiles_n * tiles_m);
  const uint32_t band = kBand * tiles_n;
  kir::Val first_row = (in_batch / band) * kBand;
  kir::Val band_rows = min(kb.u32(tiles_m) - first_row, kBand);
  kir::Val tile_row = first_row + (in_batch % band) % band_rows;
  kir::Val tile_col = (in_batch % band) / band_rows;
  return {batch, tile_row, tile_col};
}

}  // namespace spire::lowering::heavy
