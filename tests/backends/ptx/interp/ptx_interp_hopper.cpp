#include "tests/backends/ptx/interp/ptx_interp_hopper.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/half_bits.h"

namespace spire::ptx::interp::hopper {

namespace {

// PTX's limits on an mbarrier's arrival count and transaction count (both 20 bits).
constexpr uint64_t kMaxArrivals = (uint64_t(1) << 20) - 1;
constexpr int64_t kMaxTx = (int64_t(1) << 20) - 1;

[[noreturn]] void fault(const std::string& why, const std::string& at) {
  throw Error("PTX interpreter: " + why + " at: " + at);
}

std::string hex(uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(v));
  return s;
}

}  // namespace

MBarriers::Barrier& MBarriers::find(uint32_t address, const char* what, const std::string& at) {
  auto it = bars_.find(address);
  if (it == bars_.end())
    fault(std::string(what) + " on an uninitialized mbarrier at shared address " + std::to_string(address), at);
  return it->second;
}

void MBarriers::init(uint32_t address, uint64_t arrivals, const std::string& at) {
  if (arrivals == 0 || arrivals > kMaxArrivals)
    fault("mbarrier.init count " + std::to_string(arrivals) + " outside 1 .. 2^20 - 1", at);
  Barrier& b = bars_[address];
  b = Barrier{};
  b.expected = b.pending = uint32_t(arrivals);
}

void MBarriers::complete_if_done(Barrier& b) {
  if (b.pending != 0 || b.tx != 0) return;
  ++b.phase;
  b.pending = b.expected;
}

void MBarriers::arrive(uint32_t address, uint64_t tx_bytes, const std::string& at) {
  Barrier& b = find(address, "arrive", at);
  if (tx_bytes > uint64_t(kMaxTx) || b.tx + int64_t(tx_bytes) > kMaxTx)
    fault("mbarrier transaction count past 2^20 - 1 bytes", at);
  b.tx += int64_t(tx_bytes);
  // pending is zero only while the phase waits for transaction bytes: every arrival it expects already came.
  if (b.pending == 0)
    fault("mbarrier at shared address " + std::to_string(address) + " gets more arrivals than its count " +
              std::to_string(b.expected) + " in one phase",
          at);
  --b.pending;
  complete_if_done(b);
}

void MBarriers::complete_tx(uint32_t address, uint64_t bytes, const std::string& at) {
  Barrier& b = find(address, "complete_tx", at);
  if (bytes > uint64_t(kMaxTx) || b.tx - int64_t(bytes) < -kMaxTx) fault("mbarrier transaction count below -(2^20 - 1)", at);
  b.tx -= int64_t(bytes);
  // With every arrival in, no expect_tx can come to balance bytes beyond those expected: the phase would never end.
  if (b.pending == 0 && b.tx < 0)
    fault("a copy signals " + std::to_string(-b.tx) + " bytes more than the mbarrier at shared address " +
              std::to_string(address) + " expects",
          at);
  complete_if_done(b);
}

bool MBarriers::phase_complete(uint32_t address, uint32_t parity, const std::string& at) const {
  auto it = bars_.find(address);
  if (it == bars_.end()) fault("try_wait on an uninitialized mbarrier at shared address " + std::to_string(address), at);
  return (it->second.phase & 1u) != (parity & 1u);
}

bool MBarriers::overlaps(uint64_t begin, uint64_t end) const {
  auto it = bars_.lower_bound(begin >= 7 ? uint32_t(begin - 7) : 0);
  return it != bars_.end() && it->first < end && it->first + 8 > begin;
}

uint64_t MBarriers::fingerprint() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const auto& [address, b] : bars_) {
    mix(address);
    mix(b.expected);
    mix(b.pending);
    mix(uint64_t(b.tx));
    mix(b.phase);
  }
  return h;
}

