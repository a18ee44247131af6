// ONNX TensorProto -> graph::Tensor: initializers, Constant nodes' values, and the backend tests'
// input_K.pb / output_K.pb files. Reads raw_data, the typed fields, and external data (a file beside the
// model named by the `location` entry, with optional `offset` and `length`), checking every size.
#pragma once

#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph/tensor.h"

namespace spire::onnx_import {

// `model_dir`: where external data files are looked up. `what` names the tensor in error messages.
// Throws ImportError naming the tensor and the problem.
graph::Tensor read_tensor_proto(const onnx::TensorProto& t, const std::filesystem::path& model_dir,
                                const std::string& what);

// A standalone serialized TensorProto (.pb file).
graph::Tensor read_tensor_file(const std::filesystem::path& path);

}  // namespace spire::onnx_import
