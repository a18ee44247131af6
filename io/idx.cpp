#include "io/idx.h"

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <system_error>

#include <fmt/format.h>
#include <zlib.h>

namespace spire::io {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
// No IDX data set we read comes near this; a header asking for more is corrupt, not big.
constexpr uint64_t kMaxElements = uint64_t{1} << 34;

// A gzip (or plain) file read through zlib, with errors that name the file.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& path) : name_(display_name(path)) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw_format_error(name_, "no such file");
    }
    if (std::filesystem::is_directory(path, ec)) throw_format_error(name_, "is a directory, not a file");
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) throw_format_error(name_, fmt::format("cannot open: {}", std::strerror(errno)));
    gzbuffer(file_, 1 << 17);
  }
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  const std::string& name() const { return name_; }

  // Reads up to n bytes into out; returns how many arrived (fewer only at the end of the data).
  size_t read_some(uint8_t* out, size_t n) {
    size_t total = 0;
    while (total < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
      const int got = gzread(file_, out + total, want);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        throw_format_error(name_, fmt::format("corrupt or truncated gzip data: {}", msg ? msg : "unknown error"));
      }
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    // zlib reports a gzip stream cut short as an error only here, after the last bytes arrive.
    int code = Z_OK;
    const char* msg = gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      throw_format_error(name_, fmt::format("corrupt or truncated gzip data: {}", msg ? msg : "unknown error"));
    }
    return total;
  }

  uint32_t read_be32(std::string_view what) {
    std::array<uint8_t, 4> b{};
    if (read_some(b.data(), 4) != 4) throw_format_error(name_, fmt::format("file ends inside the header ({})", what));
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // Exactly `count` payload bytes, then the end of the file. The buffer grows as data arrives rather than
  // being sized from the header up front, so a lying header cannot make us allocate gigabytes.
  std::vector<uint8_t> read_payload(uint64_t count) {
    std::vector<uint8_t> data;
    constexpr size_t kChunk = 1 << 20;
    while (data.size() < count) {
      const size_t old = data.size();
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, count - old));
      data.resize(old + want);
      const size_t got = read_some(data.data() + old, want);
      data.resize(old + got);
      if (got < want) {
        throw_format_error(name_, fmt::format("truncated: the header promises {} data bytes but the file holds {}",
                                              count, data.size()));
      }
    }
    uint8_t extra = 0;
    if (read_some(&extra, 1) != 0) {
      throw_format_error(name_, fmt::format("the file holds more than the {} data bytes its header promises", count));
    }
    return data;
  }

 private:
  std::string name_;
  gzFile file_ = nullptr;
};

void check_magic(GzReader& in, uint32_t expected, std::string_view kind) {
  const uint32_t magic = in.read_be32("magic number");
  if (magic == expected) return;
  std::string hint;
  if (magic == kImagesMagic) hint = " (this is an IDX image file)";
  if (magic == kLabelsMagic) hint = " (this is an IDX label file)";
  throw_format_error(in.name(), fmt::format("magic number 0x{:08x} is not 0x{:08x} of IDX {}{}", magic, expected, kind,
                                            hint));
}

}  // namespace

IdxImages load_idx_images(const std::filesystem::path& path) {
  GzReader in(path);
  check_magic(in, kImagesMagic, "unsigned-byte images (3 dimensions)");
  const uint32_t count = in.read_be32("image count");
  const uint32_t rows = in.read_be32("row count");
  const uint32_t cols = in.read_be32("column count");
  const unsigned __int128 product = static_cast<unsigned __int128>(uint64_t{count} * rows) * cols;  // < 2^96
  if (product > kMaxElements) {
    throw_format_error(in.name(), fmt::format("header dimensions {} x {} x {} are absurd", count, rows, cols));
  }
  IdxImages images;
  images.count = count;
  images.rows = rows;
  images.cols = cols;
  images.pixels = in.read_payload(static_cast<uint64_t>(product));
  return images;
}

std::vector<uint8_t> load_idx_labels(const std::filesystem::path& path) {
  GzReader in(path);
  check_magic(in, kLabelsMagic, "unsigned-byte labels (1 dimension)");
  const uint32_t count = in.read_be32("label count");
  return in.read_payload(count);
}

std::string_view split_name(Split s) { return s == Split::Train ? "train" : "t10k"; }

FashionMnist load_fashion_mnist(const std::filesystem::path& dir, Split split) {
  const auto images_path = dir / fmt::format("{}-images-idx3-ubyte.gz", split_name(split));
  const auto labels_path = dir / fmt::format("{}-labels-idx1-ubyte.gz", split_name(split));
  for (const auto& p : {images_path, labels_path}) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      throw_format_error(display_name(p),
                         "no such file: Fashion-MNIST is not installed here (apt-get install dataset-fashion-mnist)");
    }
  }
  FashionMnist data;
  data.images = load_idx_images(images_path);
  data.labels = load_idx_labels(labels_path);
  if (data.images.rows != 28 || data.images.cols != 28) {
    throw_format_error(display_name(images_path), fmt::format("images are {} x {}, Fashion-MNIST's are 28 x 28",
                                                              data.images.rows, data.images.cols));
  }
  if (static_cast<size_t>(data.images.count) != data.labels.size()) {
    throw_format_error(display_name(labels_path),
                       fmt::format("holds {} labels but {} holds {} images", data.labels.size(),
                                   display_name(images_path), data.images.count));
  }
  for (size_t i = 0; i < data.labels.size(); ++i) {
    if (data.labels[i] > 9) {
      throw_format_error(display_name(labels_path),
                         fmt::format("label {} at index {} is outside Fashion-MNIST's classes 0..9", data.labels[i], i));
    }
  }
  return data;
}

}  // namespace spire::io
