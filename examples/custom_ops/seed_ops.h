// The custom ops of examples/custom_ops, ready to register: the seed article's ReLU with a GLSL kernel (from
// seed_relu.op) and with a kernel-builder kernel (C++ below), and the other example op files (SiLU with its own
// gradient kernel, fused add + ReLU). The op files are compiled into the program, so `spire train lenet --relu
// custom` works wherever the binary is; `--ops examples/custom_ops/...` loads the same files from disk.
// Each function registers its ops on its first call only and returns their names.
#pragma once

#include <string>
#include <vector>

namespace spire::examples {

std::string register_seed_relu_glsl();     // "seed_relu": seed_relu.op, its kernel seed_relu.comp (Vulkan only)
std::string register_seed_relu_builder();  // "seed_relu_kb": the kernel builder's relu_kernel() (every backend)
std::vector<std::string> register_example_op_files();  // every *.op file of examples/custom_ops

}  // namespace spire::examples
