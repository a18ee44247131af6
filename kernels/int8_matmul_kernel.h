// The kernel of matmul_int8_weight (ir/graph/ops/int8_matmul_ops.cpp): y[r, n] = scale[n] * sum_k x[r, k] q[n, k]
// over rows r of x [rows, K], the int8 weights q packed four to an i32 word (w [N, ceil(K/4)], byte k % 4 of word
// k / 4, little-endian) and widened to the float type in registers.
//
// A workgroup per output channel n and block of up to kInt8RowsPerGroup rows of x: its invocations stride over the
// words of weight row n (neighbours read neighbouring words, so a row's bytes are read once and coalesced), each
// keeping one partial dot product per row of the block, and a workgroup reduction (workgroup_reduce.h) sums each.
// At a decoder's batch of one token (rows = 1) that is a matrix-vector product reading each weight byte once: the
// memory-bound step int8 storage is for. Buffers: x (read), w (read, i32), scale (read), y (write).
#pragma once

#include <cstdint>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

struct Int8MatmulShape {
  int64_t rows = 1;  // of x (every dimension but the last)
  int64_t k = 1;     // x's last dimension
  int64_t n = 1;     // output channels
};

// Rows of x one workgroup takes: the weight row is read once for all of them.
inline constexpr int64_t kInt8RowsPerGroup = 4;

// `t`: F32 or F64 (half values are computed in f32 by compute_in_f32). `subgroup`: the device's
// Limits::subgroup_size for the reductions (0: shared memory alone; the same bits either way).
HeavyKernel int8_matmul_kernel(const Int8MatmulShape& s, kir::Type t, uint32_t subgroup = 0);

}  // namespace spire::lowering::heavy
