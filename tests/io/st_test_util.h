// Helpers for the safetensors tests: files built byte by byte, independent of the writer under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace spire::io::testing {

// 8-byte little-endian length, the header text as given, then the data bytes.
inline std::vector<uint8_t> raw_file(const std::string& header, const std::vector<uint8_t>& data = {},
                                     uint64_t declared_length = UINT64_MAX) {
  const uint64_t n = declared_length == UINT64_MAX ? header.size() : declared_length;
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());  // the test machines are little-endian, like the format
  return out;
}

}  // namespace spire::io::testing
