// Small helpers the conformance tests share: seeded random data, poison values, typed downloads, and the
// message of the rt::Error an action throws.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace spire::rt::conformance {

// Written before a kernel or a copy runs, so an output it never writes cannot pass for a right one.
constexpr uint32_t kPoison = 0xDEADBEEFu;
constexpr uint32_t kNaNBits = 0x7fc00000u;

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -100.0f, float hi = 100.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(rng);
  return v;
}

// Small whole numbers as floats: sums of a few of them are exact, in any order and on any device.
inline std::vector<float> random_small_ints(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-50, 50);
  std::vector<float> v(n);
  for (auto& f : v) f = float(dist(rng));
  return v;
}

template <class T>
std::vector<T> download_vector(Device& d, const Buffer& b, size_t count, uint64_t offset = 0) {
  std::vector<T> out(count);
  d.download(b, out.data(), count * sizeof(T), offset);
  return out;
}

template <class T>
std::shared_ptr<Buffer> upload_vector(Device& d, const std::vector<T>& host, Memory memory = Memory::DeviceLocal) {
  auto b = d.alloc(host.size() * sizeof(T), memory);
  d.upload(*b, host.data(), host.size() * sizeof(T));
  return b;
}

// The message of the rt::Error `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace spire::rt::conformance
