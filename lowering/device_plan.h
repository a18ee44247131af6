// A plan (plan.h) made into the device plan the runtime executes (runtime/device_plan.h): every kernel compiled for
// the target (backends/compile_kernel.h: SPIR-V validated, PTX generated for its compute capability), the launches'
// scalars packed, the buffers as plain data. The JIT path (compile()) builds it in memory; a bundle stores it.
#pragma once

#include "lowering/plan.h"
#include "runtime/device_plan.h"

namespace spire::lowering {

// Throws rt::MissingFeature for a kernel needing what `target` lacks, rt::Error for one that does not compile; both
// name the kernel and the nodes it computes. Parameter buffers get no weight index (a bundle sets it).
rt::DevicePlan to_device_plan(const Plan& plan, const rt::DeviceInfo& target);

}  // namespace spire::lowering
