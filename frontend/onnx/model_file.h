// Reading ONNX files: a serialized message parsed from the file's bytes read once (a model of hundreds of megabytes
// was read through a string stream, copied twice, and read again by the checker), and the ONNX checker run on the
// model in memory, against the folder its external data lie in.
#pragma once

#include <filesystem>
#include <string>

#include <google/protobuf/message_lite.h>
#include <onnx/onnx_pb.h>

namespace spire::onnx_import {

// Parses `path`'s bytes into `message`. Throws ImportError: "<path>: no such file" for a missing file, else
// "<path>: <not_parsed>" where the bytes do not parse.
void parse_file(const std::filesystem::path& path, google::protobuf::MessageLite& message, const std::string& not_parsed);

// onnx::checker::check_model on `model`, read from `path` (whose folder holds its external data files). Throws what
// the checker throws.
void check_model_read_from(const onnx::ModelProto& model, const std::filesystem::path& path);

}  // namespace spire::onnx_import
