// bfloat16 conversions: f32 -> bf16 rounds to nearest, ties to even, keeps infinities and signs, and turns every
// NaN into a quiet NaN; bf16 -> f32 is exact. Checked bit for bit against ir/kernel/half_bits.h on every device
// with the feature, over ties, the largest float, denormals, NaNs and random bit patterns. The 16-bit output
// is poisoned and has an odd length, so a store that writes a whole word past the end shows. A device with
// bfloat16 masked refuses the kernel by the feature's name.
#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "base/half_bits.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"

namespace spire::rt::conformance {
namespace {

using kir::Access;
using kir::Type;
using kir::Val;

SPIRE_CONFORMANCE_SUITE(HalfConversionTest);

kir::Kernel to_bf16_and_back() {
  kir::KernelBuilder kb("to_bf16_and_back", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto h = kb.buffer("h", Type::BF16, Access::Write);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  Val i = kb.global_id();
  kb.if_(i < n, [&] {
    Val b = cast(x[i].load(), Type::BF16);
    h[i] = b;
    y[i] = cast(b, Type::F32);
  });
  return kb.finish();
}

std::vector<uint32_t> probe_bits() {
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000,              // zeros
      0x3F800000, 0xBF800000,              // +-1: exact
      0x3F808000, 0x3F818000,              // ties: to the even neighbour, down then up
      0x3F808001, 0x3F817FFF,              // just above and below a tie
      0x7F7FFFFF, 0xFF7FFFFF,              // the largest floats round to infinity
      0x7F7F7FFF,                          // ... and just below the tie to the largest bf16
      0x7F800000, 0xFF800000,              // infinities
      0x7FC00000, 0xFFC00000, 0x7FC12345,  // quiet NaNs, one with a payload
      0x7F800001, 0x7FBFFFFF,              // signalling NaNs: must come out NaN, not infinity
      0x00000001, 0x00018000, 0x807FFFFF,  // denormals, one a tie
      0x00800000,                          // the smallest normal
  };
  std::mt19937 rng(7);
  for (int k = 0; k < 4001; ++k) bits.push_back(rng());
  return bits;
}

TEST_P(HalfConversionTest, BFloat16RoundsToNearestEvenAndWidensExactly) {
  if (!info().features.has(kir::Feature::BFloat16)) GTEST_SKIP() << info().id << " has no bfloat16";
  auto k = backends::compile_and_load(dev(), to_bf16_and_back());
  const std::vector<uint32_t> bits = probe_bits();
  const uint32_t n = uint32_t(bits.size());
  ASSERT_EQ(n % 2, 1u) << "an odd count leaves half of the last word of h to stay poisoned";
  auto x = upload_vector(dev(), bits);
  auto h = dev().alloc((n + 1) * 2);
  auto y = dev().alloc(n * 4);
  dev().fill(*h, kPoison);
  dev().fill(*y, kPoison);
  BufferView views[] = {BufferView(x), BufferView(h), BufferView(y)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  auto hs = download_vector<uint16_t>(dev(), *h, n + 1);
  auto ys = download_vector<uint32_t>(dev(), *y, n);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, &bits[i], 4);
    const uint16_t want = spire::f32_to_bf16_bits(f);
    if ((hs[i] != want || ys[i] != uint32_t(want) << 16) && bad++ < 8)
      ADD_FAILURE() << std::hex << "x = 0x" << bits[i] << ": bf16 0x" << hs[i] << " (want 0x" << want << "), back 0x"
                    << ys[i];
  }
  EXPECT_EQ(bad, 0u) << "wrong conversions";
  EXPECT_EQ(hs[n], uint16_t(kPoison >> 16)) << "a 16-bit store wrote past the end";
}

// Widened vector loads (kir::LoadBufferVector::widen: SPIR-V reads 32-bit words and splits them, PTX converts each
// 16-bit register): every f16 and bf16 bit pattern, 4 a load, equals base/half_bits.h's conversion, bit for bit (NaNs
// only as NaN; f16 subnormals exactly).
kir::Kernel widened_loads(Type t) {
  kir::KernelBuilder kb(t == Type::F16 ? "widened_f16" : "widened_bf16", 64);
  auto h = kb.buffer("h", t, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  Val i = kb.global_id();
  std::vector<Val> v = h.load_vector_widened(i * 4u, 4);
  for (uint32_t j = 0; j < 4; ++j) y[i * 4u + j] = v[j];
  return kb.finish();
}

TEST_P(HalfConversionTest, WidenedLoadsConvertEveryHalfExactly) {
  for (Type t : {Type::F16, Type::BF16}) {
    const kir::Feature needs = t == Type::F16 ? kir::Feature::Float16 : kir::Feature::BFloat16;
    if (!info().features.has(needs)) continue;
    auto k = backends::compile_and_load(dev(), widened_loads(t));
    const uint32_t n = 1u << 16;
    std::vector<uint16_t> bits(n);
    for (uint32_t i = 0; i < n; ++i) bits[i] = uint16_t(i);
    auto h = upload_vector(dev(), bits);
    auto y = dev().alloc(n * 4);
    dev().fill(*y, kPoison);
    BufferView views[] = {BufferView(h), BufferView(y)};
    dev().dispatch_now(*k, views, ScalarArgs(), Grid::threads(n / 4, 64));
    auto ys = download_vector<float>(dev(), *y, n);
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const float want = t == Type::F16 ? spire::f16_bits_to_f32(uint16_t(i)) : spire::bf16_bits_to_f32(uint16_t(i));
      const bool same = std::isnan(want) ? std::isnan(ys[i]) : std::memcmp(&want, &ys[i], 4) == 0;
      if (!same && bad++ < 8)
        ADD_FAILURE() << (t == Type::F16 ? "f16" : "bf16") << " 0x" << std::hex << i << ": " << ys[i] << " (want " << want << ")";
    }
    EXPECT_EQ(bad, 0u) << (t == Type::F16 ? "f16" : "bf16") << ": wrong conversions";
  }
}

TEST_P(HalfConversionTest, MaskedBFloat16IsRefusedByName) {
  auto masked = open_masked("bfloat16");
  EXPECT_FALSE(masked->info().features.has(kir::Feature::BFloat16));
  try {
    backends::compile_and_load(*masked, to_bf16_and_back());
    FAIL() << "a bf16 kernel loaded on a device without bfloat16";
  } catch (const MissingFeature& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spire::rt::conformance