uint32_t tensor_copy(const mock::TensorMap& map, const std::vector<int32_t>& coords, uint32_t dst,
                     std::vector<uint8_t>& shared, const GlobalCheck& check, const std::string& at) {
  if (coords.size() != map.rank)
    fault("a " + std::to_string(coords.size()) + "d tensor copy with a rank-" + std::to_string(map.rank) + " tensor map",
          at);
  // The PTX ISA asks for a 128-byte aligned destination; a swizzled one must also start a 1024-byte swizzle group
  // for the pattern wgmma reads (the interpreter swizzles by absolute address, so it does not need that).
  if (dst % 128 != 0) fault("tensor copy destination " + std::to_string(dst) + " is not 128-byte aligned", at);
  const uint32_t eb = map.element_bytes;
  uint64_t elements = 1;
  for (uint32_t d = 0; d < map.rank; ++d) elements *= map.box[d];
  const uint64_t bytes = elements * eb;
  if (dst + bytes > shared.size())
    fault("tensor copy of " + std::to_string(bytes) + " bytes at shared address " + std::to_string(dst) + " past " +
              std::to_string(shared.size()) + " bytes",
          at);
  const uint32_t row = map.box[0];
  std::vector<uint32_t> index(map.rank, 0);  // the box row's position along dims 1.. (index[0] stays 0)
  for (uint64_t first = 0; first < elements; first += row) {
    // The row's global origin, and whether its outer coordinates are inside the tensor.
    bool inside = true;
    uint64_t source = map.global_address;
    for (uint32_t d = 1; d < map.rank; ++d) {
      const int64_t c = int64_t(coords[d]) + index[d];
      inside = inside && c >= 0 && uint64_t(c) < map.dims[d];
      source += uint64_t(c) * map.strides[d - 1];
    }
    // The row's in-bounds elements along dim 0 are contiguous in global memory: one check covers them.
    const int64_t c0 = coords[0];
    const int64_t lo = std::max<int64_t>(0, -c0), hi = std::min<int64_t>(row, int64_t(map.dims[0]) - c0);
    const uint8_t* src = nullptr;
    if (inside && lo < hi) {
      const uint64_t from = source + uint64_t(c0 + lo) * eb;
      try {
        check(from, uint32_t((hi - lo) * eb));
      } catch (const std::exception& e) {
        fault(std::string(e.what()) + " (tensor copy)", at);
      }
      src = reinterpret_cast<const uint8_t*>(from);
    }
    for (uint32_t i = 0; i < row; ++i) {
      // An element never straddles a 16-byte chunk, so the swizzle moves it whole.
      const uint32_t logical = dst + uint32_t((first + i) * eb);
      uint8_t* to = shared.data() + (map.swizzle == mock::kSwizzle128B ? swizzle_128b(logical) : logical);
      if (src && int64_t(i) >= lo && int64_t(i) < hi) std::memcpy(to, src + (i - lo) * eb, eb);
      else std::memset(to, 0, eb);
    }
    for (uint32_t d = 1; d < map.rank && ++index[d] == map.box[d]; ++d) index[d] = 0;
  }
  return uint32_t(bytes);
}

Descriptor decode_descriptor(uint64_t bits, const std::string& at) {
  constexpr uint64_t kField = 0x3FFF;
  constexpr uint64_t kKnown = kField | kField << 16 | kField << 32 | uint64_t(3) << 62;
  if (bits & ~kKnown)
    fault("wgmma descriptor " + hex(bits) + " sets bits outside start, LBO, SBO and swizzle (base offset, reserved)", at);
  const uint64_t swizzle = bits >> 62;
  if (swizzle > 1) fault("wgmma descriptor " + hex(bits) + ": only no swizzle (0) or the 128-byte one (1)", at);
  Descriptor d;
  d.start = uint32_t(bits & kField) << 4;
  d.lbo = uint32_t(bits >> 16 & kField) << 4;
  d.sbo = uint32_t(bits >> 32 & kField) << 4;
  d.swizzle_128b = swizzle == 1;
  return d;
}

// The canonical layouts of 16-bit operands (8 elements = one 16-byte core row):
//   no swizzle: 8 x 8 core matrices of 128 contiguous bytes, LBO apart along K and SBO apart along M / N; K-major ones
//     hold 8 mn rows of 8 k, MN-major ones 8 k rows of 8 mn;
//   128-byte swizzle, K-major: one 128-byte row per mn (k within it), 8-row groups SBO apart;
//   128-byte swizzle, MN-major: one 128-byte row of 64 mn per k, 8-k groups SBO apart, 64-wide mn atoms LBO apart;
// then the swizzle permutes 16-byte chunks by absolute address.
uint32_t operand_address(const Descriptor& d, uint32_t mn, uint32_t k, bool mn_major) {
  if (!d.swizzle_128b)
    return d.start + (k / 8) * d.lbo + (mn / 8) * d.sbo +
           (mn_major ? 16 * (k % 8) + 2 * (mn % 8) : 16 * (mn % 8) + 2 * (k % 8));
  const uint32_t a = mn_major ? d.start + (k / 8) * d.sbo + (mn / 64) * d.lbo + 128 * (k % 8) + 2 * (mn % 64)
               : d.start + (mn / 8) * d.sbo + 128 * (mn % 8) + 2 * k;
  return swizzle_128b(a);
}

std::vector<float> read_operand(const std::vector<uint8_t>& shared, uint64_t descriptor, uint32_t rows, bool mn_major,
                                bool bf16, const std::string& at) {
  const Descriptor d = decode_descriptor(descriptor, at);
  std::vector<float> out(size_t(rows) * 16);
  for (uint32_t mn = 0; mn < rows; ++mn)
    for (uint32_t k = 0; k < 16; ++k) {
      const uint32_t a = operand_address(d, mn, k, mn_major);
      if (uint64_t(a) + 2 > shared.size())
        fault("wgmma operand element at shared address " + std::to_string(a) + " past " +
                  std::to_string(shared.size()) + " bytes (descriptor " + hex(descriptor) + ")",
              at);
      uint16_t h;
      std::memcpy(&h, shared.data() + a, 2);
      out[size_t(mn) * 16 + k] = bf16 ? spire::bf16_bits_to_f32(h) : spire::f16_bits_to_f32(h);
    }
  return out;
}

}  // namespace spire::ptx::interp::hopper
