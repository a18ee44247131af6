// safetensors: the writer's exact bytes, and round trips through memory and through files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <unistd.h>
#include <string>

#include "io/safetensors.h"
#include "tests/io/st_test_util.h"

namespace spire::io {
namespace {

using testing::f32_bytes;
using testing::raw_file;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(Safetensors, WriterProducesTheFormatsExactBytes) {
  SafetensorsFile file;
  file.tensors.push_back({"a", StDtype::F32, {2}, f32_bytes({1.0f, -2.5f})});
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(header.size(), 54u);
  // Padded with 2 spaces to 56 bytes so that the data starts at 8 + 56, a multiple of 8.
  const auto expected = raw_file(header + "  ", f32_bytes({1.0f, -2.5f}));
  EXPECT_EQ(serialize_safetensors(file), expected);
}

TEST(Safetensors, RoundTripKeepsOrderDtypesShapesDataAndMetadata) {
  SafetensorsFile file;
  file.metadata = {{"format", "pt"}, {"note", "ünïcode ok"}};
  file.tensors.push_back({"z.last.but.first", StDtype::F64, {3, 2}, random_bytes(48, 1)});
  file.tensors.push_back({"scalar", StDtype::I64, {}, random_bytes(8, 2)});
  file.tensors.push_back({"empty", StDtype::F32, {4, 0, 3}, {}});
  file.tensors.push_back({"bytes", StDtype::U8, {5}, random_bytes(5, 3)});
  file.tensors.push_back({"halves", StDtype::BF16, {1, 1, 3}, random_bytes(6, 4)});
  file.tensors.push_back({"ints", StDtype::I32, {2, 2}, random_bytes(16, 5)});

  const auto bytes = serialize_safetensors(file);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[size_t(i)];
  EXPECT_EQ((8 + header_len) % 8, 0u) << "data buffer must start 8-byte aligned";

  const SafetensorsFile back = parse_safetensors(bytes, "mem");
  EXPECT_EQ(back.metadata, file.metadata);
  ASSERT_EQ(back.tensors.size(), file.tensors.size());
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    SCOPED_TRACE(file.tensors[i].name);
    EXPECT_EQ(back.tensors[i].name, file.tensors[i].name);
    EXPECT_EQ(back.tensors[i].dtype, file.tensors[i].dtype);
    EXPECT_EQ(back.tensors[i].shape, file.tensors[i].shape);
    EXPECT_EQ(back.tensors[i].data, file.tensors[i].data);
  }
  EXPECT_EQ(back.find("scalar")->element_count(), 1);
  EXPECT_EQ(back.find("empty")->element_count(), 0);
  EXPECT_EQ(back.find("missing"), nullptr);
  // Printing the same content again gives the same bytes.
  EXPECT_EQ(serialize_safetensors(back), bytes);
}

TEST(Safetensors, ReaderReturnsTensorsInDataOrderWhateverTheHeaderOrder) {
  const std::string header =
      R"({"second":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"first":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  const auto file = parse_safetensors(raw_file(header, {1, 2, 3, 4}), "mem");
  ASSERT_EQ(file.names(), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(file.tensors[0].data, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(file.tensors[1].data, (std::vector<uint8_t>{3, 4}));
}

TEST(Safetensors, EmptyFileWithNoTensorsIsValid) {
  const auto file = parse_safetensors(raw_file("{}"), "mem");
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_TRUE(file.metadata.empty());
  // Trailing spaces are JSON whitespace: the padding the writers use.
  EXPECT_NO_THROW(parse_safetensors(raw_file("{}      "), "mem"));
}

TEST(Safetensors, FileRoundTripAndMissingFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("spire_io_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "w.safetensors";
  SafetensorsFile file;
  file.tensors.push_back({"w", StDtype::F32, {2, 2}, f32_bytes({1, 2, 3, 4})});
  write_safetensors(path, file);
  EXPECT_FALSE(std::filesystem::exists(dir / "w.safetensors.tmp"));
  const auto back = read_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors[0].data, file.tensors[0].data);

  try {
    read_safetensors(dir / "nope.safetensors");
    FAIL() << "reading a missing file must throw";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_safetensors(dir), FormatError);  // a directory
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, WriterRefusesInconsistentTensors) {
  auto expect_refused = [](StTensor t, const std::string& fragment) {
    SafetensorsFile file;
    file.tensors.push_back(std::move(t));
    try {
      serialize_safetensors(file, "out.safetensors");
      ADD_FAILURE() << "expected a refusal mentioning: " << fragment;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out.safetensors"), std::string::npos) << e.what();
    }
  };
  expect_refused({"w", StDtype::F32, {3}, f32_bytes({1, 2})}, "holds 8 bytes but shape [3] of F32 needs 12");
  expect_refused({"w", StDtype::F32, {-1}, {}}, "negative");
  expect_refused({"__metadata__", StDtype::U8, {0}, {}}, "reserved");
  expect_refused({"", StDtype::U8, {0}, {}}, "empty name");
  expect_refused({"bad\xff", StDtype::U8, {0}, {}}, "UTF-8");

  SafetensorsFile twice;
  twice.tensors.push_back({"w", StDtype::U8, {1}, {1}});
  twice.tensors.push_back({"w", StDtype::U8, {1}, {2}});
  EXPECT_THROW(serialize_safetensors(twice), FormatError);
}

TEST(Safetensors, DtypeTable) {
  EXPECT_EQ(st_dtype_bytes(StDtype::F64), 8u);
  EXPECT_EQ(st_dtype_bytes(StDtype::BF16), 2u);
  EXPECT_EQ(st_dtype_bytes(StDtype::BOOL), 1u);
  EXPECT_EQ(parse_st_dtype("I64"), StDtype::I64);
  EXPECT_EQ(parse_st_dtype("f32"), std::nullopt);  // names are case-sensitive, as in the format
  for (const char* name : {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
                           "F64", "I64", "U64"}) {
    auto t = parse_st_dtype(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(st_dtype_name(*t), name);
  }
}

}  // namespace
}  // namespace spire::io
