// A kernel's interface as the runtime sees it (runtime/kernel_interface.h), from its kernel IR: the one place that turns
// the IR's declarations into what a device binds and checks, with the workgroup memory laid out as the target's
// compiler lays it out (PTX: backends/ptx/ptx_shared_layout.h).
#pragma once

#include "ir/kernel/kernel.h"
#include "runtime/kernel_binary.h"

namespace spire::backends {

rt::KernelInterface kernel_interface(const kir::Kernel& k, rt::BinaryFormat format);

}  // namespace spire::backends
