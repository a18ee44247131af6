// The kernels the conformance tests load and dispatch, written with the kernel builder. Each guards its
// accesses with i < n, so a grid larger than n (rounding, folding) writes nothing past the end.
#pragma once

#include <cstdint>

#include "ir/kernel/kernel.h"

namespace spire::rt::conformance {

// z[i] = x[i] + y[i] (f32 buffers x, y, z; u32 n).
kir::Kernel vector_add(uint32_t workgroup);
// y[i] += x[i] (f32 buffers x, y; u32 n): each run shows in the result.
kir::Kernel accumulate(uint32_t workgroup);
// yf[i] = x[i] * a, yi[i] = i + k (buffers f32 x, f32 yf, i32 yi; scalars u32 n, i32 k, f32 a).
kir::Kernel scalars_32bit();
// y[i] = f64(i) * s (f64 buffer y; scalars u32 n, f64 s: 4 bytes of padding before s). Needs float64.
kir::Kernel scale_f64();
// y[i] = i64(i) + k (i64 buffer y; scalars u32 n, i64 k). Needs int64.
kir::Kernel offset_i64();

}  // namespace spire::rt::conformance
