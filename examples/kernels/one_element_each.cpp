// The seed articles' kernels of one invocation per element: c = a + b, SiLU, and add + ReLU fused. Each is the same
// program around its formula: f32 buffers named as the article names them, a count n, and invocation i computing
// element i when i < n (the grid rounds n up to whole workgroups of 256).
#include <functional>
#include <functional>
#include <string>
#include <vector>

#include "examples/builtin_kernels.h"
#include "ir/kernel/builder.h"

namespace spire::examples {
namespace {

using namespace kir;

Kernel one_element_each(const std::string& name, const std::vector<std::string>& inputs, const std::string& output,
                        const std::function<Val(const std::vector<Val>&)>& formula) {
  KernelBuilder kb(name, 256);
  std::vector<Buf> in;
  for (const std::string& input : inputs) in.push_back(kb.buffer(input, Type::F32, Access::Read));
  Buf out = kb.buffer(output, Type::F32, Access::Write);
  Val n = kb.scalar("n", Type::U32);
  Val i = kb.global_id();
  kb.if_(i < n, [&] {
    std::vector<Val> x;
    for (Buf& b : in) x.push_back(b[i]);
    out[i] = formula(x);
  });
  return kb.finish();
}

}  // namespace

Kernel vector_add_kernel() {
  return one_element_each("vector_add", {"a", "b"}, "c", [](const std::vector<Val>& x) { return x[0] + x[1]; });
}

// silu(x) = x * sigmoid(x) = x / (1 + exp(-x)), in float32.
Kernel silu_kernel() {
  return one_element_each("silu", {"x"}, "y", [](const std::vector<Val>& x) { return x[0] / (1.0f + exp(-x[0])); });
}

// Fused add + ReLU: one pass over memory instead of two.
Kernel add_relu_kernel() {
  return one_element_each("add_relu", {"a", "b"}, "y",
                          [](const std::vector<Val>& x) { return max(x[0] + x[1], 0.0f); });
}

}  // namespace spire::examples
