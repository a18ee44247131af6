#include "examples/builtin_kernels.h"

namespace spire::examples {

const std::vector<BuiltinKernel>& builtin_kernels() {
  static const std::vector<BuiltinKernel> all = {
      {"vector_add", "c[i] = a[i] + b[i] (f32)", vector_add_kernel},
      {"relu", "y = max(x, 0), 1024 elements per workgroup, masked tail (f32)", relu_kernel},
      {"silu", "y = x / (1 + exp(-x)) (f32)", silu_kernel},
      {"add_relu", "y = max(a + b, 0), fused (f32)", add_relu_kernel},
      {"sum_reduce_pass", "one pass of a sum: workgroup-memory tree with barriers (f32)", sum_reduce_pass_kernel},
  };
  return all;
}

const BuiltinKernel* find_builtin_kernel(std::string_view name) {
  for (const auto& k : builtin_kernels())
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace spire::examples
