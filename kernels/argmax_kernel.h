// The position of each row's largest element along one axis (argmax), in one launch: a workgroup per row (every
// index combination of the other dims), its invocations striding along the axis (a long row on a GPU: two launches,
// below). Each keeps the best element it saw
// (the first of equals, or the last with select_last_index); then three workgroup reductions in a fixed order: whether
// any invocation saw a NaN (a NaN counts as the largest value, as torch.argmax has it), the largest value that is not
// NaN, and the smallest (or largest) position whose value is that one. A decoder's next token over a vocabulary of
// 50257 takes one launch this way (two on a GPU), where max, compare and max took five. Buffers: x (read, f32/f64 or half widened to f32), y (write, i32).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

using ArgmaxShape = AxisRows;  // [outer, axis, inner] around the reduced axis

// From a shape and the (non-negative) axis; throws std::invalid_argument if the axis is out of range.
inline ArgmaxShape argmax_shape(const std::vector<int64_t>& shape, int64_t axis) { return axis_rows(shape, axis, "argmax"); }

// Invocations of a row's workgroup: a power of two up to kArgmaxWorkgroup, no more than the axis needs.
inline constexpr uint32_t kArgmaxWorkgroup = 1024;
uint32_t argmax_workgroup(const ArgmaxShape& s, uint32_t max_invocations);

// A long row on a GPU is split into parts of about kArgmaxPartLength positions, a workgroup each, whose choices
// argmax_of_parts_kernel then chooses among, a workgroup a row: one workgroup alone reads a row at the rate of one
// multiprocessor (Llama's 128256 logits: 17 us on an H200). The parts of `s`: 1 (one launch) for rows shorter than two
// parts, or on a CPU device.
inline constexpr int64_t kArgmaxPartLength = 4096;
uint32_t argmax_parts(const ArgmaxShape& s, bool cpu);

// x's elements of type `x_type` (f32, f64, f16 or bf16), compared in `t` (f32 or f64). With `parts` > 1 the choice of
// each part (rows x parts workgroups) instead: buffers x, part_values (x_type, write: each part's chosen value as
// stored), part_positions (i32, write: its position in the row), rows x parts each.
HeavyKernel argmax_kernel(const ArgmaxShape& s, kir::Type x_type, kir::Type t, bool select_last_index, uint32_t wg,
                          uint32_t subgroup = 0, uint32_t parts = 1);
// The choice among each row's parts: buffers part_values, part_positions (read), y (i32, write).
HeavyKernel argmax_of_parts_kernel(const ArgmaxShape& s, kir::Type x_type, kir::Type t, bool select_last_index,
                                   uint32_t wg, uint32_t subgroup, uint32_t parts);

}  // namespace spire::lowering::heavy
