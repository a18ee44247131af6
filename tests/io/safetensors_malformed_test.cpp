// safetensors: every kind of malformed file is a FormatError whose message names the file, the tensor
// and the problem.
#include <gtest/gtest.h>

#include <string>

#include "io/safetensors.h"
#include "tests/io/st_test_util.h"

namespace spire::io {
namespace {

using testing::f32_bytes;
using testing::raw_file;

// Parses `bytes` as "bad.safetensors" and checks that it fails with a message containing every fragment.
void expect_format_error(const std::vector<uint8_t>& bytes, std::initializer_list<std::string> fragments) {
  try {
    parse_safetensors(bytes, "bad.safetensors");
    ADD_FAILURE() << "parse succeeded; expected an error mentioning: " << *fragments.begin();
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.safetensors: ", 0), 0u) << "message must start with the file name: " << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
  }
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

TEST(SafetensorsMalformed, EveryPrefixOfAValidFileIsRejected) {
  SafetensorsFile file;
  file.metadata = {{"k", "v"}};
  file.tensors.push_back({"a", StDtype::F32, {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})});
  file.tensors.push_back({"b", StDtype::I64, {1}, std::vector<uint8_t>(8, 7)});
  const auto bytes = serialize_safetensors(file);
  ASSERT_NO_THROW(parse_safetensors(bytes, "ok"));
  for (size_t len = 0; len < bytes.size(); ++len) {
    SCOPED_TRACE(len);
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_THROW(parse_safetensors(prefix, "bad.safetensors"), FormatError);
  }
  expect_format_error({1, 2, 3}, {"3 bytes long"});
}

TEST(SafetensorsMalformed, AbsurdHeaderLength) {
  expect_format_error(raw_file("{}", {}, uint64_t{1} << 63), {"header length 9223372036854775808", "100 MiB"});
  expect_format_error(raw_file("{}", {}, UINT64_MAX - 1), {"100 MiB"});
  expect_format_error(raw_file("{}", {}, 100), {"header length 100 runs past the end of the file (2 bytes"});
  expect_format_error(raw_file("{}", {}, (100u << 20) + 1), {"100 MiB"});
  expect_format_error(raw_file("", {}, 0), {"does not start with '{'"});
}

TEST(SafetensorsMalformed, HeaderThatIsNotAJsonObject) {
  expect_format_error(raw_file("[1,2]"), {"does not start with '{'"});
  expect_format_error(raw_file(" {}"), {"does not start with '{'"});
  expect_format_error(raw_file("{\"a\":"), {"not valid JSON"});
  expect_format_error(raw_file("{}x"), {"not valid JSON"});
  expect_format_error(raw_file(std::string("{}\0", 3)), {"NUL byte"});
  expect_format_error(raw_file(std::string("{}\0garbage", 10)), {"NUL byte"});
  expect_format_error(raw_file("{\"\xff\":1}"), {"not valid JSON"});  // not UTF-8
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_format_error(raw_file(deep), {"deeper than"});
}

TEST(SafetensorsMalformed, DuplicateKeys) {
  const std::string e = entry("w", "U8", "[1]", "[0,1]");
  expect_format_error(raw_file("{" + e + "," + e + "}", {1}), {"repeats the key 'w'"});
  expect_format_error(raw_file(R"({"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {1}),
                      {"repeats the key 'dtype'"});
}

TEST(SafetensorsMalformed, BadEntries) {
  expect_format_error(raw_file(R"({"w":3})"), {"tensor 'w'", "entry must be an object"});
  expect_format_error(raw_file(R"({"w":{"dtype":"U8","shape":[0]}})"), {"tensor 'w'", "missing field 'data_offsets'"});
  expect_format_error(raw_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"extra":1}})"),
                      {"tensor 'w'", "unknown field 'extra'"});
  expect_format_error(raw_file(R"({"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"), {"empty name"});
  expect_format_error(raw_file(R"({"__metadata__":[1]})"), {"__metadata__ must be a JSON object"});
  expect_format_error(raw_file(R"({"__metadata__":{"k":1}})"), {"__metadata__ entry 'k' must be a string"});
}

TEST(SafetensorsMalformed, UnknownDtype) {
  expect_format_error(raw_file("{" + entry("fc.1.weight", "F128", "[1]", "[0,16]") + "}", std::vector<uint8_t>(16)),
                      {"tensor 'fc.1.weight'", "unknown dtype 'F128'", "F32"});
  expect_format_error(raw_file(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", std::vector<uint8_t>(4)),
                      {"dtype must be a string"});
}

TEST(SafetensorsMalformed, BadShapes) {
  expect_format_error(raw_file("{" + entry("w", "U8", "[2,-1]", "[0,0]") + "}"),
                      {"tensor 'w'", "shape dimension 1 is negative (-1)"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[1.5]", "[0,0]") + "}"),
                      {"tensor 'w'", "shape dimension 0 must be a non-negative integer, not 1.5"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[\"3\"]", "[0,3]") + "}", {1, 2, 3}),
                      {"non-negative integer"});
  expect_format_error(raw_file("{" + entry("w", "U8", "3", "[0,3]") + "}", {1, 2, 3}), {"shape must be a JSON array"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[18446744073709551615]", "[0,0]") + "}"), {"too large"});
  expect_format_error(raw_file("{" + entry("w", "F64", "[4294967296,4294967296]", "[0,0]") + "}"),
                      {"needs more than 2^64 bytes"});
  // A zero dimension makes the tensor empty however large the other dimensions are.
  EXPECT_NO_THROW(parse_safetensors(raw_file("{" + entry("w", "F64", "[9223372036854775807,0]", "[0,0]") + "}"), "ok"));
}

TEST(SafetensorsMalformed, BadOffsets) {
  expect_format_error(raw_file("{" + entry("w", "U8", "[4]", "[0,4]") + "}", {1, 2}),
                      {"tensor 'w'", "data_offsets [0, 4] run past the end of the data buffer (2 bytes)"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[0]", "[3,1]") + "}", {1, 2, 3}),
                      {"tensor 'w'", "data_offsets [3, 1] end before they begin"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[1]", "[0]") + "}", {1}), {"data_offsets must be an array"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[1]", "[0,1,2]") + "}", {1}), {"data_offsets must be an array"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[1]", "[-1,0]") + "}", {1}), {"two non-negative integers"});
  expect_format_error(raw_file("{" + entry("w", "U8", "[1]", "[18446744073709551615,18446744073709551615]") + "}", {1}),
                      {"run past the end"});
}

TEST(SafetensorsMalformed, ByteCountMustMatchShape) {
  expect_format_error(
      raw_file("{" + entry("fc.1.weight", "F32", "[120,784]", "[0,100]") + "}", std::vector<uint8_t>(100)),
      {"tensor 'fc.1.weight': data_offsets [0, 100] hold 100 bytes but shape [120, 784] of F32 needs 376320"});
  expect_format_error(raw_file("{" + entry("s", "F64", "[]", "[0,4]") + "}", std::vector<uint8_t>(4)),
                      {"shape [] of F64 needs 8"});
}

TEST(SafetensorsMalformed, TensorsMustTileTheBufferExactly) {
  // Overlap: b starts inside a.
  expect_format_error(
      raw_file("{" + entry("a", "U8", "[4]", "[0,4]") + "," + entry("b", "U8", "[4]", "[2,6]") + "}",
               std::vector<uint8_t>(6)),
      {"tensor 'b'", "overlap tensor 'a' at [0, 4]"});
  // Two tensors over the same bytes.
  expect_format_error(
      raw_file("{" + entry("a", "U8", "[4]", "[0,4]") + "," + entry("b", "U8", "[4]", "[0,4]") + "}",
               std::vector<uint8_t>(4)),
      {"overlap"});
  // A hole between tensors.
  expect_format_error(
      raw_file("{" + entry("a", "U8", "[2]", "[0,2]") + "," + entry("b", "U8", "[2]", "[4,6]") + "}",
               std::vector<uint8_t>(6)),
      {"bytes [2, 4) of the data buffer belong to no tensor"});
  // Bytes after the last tensor.
  expect_format_error(raw_file("{" + entry("a", "U8", "[2]", "[0,2]") + "}", std::vector<uint8_t>(3)),
                      {"has 3 bytes but the tensors cover only the first 2"});
  expect_format_error(raw_file("{}", {0}), {"cover only the first 0"});
  // Empty tensors take no room, even side by side.
  EXPECT_NO_THROW(parse_safetensors(
      raw_file("{" + entry("a", "U8", "[0]", "[0,0]") + "," + entry("b", "U8", "[0]", "[0,0]") + "," +
               entry("c", "U8", "[1]", "[0,1]") + "}", {9}),
      "ok"));
}

}  // namespace
}  // namespace spire::io
