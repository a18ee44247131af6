// Little-endian byte writer and bounds-checked reader for the bundle file format. The reader never reads past
// its span and never allocates more than the bytes left could hold, so a hostile file can only make it throw.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace spire::bundle {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(const std::string& s) { u64(s.size()); raw(s.data(), s.size()); }
  void bytes(std::span<const uint8_t> b) { u64(b.size()); raw(b.data(), b.size()); }
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    const auto* c = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  std::vector<uint8_t>& data() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> in, std::string source) : in_(in), source_(std::move(source)) {}
  uint8_t u8() { uint8_t v; raw(&v, 1); return v; }
  uint32_t u32() { uint32_t v; raw(&v, 4); return v; }
  uint64_t u64() { uint64_t v; raw(&v, 8); return v; }
  int64_t i64() { int64_t v; raw(&v, 8); return v; }
  double f64() { double v; raw(&v, 8); return v; }
  std::string str() {
    const uint64_t n = count(1, "a string");
    std::string s(reinterpret_cast<const char*>(in_.data() + at_), size_t(n));
    at_ += size_t(n);
    return s;
  }
  std::vector<uint8_t> bytes() {
    const uint64_t n = count(1, "a byte array");
    std::vector<uint8_t> b(in_.begin() + ptrdiff_t(at_), in_.begin() + ptrdiff_t(at_ + n));
    at_ += size_t(n);
    return b;
  }
  // A byte array left where it lies in the span (the caller keeps the span's memory alive).
  std::span<const uint8_t> byte_view() {
    const uint64_t n = count(1, "a byte array");
    const std::span<const uint8_t> view = in_.subspan(at_, size_t(n));
    at_ += size_t(n);
    return view;
  }
  // A count of items each taking at least `min_item_bytes` in the file: refused when the rest cannot hold them.
  uint64_t count(uint64_t min_item_bytes, const char* what) {
    const uint64_t n = u64();
    if (min_item_bytes && n > left() / min_item_bytes) fail(std::string("the count of ") + what + " runs past the end");
    return n;
  }
  void raw(void* p, size_t n) {
    if (n == 0) return;  // p may be an empty vector's null data()
    if (n > left()) fail("truncated");
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
  }
  uint64_t left() const { return in_.size() - at_; }
  size_t at() const { return at_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw BundleError(source_ + ": corrupt bundle: " + why + " (at byte " + std::to_string(at_) + " of the payload)");
  }

 private:
  std::span<const uint8_t> in_;
  std::string source_;
  size_t at_ = 0;
};

}  // namespace spire::bundle
