// safetensors files of graph Tensors: checkpoints, evaluator inputs and outputs.
//
// The graph IR's dtypes map to the format's: bool <-> BOOL, i32 <-> I32, i64 <-> I64, f16 <-> F16, bf16 <-> BF16,
// f32 <-> F32, f64 <-> F64. Other safetensors dtypes (U8, F8_E4M3, ...) are refused by name when loading.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "ir/graph/tensor.h"

namespace spire::io {

using NamedTensors = std::vector<std::pair<std::string, graph::Tensor>>;

StDtype st_dtype_of(graph::DType t);
// The graph dtype of a safetensors dtype; FormatError (naming source and tensor) when there is none.
graph::DType graph_dtype_of(StDtype t, std::string_view source, std::string_view tensor);

// Conversions. Loading rounds nothing (each stored value is exact in a double, except i64 beyond 2^53).
// Saving refuses (FormatError) an integer value that is not finite or out of the dtype's range.
graph::Tensor to_graph_tensor(const StTensor& t, std::string_view source);
StTensor to_st_tensor(std::string name, const graph::Tensor& t, std::string_view destination = "<memory>");

// Every tensor of a file, by name.
std::map<std::string, graph::Tensor> load_tensors(const std::filesystem::path& path);
// Same, in file order.
NamedTensors load_tensors_ordered(const std::filesystem::path& path);

// Writes tensors in the given order (atomically; see write_safetensors).
void save_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata = {});
void save_tensors(const std::filesystem::path& path, const std::map<std::string, graph::Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace spire::io
