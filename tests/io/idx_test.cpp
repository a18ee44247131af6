// IDX (MNIST / Fashion-MNIST) files: synthetic gzipped files written here, every way they can be wrong,
// and the real Fashion-MNIST when Debian's dataset-fashion-mnist is installed.
#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "io/idx.h"

namespace spire::io {
namespace {

namespace fs = std::filesystem;

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

std::vector<uint8_t> idx_bytes(uint32_t magic, std::vector<uint32_t> dims, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_idx_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
    const fs::path p = dir_ / name;
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (!bytes.empty()) {
      EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
    }
    EXPECT_EQ(gzclose(f), Z_OK);
    return p;
  }
  fs::path write_plain(const std::string& name, const std::vector<uint8_t>& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return p;
  }
  std::vector<uint8_t> read_plain(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
};

void expect_error(const std::function<void()>& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a FormatError mentioning " << *fragments.begin();
  } catch (const FormatError& e) {
    for (const auto& s : fragments) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
}

TEST_F(IdxTest, GzippedImagesAndLabelsLoad) {
  std::mt19937 rng(5);
  std::vector<uint8_t> pixels(3 * 4 * 5);
  for (auto& p : pixels) p = static_cast<uint8_t>(rng());
  const auto images = load_idx_images(write_gz("img.gz", idx_bytes(0x803, {3, 4, 5}, pixels)));
  EXPECT_EQ(images.count, 3);
  EXPECT_EQ(images.rows, 4);
  EXPECT_EQ(images.cols, 5);
  EXPECT_EQ(images.pixels, pixels);

  const std::vector<uint8_t> labels{0, 9, 3};
  EXPECT_EQ(load_idx_labels(write_gz("lab.gz", idx_bytes(0x801, {3}, labels))), labels);
  // zlib reads an uncompressed file unchanged.
  EXPECT_EQ(load_idx_labels(write_plain("lab.raw", idx_bytes(0x801, {3}, labels))), labels);
  // Zero images is a valid (empty) file.
  EXPECT_EQ(load_idx_images(write_gz("none.gz", idx_bytes(0x803, {0, 28, 28}, {}))).count, 0);
}

TEST_F(IdxTest, WrongMagicIsNamed) {
  const auto labels = write_gz("lab.gz", idx_bytes(0x801, {2}, {1, 2}));
  expect_error([&] { load_idx_images(labels); }, {"lab.gz", "magic number 0x00000801", "0x00000803", "label file"});
  const auto images = write_gz("img.gz", idx_bytes(0x803, {1, 1, 1}, {7}));
  expect_error([&] { load_idx_labels(images); }, {"img.gz", "magic number 0x00000803", "image file"});
  expect_error([&] { load_idx_labels(write_gz("f.gz", idx_bytes(0x0d01, {1}, {0, 0, 0, 0}))); }, {"0x00000d01"});
}

TEST_F(IdxTest, TruncatedOrOverlongPayload) {
  expect_error([&] { load_idx_images(write_gz("short.gz", idx_bytes(0x803, {2, 2, 2}, {1, 2, 3}))); },
               {"short.gz", "truncated", "promises 8 data bytes but the file holds 3"});
  expect_error([&] { load_idx_labels(write_gz("long.gz", idx_bytes(0x801, {2}, {1, 2, 3}))); },
               {"more than the 2 data bytes"});
  expect_error([&] { load_idx_images(write_gz("hdr.gz", {0, 0, 8, 3, 0, 0})); }, {"ends inside the header"});
  expect_error([&] { load_idx_labels(write_gz("empty.gz", {})); }, {"ends inside the header (magic number)"});
  // A header that promises 2^32 x 2^32 x 2^32 bytes is refused before any allocation.
  expect_error([&] { load_idx_images(write_gz("huge.gz", idx_bytes(0x803, {~0u, ~0u, ~0u}, {}))); }, {"absurd"});
}

TEST_F(IdxTest, TruncatedGzipStreamEveryPrefix) {
  std::vector<uint8_t> labels(300);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const auto gz = read_plain(write_gz("full.gz", idx_bytes(0x801, {300}, labels)));
  ASSERT_GT(gz.size(), 20u);
  for (size_t len = 0; len < gz.size(); ++len) {
    SCOPED_TRACE(len);
    const auto p = write_plain("cut.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + ptrdiff_t(len)));
    EXPECT_THROW(load_idx_labels(p), FormatError);
  }
}

TEST_F(IdxTest, MissingFileAndMissingDataSet) {
  expect_error([&] { load_idx_labels(dir_ / "absent.gz"); }, {"absent.gz", "no such file"});
  expect_error([&] { load_fashion_mnist(dir_, Split::Train); },
               {"train-images-idx3-ubyte.gz", "apt-get install dataset-fashion-mnist"});
}

TEST_F(IdxTest, FashionMnistLayoutChecks) {
  std::vector<uint8_t> pixels(2 * 28 * 28, 1);
  write_gz("t10k-images-idx3-ubyte.gz", idx_bytes(0x803, {2, 28, 28}, pixels));
  write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes(0x801, {2}, {3, 9}));
  const auto data = load_fashion_mnist(dir_, Split::Test);
  EXPECT_EQ(data.images.count, 2);
  EXPECT_EQ(data.labels, (std::vector<uint8_t>{3, 9}));

  write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes(0x801, {3}, {3, 9, 1}));
  expect_error([&] { load_fashion_mnist(dir_, Split::Test); }, {"holds 3 labels but", "holds 2 images"});
  write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes(0x801, {2}, {3, 10}));
  expect_error([&] { load_fashion_mnist(dir_, Split::Test); }, {"label 10 at index 1"});
  write_gz("t10k-images-idx3-ubyte.gz", idx_bytes(0x803, {2, 27, 28}, std::vector<uint8_t>(2 * 27 * 28)));
  expect_error([&] { load_fashion_mnist(dir_, Split::Test); }, {"27 x 28"});
}

TEST(FashionMnistReal, TrainAndTestSetsLoad) {
  const fs::path dir{std::string(kFashionMnistDir)};
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << dir << " (apt-get install dataset-fashion-mnist)";
  }
  const auto train = load_fashion_mnist(dir, Split::Train);
  EXPECT_EQ(train.images.count, 60000);
  EXPECT_EQ(train.labels.size(), 60000u);
  EXPECT_EQ(train.images.pixels.size(), 60000u * 28 * 28);
  std::array<int, 10> per_class{};
  for (uint8_t l : train.labels) {
    ASSERT_LE(l, 9);
    ++per_class[l];
  }
  for (int c : per_class) EXPECT_EQ(c, 6000);  // Fashion-MNIST's training set is balanced
  uint8_t brightest = 0;
  for (uint8_t p : train.images.pixels) brightest = std::max(brightest, p);
  EXPECT_EQ(brightest, 255);

  const auto test = load_fashion_mnist(dir, Split::Test);
  EXPECT_EQ(test.images.count, 10000);
  EXPECT_EQ(test.labels.size(), 10000u);
}

}  // namespace
}  // namespace spire::io
