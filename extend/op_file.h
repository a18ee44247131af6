// Op files: custom ops for users without a C++ toolchain, loaded with `--ops FILE_OR_DIR`.
//
//   # relu.op: the seed article's ReLU, its kernel in GLSL
//   op seed_relu(x)
//   reference: maximum(x, 0)
//   gradient x: where(compare(x, 0, mode=gt), grad, 0)
//   glsl: relu.comp                 # relative to this file
//   elements_per_workgroup: 1024
//
// One `op NAME(INPUT, ...)` line starts an op; the lines after it, up to the next `op` line, describe it:
//   reference: EXPR             the float64 CPU reference (and the result's type) in graph ops (op_expression.h)
//   gradient INPUT: EXPR        the gradient of that input, over the inputs, y (the result) and grad
//   glsl: FILE                  the kernel, a GLSL compute shader (glsl_kernel.h says what it binds)
//   elements_per_workgroup: N   workgroups = ceil(result elements / N); default: one per invocation
//   configs: A=1,B=2; A=2,B=2   the configs `--tune` times (docs/TUNING.md; the tuning cache keeps the choice): the
//                               GLSL kernel is compiled once per config, each value a macro SPIRE_CONFIG_A, ...
//   dtype: T                    the dtype the kernel is written for, inputs and result (default f32)
//   elementwise: true|false     inputs have the result's shape, read at its index (default true)
//   tolerance: X                max-norm relative error allowed in float32 (default 1e-6)
//   gradient_tolerance: X       the same for gradients (default 1e-5)
//   test: TYPES; TYPES; ...     the op harness's cases, each one type per input: f32[7,33], f32[33]
//   test_range: LO HI           where the harness draws inputs (default -1 1)
// '#' starts a comment. A directory loads every *.op file in it, in name order.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "extend/custom_op.h"

namespace spire::ext {

// Reads a file the op file names (its GLSL kernels); the default reads the disk.
using ReadFile = std::function<std::string(const std::filesystem::path&)>;

// Parses one op file's text (`path` for messages and for resolving glsl: files, read with `read_file`). Throws
// graph::GraphError "relu.op:3: ..." naming the line and the problem.
std::vector<CustomOp> parse_op_file(const std::string& text, const std::filesystem::path& path, const ReadFile& read_file = {});

// Loads and registers every op of a file, or of every *.op file in a directory; returns their names.
std::vector<std::string> load_ops(const std::filesystem::path& file_or_dir);

}  // namespace spire::ext
