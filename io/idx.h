// The IDX format of MNIST and Fashion-MNIST (optionally gzipped), and the Fashion-MNIST data set as
// Debian's dataset-fashion-mnist package installs it.
//
// IDX: a 4-byte big-endian magic 0x0000TTNN (TT the element type, 0x08 = unsigned byte; NN the number of
// dimensions), NN big-endian 32-bit dimensions, then the elements row-major. Images are 0x00000803
// (count, rows, cols), labels 0x00000801 (count).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "io/format_error.h"

namespace spire::io {

// N images of rows x cols unsigned bytes, row-major: pixel (i, r, c) is pixels[(i * rows + r) * cols + c].
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
};

// Each reads the whole file (gzipped or not: zlib reads plain files unchanged) and checks the magic, the
// dimensions and that the file holds exactly the bytes its header promises. Errors are FormatErrors naming
// the file and the problem.
IdxImages load_idx_images(const std::filesystem::path& path);
std::vector<uint8_t> load_idx_labels(const std::filesystem::path& path);

enum class Split { Train, Test };
std::string_view split_name(Split s);  // "train", "t10k" (the file-name prefixes)

struct FashionMnist {
  IdxImages images;             // count x 28 x 28
  std::vector<uint8_t> labels;  // count values in 0..9
};

inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Loads <dir>/<split>-images-idx3-ubyte.gz and <dir>/<split>-labels-idx1-ubyte.gz; checks 28x28 images,
// equal counts and labels in 0..9. A missing file names it and says how to install the package.
FashionMnist load_fashion_mnist(const std::filesystem::path& dir, Split split);

}  // namespace spire::io
