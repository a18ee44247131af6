// The built-in kernels: the seed articles' kernels, each written once with the kernel builder.
// `spire kernel --list` names them; tests compile every one of them for SPIR-V and PTX.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::examples {

struct BuiltinKernel {
  std::string name;
  std::string description;
  std::function<kir::Kernel()> build;
};

const std::vector<BuiltinKernel>& builtin_kernels();
// nullptr when no built-in kernel has that name.
const BuiltinKernel* find_builtin_kernel(std::string_view name);

// The kernels themselves (examples/kernels/).
kir::Kernel vector_add_kernel();
// ReLU as the LeNet article writes it: each workgroup owns a block of 1024 elements (256 invocations x 4,
// strided so neighbouring invocations touch neighbouring elements), the tail is masked, and the grid is
// ceil(n / 1024) workgroups.
inline constexpr uint32_t kReluBlock = 1024;
kir::Kernel relu_kernel();
kir::Kernel silu_kernel();
kir::Kernel add_relu_kernel();
// One pass of a sum reduction: every workgroup of 256 sums its 256 elements in workgroup memory with a
// barrier between tree levels and writes one partial; passes repeat until one value is left.
inline constexpr uint32_t kReduceWorkgroup = 256;
kir::Kernel sum_reduce_pass_kernel();

}  // namespace spire::examples
