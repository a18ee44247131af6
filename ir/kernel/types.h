// Scalar types and device features of the kernel IR: the tree's one element type (base/dtype.h) and its device
// features (base/features.h), under the names the kernel IR uses.
//
// Bool exists only in registers (comparisons, select conditions); buffers and workgroup arrays hold the other types.
// BF16 is a storage type: a kernel loads it from and stores it to buffers and converts it to and from F32, and computes
// nothing in it (no device's shaders all have bf16 arithmetic; f32 arithmetic then one rounding is also what PyTorch's
// bf16 kernels do).
#pragma once

#include "base/dtype.h"
#include "base/features.h"

namespace spire::kir {

using Type = spire::DType;
using spire::Feature;
using spire::Features;
using spire::features_for_type;
using spire::features_to_string;
using spire::feature_name;
using spire::is_float;
using spire::is_int;
using spire::is_signed_int;
using spire::kLastFeature;

}  // namespace spire::kir
