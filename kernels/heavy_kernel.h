// What every heavy-op kernel template returns, and the small helpers the templates share.
//
// A template takes an op's static shapes and an element type and returns a kernel specialised to them (every
// size, stride and padding is a constant, so the device compiler folds the index arithmetic) together with
// the number of workgroups to launch. Templates depend only on ir/kernel, never on the graph IR, so they can
// be tested and reused on their own; lowering/lower_*.cpp translate graph nodes into their shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/axis_rows.h"
#include "ir/kernel/builder.h"

namespace spire::lowering::heavy {

struct HeavyKernel {
  kir::Kernel kernel;
  uint64_t groups = 0;  // logical workgroups to launch (0: nothing to compute, launch nothing)
};

// Throws std::invalid_argument naming `what` unless 0 <= value < 2^31: kernels index with 32-bit integers
// (a Vulkan binding holds at most a few hundred million elements anyway).
uint32_t index_u32(int64_t value, const std::string& what);

// "f32" / "f64": the element-type suffix of kernel names. Throws std::invalid_argument for a non-float type,
// naming `op`.
std::string float_suffix(kir::Type t, const std::string& op);

// "2x3" for {2, 3}; "" for {}.
std::string dims_text(const std::vector<int64_t>& dims);

// (A shape as rows along an axis, for the row-wise templates: base/axis_rows.h.)
using spire::AxisRows;
using spire::axis_rows;

// A kernel that does nothing, for results with no elements (returned with groups = 0: launch nothing).
HeavyKernel empty_result(const std::string& name);

// The workgroup size of the kernels that take one element (or window, or row) per invocation without a config that
// says otherwise.
inline constexpr uint32_t kElementWorkgroup = 256;
// Windows (convolutions, poolings) of at most this many taps are unrolled in C++, with constant offsets; larger
// ones loop in the kernel.
inline constexpr int64_t kMaxUnrolledTaps = 49;

// Workgroups of `wg` invocations for one invocation per item.
inline uint64_t groups_for_threads(uint64_t items, uint32_t wg) { return (items + wg - 1) / wg; }

// Smallest power of two >= n (n >= 1), clamped to [lo, hi].
uint32_t pow2_clamped(uint64_t n, uint32_t lo, uint32_t hi);

// How a workgroup reduction combines (workgroup_reduce.h).
enum class TreeOp { Sum, Max };

}  // namespace spire::lowering::heavy
