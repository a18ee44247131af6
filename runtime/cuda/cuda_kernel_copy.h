// A deep copy of a kir::Kernel (blocks own their children through unique_ptr, so Kernel cannot be copied
// with `=`). A compiled CudaKernel keeps its own copy so ir() outlives the caller's kernel.
#pragma once

#include "ir/kernel/kernel.h"

namespace spire::rt::cuda {

kir::Kernel copy_kernel(const kir::Kernel& k);

}  // namespace spire::rt::cuda
