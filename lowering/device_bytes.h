// Host tensors <-> the bytes devices store them in (f32 as f32, f16/bf16 as 16-bit words, i64 as i32, bool as
// u32): what the executor uploads and downloads, and what a bundle stores its weights as.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/tensor.h"
#include "ir/kernel/types.h"

namespace spire::lowering {

// Throws graph::GraphError naming `name` for a value the device type cannot hold (an i64 beyond 32 bits).
std::vector<uint8_t> to_device_bytes(const graph::Tensor& t, kir::Type type, const std::string& name);
// A stored bool other than 0/1 is kept as is: it can only be a value no kernel wrote (the poison), and a
// comparison must see that.
graph::Tensor from_device_bytes(const std::vector<uint8_t>& bytes, kir::Type type, const graph::TensorType& tt);

}  // namespace spire::lowering
