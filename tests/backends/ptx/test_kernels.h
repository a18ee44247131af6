// Kernels that together use every kir op on every type it accepts, every builtin, every statement kind,
// shared memory with barriers and atomics. Each is assembled by ptxas in ptx_assemble_test.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::ptx::testing {

struct NamedKernel {
  std::string name;
  std::function<kir::Kernel()> make;
};

std::vector<NamedKernel> coverage_kernels();

// One kernel per numeric type T: out = a op b for every binary op and unary op T supports, mixed through
// selects on every comparison (so nothing is dead code).
kir::Kernel arithmetic_kernel(kir::Type t);
// Converts a value of `from` to every other numeric type and back, storing each.
kir::Kernel conversion_kernel(kir::Type from);
kir::Kernel vector_add_kernel();
kir::Kernel control_flow_kernel();
kir::Kernel shared_reduce_kernel();
kir::Kernel atomics_kernel();
kir::Kernel builtins_kernel();
kir::Kernel subgroup_kernel();
kir::Kernel bool_logic_kernel();
kir::Kernel scalars_kernel();
kir::Kernel loops_kernel(kir::Type loop_type);

}  // namespace spire::ptx::testing
