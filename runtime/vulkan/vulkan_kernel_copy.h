// A deep copy of a kir::Kernel (its blocks own their children through unique_ptr, so it has no copy
// constructor). A compiled Kernel keeps its own copy so ir() stays valid after the caller's kernel is gone.
#pragma once

#include "ir/kernel/kernel.h"

namespace spire::rt::vulkan {

kir::Kernel copy_kernel(const kir::Kernel& k);

}  // namespace spire::rt::vulkan
