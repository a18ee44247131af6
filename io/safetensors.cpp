#include "io/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/file_bytes.h"

namespace spire::io {
namespace {

using Json = nlohmann::ordered_json;  // keeps the header's key order for messages and for writing

struct DtypeInfo {
  StDtype dtype;
  std::string_view name;
  uint32_t bytes;
};

constexpr std::array<DtypeInfo, 15> kDtypes{{
    {StDtype::BOOL, "BOOL", 1},     {StDtype::U8, "U8", 1},   {StDtype::I8, "I8", 1},
    {StDtype::F8_E5M2, "F8_E5M2", 1}, {StDtype::F8_E4M3, "F8_E4M3", 1},
    {StDtype::I16, "I16", 2},       {StDtype::U16, "U16", 2}, {StDtype::F16, "F16", 2},
    {StDtype::BF16, "BF16", 2},     {StDtype::I32, "I32", 4}, {StDtype::U32, "U32", 4},
    {StDtype::F32, "F32", 4},       {StDtype::F64, "F64", 8}, {StDtype::I64, "I64", 8},
    {StDtype::U64, "U64", 8},
}};

const DtypeInfo& info(StDtype t) {
  for (const auto& d : kDtypes) {
    if (d.dtype == t) return d;
  }
  return kDtypes[0];  // unreachable for a valid enum value
}

constexpr std::string_view kMetadataKey = "__metadata__";
// The deepest nesting a valid header has is 3 ({name: {shape: [...]}}); anything much deeper is hostile.
constexpr int kMaxJsonDepth = 16;

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Bytes a tensor of this shape and dtype holds, or nullopt when that overflows 64 bits. A zero dimension
// makes the tensor empty whatever the other dimensions are.
std::optional<uint64_t> byte_count(const std::vector<int64_t>& shape, StDtype dtype) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t n = st_dtype_bytes(dtype);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

// ---- reading ----

// The parse state of one file: names the source in every message.
class HeaderReader {
 public:
  HeaderReader(std::span<const uint8_t> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  SafetensorsFile read();

 private:
  [[noreturn]] void fail(std::string_view problem) const { throw_format_error(source_, problem); }
  [[noreturn]] void fail_tensor(std::string_view name, std::string_view problem) const {
    throw_format_error(source_, fmt::format("tensor '{}': {}", name, problem));
  }

  Json parse_json(std::span<const uint8_t> header) const;
  std::map<std::string, std::string> read_metadata(const Json& value) const;
  std::vector<int64_t> read_shape(std::string_view name, const Json& value) const;
  std::array<uint64_t, 2> read_offsets(std::string_view name, const Json& value) const;

  std::span<const uint8_t> bytes_;
  std::string source_;
};

Json HeaderReader::parse_json(std::span<const uint8_t> header) const {
  // A callback rejects duplicate keys (which a plain parse would silently collapse) and absurd nesting.
  std::vector<std::set<std::string>> keys_per_object;
  int depth = 0;
  auto check = [&](int, nlohmann::json::parse_event_t event, Json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
        keys_per_object.emplace_back();
        [[fallthrough]];
      case E::array_start:
        if (++depth > kMaxJsonDepth) fail(fmt::format("header nests JSON deeper than {} levels", kMaxJsonDepth));
        break;
      case E::object_end:
        if (!keys_per_object.empty()) keys_per_object.pop_back();
        [[fallthrough]];
      case E::array_end:
        --depth;
        break;
      case E::key:
        if (!keys_per_object.empty() && parsed.is_string() &&
            !keys_per_object.back().insert(parsed.get<std::string>()).second) {
          fail(fmt::format("header repeats the key '{}' in one JSON object", parsed.get<std::string>()));
        }
        break;
      case E::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(header.begin(), header.end(), check);
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("header is not valid JSON: {}", e.what()));
  }
}

std::map<std::string, std::string> HeaderReader::read_metadata(const Json& value) const {
  if (!value.is_object()) {
    fail(fmt::format("__metadata__ must be a JSON object of strings, not {}", value.type_name()));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      fail(fmt::format("__metadata__ entry '{}' must be a string, not {}", key, v.type_name()));
    }
    metadata.emplace(key, v.get<std::string>());
  }
  return metadata;
}

std::vector<int64_t> HeaderReader::read_shape(std::string_view name, const Json& value) const {
  if (!value.is_array()) fail_tensor(name, fmt::format("shape must be a JSON array, not {}", value.type_name()));
  std::vector<int64_t> shape;
  for (size_t i = 0; i < value.size(); ++i) {
    const Json& d = value[i];
    if (d.is_number_unsigned()) {
      uint64_t u = d.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail_tensor(name, fmt::format("shape dimension {} is {}, too large", i, u));
      }
      shape.push_back(static_cast<int64_t>(u));
    } else if (d.is_number_integer()) {
      fail_tensor(name, fmt::format("shape dimension {} is negative ({})", i, d.get<int64_t>()));
    } else {
      fail_tensor(name, fmt::format("shape dimension {} must be a non-negative integer, not {}", i, d.dump()));
    }
  }
  return shape;
}

