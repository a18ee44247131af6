// Graph Tensors through safetensors files: every graph dtype round-trips exactly; foreign dtypes and
// unrepresentable values are refused by name.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "io/tensor_file.h"

namespace spire::io {
namespace {

using graph::DType;
using graph::Tensor;

TEST(TensorFile, EveryGraphDtypeRoundTripsThroughAFile) {
  const auto path = std::filesystem::temp_directory_path() / ("spire_tf_" + std::to_string(::getpid()) + ".st");
  NamedTensors in;
  in.emplace_back("f32", Tensor::from(DType::F32, {2, 2}, {1.5, -0.1, 3e38, -7}));
  in.emplace_back("f64", Tensor::from(DType::F64, {3}, {0.1, -1e300, std::numeric_limits<double>::denorm_min()}));
  in.emplace_back("i32", Tensor::from(DType::I32, {2}, {-2147483648.0, 2147483647.0}));
  in.emplace_back("i64", Tensor::from(DType::I64, {2}, {-9007199254740992.0, 42}));
  in.emplace_back("bool", Tensor::from(DType::Bool, {3}, {1, 0, 1}));
  in.emplace_back("f16", Tensor::from(DType::F16, {4}, {1.0 / 3, -65504, 0x1p-24, 1e5}));  // 1e5: infinity
  in.emplace_back("bf16", Tensor::from(DType::BF16, {3}, {1.0 / 3, -3e38, 0x1p-133}));
  in.emplace_back("scalar", Tensor::scalar(DType::F32, 2.0));
  save_tensors(path, in, {{"who", "test"}});

  const auto ordered = load_tensors_ordered(path);
  ASSERT_EQ(ordered.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].first);
    EXPECT_EQ(ordered[i].first, in[i].first);
    EXPECT_EQ(ordered[i].second.dtype, in[i].second.dtype);
    EXPECT_EQ(ordered[i].second.shape, in[i].second.shape);
    EXPECT_EQ(ordered[i].second.data, in[i].second.data);  // exact: rounding happened in Tensor::from
  }
  // The f32 value -0.1 is stored as the float nearest to -0.1, not as the double.
  EXPECT_EQ(ordered[0].second.data[1], double(-0.1f));
  EXPECT_EQ(read_safetensors(path).metadata.at("who"), "test");
  EXPECT_EQ(load_tensors(path).count("i64"), 1u);
  std::filesystem::remove(path);
}

TEST(TensorFile, BytesAreTheFormatsLittleEndianEncoding) {
  const StTensor st = to_st_tensor("x", Tensor::from(DType::I32, {2}, {1, -2}));
  EXPECT_EQ(st.dtype, StDtype::I32);
  EXPECT_EQ(st.data, (std::vector<uint8_t>{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}));
  const StTensor f = to_st_tensor("y", Tensor::from(DType::F32, {1}, {1.0}));
  EXPECT_EQ(f.data, (std::vector<uint8_t>{0, 0, 0x80, 0x3f}));
}

// F16 and BF16 are the IEEE half and bfloat16 bit patterns, little-endian, rounded to nearest even.
TEST(TensorFile, HalfDtypesAreTheirBitPatterns) {
  const StTensor h = to_st_tensor("h", Tensor::from(DType::F16, {3}, {1.0, -2.0, 1.0 / 3}));
  EXPECT_EQ(h.dtype, StDtype::F16);
  EXPECT_EQ(h.data, (std::vector<uint8_t>{0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35}));
  const StTensor b = to_st_tensor("b", Tensor::from(DType::BF16, {3}, {1.0, -2.0, 1.0 / 3}));
  EXPECT_EQ(b.dtype, StDtype::BF16);
  EXPECT_EQ(b.data, (std::vector<uint8_t>{0x80, 0x3f, 0x00, 0xc0, 0xab, 0x3e}));
  const Tensor back = to_graph_tensor(b, "b.safetensors");
  EXPECT_EQ(back.dtype, DType::BF16);
  EXPECT_EQ(back.data, (std::vector<double>{1.0, -2.0, 0x1.56p-2}));
}

TEST(TensorFile, RefusesForeignDtypesAndUnrepresentableValues) {
  StTensor u8{"pixels", StDtype::U8, {2}, {1, 2}};
  try {
    to_graph_tensor(u8, "data.safetensors");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("data.safetensors: tensor 'pixels': dtype U8 has no graph IR"),
              std::string::npos)
        << e.what();
  }
  Tensor bad(DType::I32, {1});
  bad.data[0] = 3e9;
  EXPECT_THROW(to_st_tensor("b", bad), FormatError);
  bad.data[0] = std::nan("");
  EXPECT_THROW(to_st_tensor("b", bad), FormatError);
  Tensor wrong(DType::F32, {3});
  wrong.data.pop_back();
  EXPECT_THROW(to_st_tensor("w", wrong), FormatError);
  // f32 overflow becomes infinity, explicitly.
  Tensor big(DType::F32, {1});
  big.data[0] = 1e300;
  const StTensor st = to_st_tensor("big", big);
  float f;
  std::memcpy(&f, st.data.data(), 4);
  EXPECT_TRUE(std::isinf(f));
}

}  // namespace
}  // namespace spire::io
