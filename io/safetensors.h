// The safetensors file format (Hugging Face): read and write, validating every field of the header.
//
// Layout: 8 bytes N (unsigned, little-endian), N bytes of JSON header, then the data buffer.
// The header is one JSON object: {"<tensor name>": {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]}, ..., "__metadata__": {"<key>": "<string value>"}}; offsets are relative
// to the start of the data buffer; tensor data are packed row-major little-endian.
//
// This layer knows bytes, not the graph IR: io/tensor_file.h converts to and from graph Tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/format_error.h"

namespace spire::io {

// The element types the format defines with whole-byte elements. Sub-byte types (F4, F6_*) are refused
// as unknown: nothing in spire reads them.
enum class StDtype : uint8_t {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64,
};

std::string_view st_dtype_name(StDtype t);           // "F32"
std::optional<StDtype> parse_st_dtype(std::string_view name);
uint32_t st_dtype_bytes(StDtype t);                  // 4 for F32
std::string st_known_dtypes();                       // "BOOL, U8, ..." for error messages

// One tensor: its name, element type, shape and packed little-endian row-major bytes.
struct StTensor {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  // product(shape); 1 for a scalar (shape []).
  int64_t element_count() const;
};

// A whole file: tensors in data-buffer order (which, for files this library writes, is the order the
// caller gave them), and the optional string-to-string __metadata__.
struct SafetensorsFile {
  std::vector<StTensor> tensors;
  std::map<std::string, std::string> metadata;

  const StTensor* find(std::string_view name) const;  // nullptr if absent
  std::vector<std::string> names() const;             // in file order
};

// The largest header this library reads (the reference implementation's limit is of the same size).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Parses a whole file held in memory. `source` names it in error messages. Every inconsistency is a
// FormatError naming the source, the tensor (where there is one) and the problem; no input crashes.
SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, std::string_view source);

// Reads and parses a file; a missing or unreadable file is a FormatError too.
SafetensorsFile read_safetensors(const std::filesystem::path& path);

// The file's bytes: tensors in the given order, data packed back to back without gaps, the header padded
// with spaces so that the data buffer starts at a multiple of 8 bytes. Refuses (FormatError, `source`
// naming the destination) duplicate or empty names, the reserved name "__metadata__", and a tensor whose
// byte count does not match its shape and dtype.
std::vector<uint8_t> serialize_safetensors(const SafetensorsFile& file, std::string_view source = "<memory>");

// Writes atomically: to "<path>.tmp", then renamed over `path`.
void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file);

}  // namespace spire::io
