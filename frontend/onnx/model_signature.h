// A model's declared inputs and outputs, read without importing it: what a caller checks before choosing the shapes
// to import with (`spire generate` finds a decoder's layers, key/value heads and head size here).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::onnx_import {

// One dimension as declared: a number, or a symbol (a dynamic axis such as "past_sequence"; "" when unnamed).
struct DeclaredDim {
  int64_t value = -1;  // -1: symbolic
  std::string symbol;
};

struct DeclaredValue {
  std::string name;
  int elem_type = 0;               // ONNX's TensorProto element type (onnx::TensorProto::FLOAT, INT64, ...)
  bool has_shape = false;
  std::vector<DeclaredDim> dims;
};

struct ModelSignature {
  std::vector<DeclaredValue> inputs;   // graph inputs that are not initializers, in model order
  std::vector<DeclaredValue> outputs;  // in model order
  const DeclaredValue* input(const std::string& name) const;
  const DeclaredValue* output(const std::string& name) const;
};

// Throws ImportError when the file is missing or does not parse as an ONNX model.
ModelSignature read_signature(const std::filesystem::path& path);

}  // namespace spire::onnx_import