std::array<uint64_t, 2> HeaderReader::read_offsets(std::string_view name, const Json& value) const {
  if (!value.is_array() || value.size() != 2) {
    fail_tensor(name, fmt::format("data_offsets must be an array [begin, end], not {}", value.dump()));
  }
  std::array<uint64_t, 2> offsets{};
  for (size_t i = 0; i < 2; ++i) {
    if (!value[i].is_number_unsigned()) {
      fail_tensor(name, fmt::format("data_offsets {} must hold two non-negative integers", value.dump()));
    }
    offsets[i] = value[i].get<uint64_t>();
  }
  return offsets;
}

SafetensorsFile HeaderReader::read() {
  if (bytes_.size() < 8) {
    fail(fmt::format("file is {} bytes long, too short for the 8-byte header length", bytes_.size()));
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes_[static_cast<size_t>(i)];
  const uint64_t after_length = bytes_.size() - 8;
  if (header_len > kMaxSafetensorsHeaderBytes) {
    fail(fmt::format("header length {} is larger than the {} MiB limit (is this a safetensors file?)", header_len,
                     kMaxSafetensorsHeaderBytes >> 20));
  }
  if (header_len > after_length) {
    fail(fmt::format("header length {} runs past the end of the file ({} bytes after the length field)", header_len,
                     after_length));
  }
  auto header = bytes_.subspan(8, static_cast<size_t>(header_len));
  if (header.empty() || header[0] != '{') fail("header does not start with '{' (not a safetensors file?)");
  // nlohmann's lexer takes a NUL byte for the end of input and would ignore what follows; JSON allows no
  // raw NUL anywhere, so refuse it here.
  if (std::find(header.begin(), header.end(), uint8_t{0}) != header.end()) {
    fail("header is not valid JSON: it contains a NUL byte");
  }
  const Json json = parse_json(header);
  if (!json.is_object()) fail("header is not a JSON object");

  auto data = bytes_.subspan(8 + static_cast<size_t>(header_len));
  SafetensorsFile file;
  struct Placed {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Placed> placed;
  for (const auto& [name, entry] : json.items()) {
    if (name == kMetadataKey) {
      file.metadata = read_metadata(entry);
      continue;
    }
    if (name.empty()) fail("a tensor has an empty name");
    if (!entry.is_object()) {
      fail_tensor(name, fmt::format("entry must be an object with dtype, shape and data_offsets, not {}",
                                    entry.type_name()));
    }
    for (const auto& [key, unused] : entry.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets") {
        fail_tensor(name, fmt::format("unknown field '{}' (expected dtype, shape, data_offsets)", key));
      }
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(key)) fail_tensor(name, fmt::format("missing field '{}'", key));
    }
    StTensor t;
    t.name = name;
    const Json& dtype = entry["dtype"];
    if (!dtype.is_string()) fail_tensor(name, fmt::format("dtype must be a string, not {}", dtype.dump()));
    auto parsed_dtype = parse_st_dtype(dtype.get<std::string>());
    if (!parsed_dtype) {
      fail_tensor(name, fmt::format("unknown dtype '{}' (known: {})", dtype.get<std::string>(), st_known_dtypes()));
    }
    t.dtype = *parsed_dtype;
    t.shape = read_shape(name, entry["shape"]);
    auto [begin, end] = read_offsets(name, entry["data_offsets"]);
    if (begin > end) fail_tensor(name, fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
    if (end > data.size()) {
      fail_tensor(name, fmt::format("data_offsets [{}, {}] run past the end of the data buffer ({} bytes)", begin,
                                    end, data.size()));
    }
    auto needed = byte_count(t.shape, t.dtype);
    if (!needed) {
      fail_tensor(name, fmt::format("shape {} of {} needs more than 2^64 bytes", shape_string(t.shape),
                                    st_dtype_name(t.dtype)));
    }
    if (end - begin != *needed) {
      fail_tensor(name, fmt::format("data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {}", begin, end,
                                    end - begin, shape_string(t.shape), st_dtype_name(t.dtype), *needed));
    }
    placed.push_back({begin, end, file.tensors.size()});
    file.tensors.push_back(std::move(t));
  }

  // The tensors must tile the data buffer exactly: no overlap, no hole, nothing after the last one.
  std::sort(placed.begin(), placed.end(),
            [](const Placed& a, const Placed& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t covered = 0;
  const Placed* previous = nullptr;
  for (const Placed& p : placed) {
    if (p.begin < covered) {
      fail_tensor(file.tensors[p.index].name,
                  fmt::format("data_offsets [{}, {}] overlap tensor '{}' at [{}, {}]", p.begin, p.end,
                              file.tensors[previous->index].name, previous->begin, previous->end));
    }
    if (p.begin > covered) {
      fail(fmt::format("bytes [{}, {}) of the data buffer belong to no tensor (the format allows no holes)",
                       covered, p.begin));
    }
    covered = p.end;
    previous = &p;
  }
  if (covered != data.size()) {
    fail(fmt::format("the data buffer has {} bytes but the tensors cover only the first {} (trailing bytes)",
                     data.size(), covered));
  }

  // Copy the data out, in buffer order.
  SafetensorsFile ordered;
  ordered.metadata = std::move(file.metadata);
  ordered.tensors.reserve(placed.size());
  for (const Placed& p : placed) {
    StTensor& t = file.tensors[p.index];
    t.data.assign(data.begin() + static_cast<ptrdiff_t>(p.begin), data.begin() + static_cast<ptrdiff_t>(p.end));
    ordered.tensors.push_back(std::move(t));
  }
  return ordered;
}

}  // namespace

std::string_view st_dtype_name(StDtype t) { return info(t).name; }

std::optional<StDtype> parse_st_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

uint32_t st_dtype_bytes(StDtype t) { return info(t).bytes; }

std::string st_known_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

int64_t StTensor::element_count() const {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(t.name);
  return out;
}

SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, std::string_view source) {
  return HeaderReader(bytes, source).read();
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_safetensors(bytes, display_name(path));
}

std::vector<uint8_t> serialize_safetensors(const SafetensorsFile& file, std::string_view source) {
  Json header = Json::object();
  if (!file.metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : file.metadata) meta[k] = v;
    header[std::string(kMetadataKey)] = std::move(meta);
  }
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const StTensor& t : file.tensors) {
    auto fail_tensor = [&](std::string_view problem) {
      throw_format_error(source, fmt::format("cannot write tensor '{}': {}", t.name, problem));
    };
    if (t.name.empty()) throw_format_error(source, "cannot write a tensor with an empty name");
    if (t.name == kMetadataKey) fail_tensor("the name is reserved for the file's metadata");
    if (!seen.insert(t.name).second) fail_tensor("the name appears twice");
    for (int64_t d : t.shape) {
      if (d < 0) fail_tensor(fmt::format("shape {} has a negative dimension", shape_string(t.shape)));
    }
    auto needed = byte_count(t.shape, t.dtype);
    if (!needed || *needed != t.data.size()) {
      fail_tensor(fmt::format("it holds {} bytes but shape {} of {} needs {}", t.data.size(), shape_string(t.shape),
                              st_dtype_name(t.dtype), needed ? fmt::format("{}", *needed) : "more than 2^64"));
    }
    Json entry = Json::object();
    entry["dtype"] = std::string(st_dtype_name(t.dtype));
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + t.data.size()};
    header[t.name] = std::move(entry);
    offset += t.data.size();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw_format_error(source, fmt::format("cannot write the header (tensor names and metadata must be UTF-8): {}",
                                           e.what()));
  }
  // Pad with spaces (valid JSON whitespace) so that the data buffer starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const StTensor& t : file.tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file) {
  write_file_bytes_atomically(path, serialize_safetensors(file, display_name(path)));
}

}  // namespace spire::io
