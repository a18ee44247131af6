// Hopper instructions in the PTX interpreter (sm_90a, PTX ISA 8.0): mbarrier objects, tensor copies
// (cp.async.bulk.tensor) from maps written by the mock driver's encoder, and warpgroup MMA (wgmma) reading shared
// memory in its canonical layouts. Hand-written kernels in the forms backends/ptx emits, checked against plain C++
// references of what the PTX ISA specifies: layouts and products are computed here, never taken from the interpreter.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/half_bits.h"
#include "tests/runtime/cuda/mock_driver/mock_tensor_map.h"
#include "tests/backends/ptx/interp/ptx_interp.h"

namespace spire::ptx::testing {
namespace ptx_interp_hopper_test {  // named, not anonymous: test executables build as unity batches

using spire::bf16_bits_to_f32;
using spire::f16_bits_to_f32;
using spire::f32_to_bf16_bits;
using spire::f32_to_f16_bits;

constexpr int kF16 = 6, kF32 = 7, kBF16 = 9;  // CUtensorMapDataType
constexpr uint64_t kBudget = 300'000'000;     // instructions: a kernel that spins past this would hang

// Host memory the kernel may touch: registered ranges, everything else faults.
struct Memory {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  interp::GlobalCheck checker() const {
    return [this](uint64_t a, uint32_t n) {
      for (auto [b, len] : ranges)
        if (a >= b && a + n <= b + len) return;
      throw std::runtime_error("out-of-bounds global access at " + std::to_string(a));
    };
  }
};

// A hand-written kernel's parameters p0, p1, ... in order: buffers (.u64 pointers, the only global memory the kernel
// may touch), 64-bit scalars, and tensor maps (128 bytes by value, as `.param .align 64 .b8 pN[128]`).
class Params {
 public:
  template <class T>
  void buffer(std::vector<T>& v) {
    memory_.ranges.emplace_back(reinterpret_cast<uint64_t>(v.data()), v.size() * sizeof(T));
    scalar(reinterpret_cast<uint64_t>(v.data()));
  }
  void scalar(uint64_t v) {
    add(".param .u64", "", std::vector<uint8_t>(8));
    std::memcpy(values_.back().data(), &v, 8);
  }
  void map(const std::array<uint8_t, 128>& bytes) {
    add(".param .align 64 .b8", "[128]", std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  std::string declarations() const {
    std::string s;
    for (size_t i = 0; i < decls_.size(); ++i) s += "  " + decls_[i] + (i + 1 < decls_.size() ? ",\n" : "\n");
    return s;
  }
  std::vector<void*> pointers() {
    std::vector<void*> p;
    for (auto& v : values_) p.push_back(v.data());
    return p;
  }
  const Memory& memory() const { return memory_; }

 private:
  void add(const std::string& type, const std::string& suffix, std::vector<uint8_t> value) {
    decls_.push_back(type + " p" + std::to_string(decls_.size()) + suffix);
    values_.push_back(std::move(value));
  }
  std::vector<std::string> decls_;
  std::vector<std::vector<uint8_t>> values_;
  Memory memory_;
};

// Runs `body` as the entry k of an sm_90a module (after `globals`, module-level declarations) over one block of
// `threads` threads with `dynamic_shared` bytes for an .extern .shared array. Returns the interpreter's error, or "".
std::string run(Params& params, const std::string& body, unsigned threads, uint32_t dynamic_shared = 0,
                const std::string& globals = "") {
  const std::string ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n" + globals + ".visible .entry k(\n" +
                          params.declarations() + ")\n.reqntid " + std::to_string(threads) + ", 1, 1\n{\n" + body +
                          "}\n";
  try {
    auto m = interp::Module::parse(ptx);
    std::vector<void*> p = params.pointers();
    m->launch(m->entries().at(0), {1, 1, 1}, {threads, 1, 1}, p.data(), params.memory().checker(), dynamic_shared,
              kBudget);
  } catch (const interp::Error& e) {
    return e.what();
  }
  return "";
}

// The error of parsing a module whose entry's body is `ins`, or "".
std::string parse_error(const std::string& ins) {
  try {
    interp::Module::parse(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(\n)\n{\n  " + ins + ";\n}\n");
  } catch (const interp::Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// PTX: the block's `threads` threads copy `bytes` (a multiple of 4) between shared memory at the 32-bit register
// `shared` and global memory at the 64-bit register `global`, one word per thread at a time; `in`: global to shared.
std::string copy_words(const std::string& shared, const std::string& global, uint32_t bytes, unsigned threads, bool in,
                       const std::string& label) {
  const std::string b = std::to_string(bytes), step = std::to_string(4 * threads);
  std::string s = "  mov.u32 %r90, %tid.x;\n  shl.b32 %r90, %r90, 2;\n" + label + ":\n  setp.ge.u32 %p90, %r90, " + b +
                  ";\n  @%p90 bra " + label + "_END;\n  add.u32 %r91, " + shared + ", %r90;\n  cvt.u64.u32 %rd90, %r90;\n" +
                  "  add.s64 %rd91, " + global + ", %rd90;\n";
  s += in ? "  ld.global.b32 %r92, [%rd91];\n  st.shared.b32 [%r91], %r92;\n"
          : "  ld.shared.b32 %r92, [%r91];\n  st.global.b32 [%rd91], %r92;\n";
  return s + "  add.u32 %r90, %r90, " + step + ";\n  bra " + label + ";\n" + label + "_END:\n";
}

// PTX: spin until the mbarrier at `bar` completed the phase of `parity` (the loop backends/ptx writes).
std::string await(const std::string& bar, const std::string& parity, const std::string& label) {
  return label + ":\n  mbarrier.try_wait.parity.shared::cta.b64 %p80, [" + bar + "], " + parity + ";\n  @!%p80 bra " +
         label + ";\n";
}

// ---------------------------------------------------------------------------------------------------------------
// mbarrier

// Thread 0 records try_wait.parity for both parities (1: that phase completed) as the barrier (2 arrivals per phase)
// gets 0, 1 and 2 arrivals and then two more. Waiting on parity 1 succeeds at once on a fresh barrier; parity 0 waits for
// the first completion; a completion flips which parity succeeds.
TEST(PtxInterpHopper, MbarrierPhaseCompletesAfterItsArrivals) {
  std::vector<uint32_t> out(7, 99);
  Params params;
  params.buffer(out);
  auto record = [](int slot, int parity) {
    return "  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], " + std::to_string(parity) +
           ";\n  selp.u32 %r3, 1, 0, %p3;\n  add.s64 %rd2, %rd1, " + std::to_string(4 * slot) +
           ";\n  @%p1 st.global.u32 [%rd2], %r3;\n";
  };
  std::string body = R"(
  .shared .align 8 .b8 bar[8];
  ld.param.u64 %rd1, [p0];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r1, 0;
  setp.eq.u32 %p2, %r1, 33;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 2;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
)";
  body += record(0, 1) + record(1, 0) + "  bar.sync 0;\n  @%p2 mbarrier.arrive.shared::cta.b64 _, [%r2];\n  bar.sync 0;\n";
  body += record(2, 0) + "  bar.sync 0;\n  @%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n  bar.sync 0;\n";
  body += record(3, 0) + record(4, 1) + "  bar.sync 0;\n";
  body += "  @%p1 mbarrier.arrive.shared::cta.b64 _, [%r2];\n  @%p2 mbarrier.arrive.shared::cta.b64 _, [%r2];\n  bar.sync 0;\n";
  body += record(5, 1) + record(6, 0) + "  ret;\n";
  ASSERT_EQ(run(params, body, 64), "");
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 0, 0, 1, 0, 1, 0}));
}

// Two threads of different warps take turns through two barriers (1 arrival each) for 5 rounds, each step changing a
// shared counter: thread 0 adds 1 and lets thread 63 go, thread 63 doubles it and lets thread 0 go. Each waits in a
// try_wait loop for the parity of its round, so a poller that did not let the other thread run would spin forever.
TEST(PtxInterpHopper, TryWaitLoopsTakeTurnsAcrossPhases) {
  std::vector<uint32_t> out(1, 0);
  Params params;
  params.buffer(out);
  std::string body = R"(
  .shared .align 8 .b8 ping[8];
  .shared .align 8 .b8 pong[8];
  .shared .align 4 .b8 counter[4];
  ld.param.u64 %rd1, [p0];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra INITIALIZED;
  mbarrier.init.shared::cta.b64 [ping], 1;
  mbarrier.init.shared::cta.b64 [pong], 1;
  st.shared.u32 [counter], 0;
INITIALIZED:
  bar.sync 0;
  mov.u32 %r10, 0;
  setp.eq.u32 %p2, %r1, 63;
  @%p2 bra DOUBLER;
  @%p1 bra DONE;
ADDER:
  ld.shared.u32 %r11, [counter];
  add.u32 %r11, %r11, 1;
  st.shared.u32 [counter], %r11;
  mbarrier.arrive.shared::cta.b64 _, [ping];
  and.b32 %r12, %r10, 1;
)" + await("pong", "%r12", "WAIT_PONG") + R"(
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p3, %r10, 5;
  @%p3 bra ADDER;
  ld.shared.u32 %r11, [counter];
  st.global.u32 [%rd1], %r11;
  bra DONE;
DOUBLER:
  and.b32 %r12, %r10, 1;
)" + await("ping", "%r12", "WAIT_PING") + R"(
  ld.shared.u32 %r11, [counter];
  shl.b32 %r11, %r11, 1;
  st.shared.u32 [counter], %r11;
  mbarrier.arrive.shared::cta.b64 _, [pong];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p3, %r10, 5;
  @%p3 bra DOUBLER;
DONE:
  ret;
)";
  ASSERT_EQ(run(params, body, 64), "");
  uint32_t want = 0;
  for (int i = 0; i < 5; ++i) want = (want + 1) * 2;
  EXPECT_EQ(out[0], want);
}

// A phase nobody completes: the pollers fault with a deadlock (naming the try_wait) instead of spinning forever,
// whether every thread polls or the others wait at bar.sync for the poller.
TEST(PtxInterpHopper, MbarrierDeadlockFaults) {
  const std::string setup = R"(
  .shared .align 8 .b8 bar[8];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
)";
  Params params;
  std::string e = run(params, setup + await("bar", "0", "SPIN") + "  ret;\n", 32);
  EXPECT_HAS(e, "deadlock");
  EXPECT_HAS(e, "32 poll mbarrier phases that never complete");
  EXPECT_HAS(e, "mbarrier.try_wait.parity.shared::cta.b64 %p80, [bar], 0");
  e = run(params, setup + "  @!%p1 bra SYNC;\n" + await("bar", "0", "SPIN") + "SYNC:\n  bar.sync 0;\n  ret;\n", 32);
  EXPECT_HAS(e, "deadlock");
  EXPECT_HAS(e, "1 poll mbarrier phases that never complete (thread 0");
  EXPECT_HAS(e, "31 wait at bar.sync");
  // A single try_wait that returns false is no deadlock: the thread goes on.
  EXPECT_EQ(run(params, setup + "  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;\n  ret;\n", 32), "");
}

TEST(PtxInterpHopper, MbarrierMisuseFaults) {
  Params params;
  auto one = [&](const std::string& body) {
    return run(params, "  .shared .align 8 .b8 bar[16];\n  mov.u32 %r2, bar;\n" + body + "  ret;\n", 1);
  };
  std::string e = one("  mbarrier.arrive.shared::cta.b64 _, [%r2];\n");
  EXPECT_HAS(e, "arrive on an uninitialized mbarrier");
  EXPECT_HAS(e, "at: mbarrier.arrive.shared::cta.b64 _, [%r2]");
  e = one("  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;\n");
  EXPECT_HAS(e, "try_wait on an uninitialized mbarrier");
  // 1 arrival per phase: the expect_tx arrival leaves the phase waiting for its bytes, and a second arrival has no
  // pending arrival to take.
  e = one("  mbarrier.init.shared::cta.b64 [%r2], 1;\n  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 64;\n"
          "  mbarrier.arrive.shared::cta.b64 _, [%r2];\n");
  EXPECT_HAS(e, "more arrivals than its count 1");
  EXPECT_HAS(e, "at: mbarrier.arrive.shared::cta.b64 _, [%r2]");
  e = one("  add.u32 %r3, %r2, 4;\n  mbarrier.init.shared::cta.b64 [%r3], 1;\n");
  EXPECT_HAS(e, "not 8-byte aligned");
  e = one("  mbarrier.init.shared::cta.b64 [%r2], 0;\n");
  EXPECT_HAS(e, "count 0 outside");
  e = one("  add.u32 %r3, %r2, 16;\n  mbarrier.init.shared::cta.b64 [%r3], 1;\n");
  EXPECT_HAS(e, "past 16 bytes");
}

TEST(PtxInterpHopper, RefusesMbarrierFormsOutsideTheSubset) {
  EXPECT_EQ(parse_error("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r2"), "");
  EXPECT_EQ(parse_error("setmaxnreg.inc.sync.aligned.u32 232"), "");
  EXPECT_EQ(parse_error("fence.proxy.async.shared::cta"), "");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"mbarrier.arrive.shared::cta.b64 %rd1, [%r1]", "takes _, [bar]"},
      {"mbarrier.arrive.shared.b64 _, [%r1]", "only mbarrier.init"},
      {"mbarrier.init.shared::cta.b64 %r1, 1", "shared address"},
      {"mbarrier.try_wait.shared::cta.b64 %p1, [%r1]", "only mbarrier.init"},
      {"mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1]", "takes p, [bar], parity"},
      {"fence.proxy.alias", "only fence.mbarrier_init"},
      {"setmaxnreg.inc.sync.aligned.u32 20", "24 .. 256"},
  };
  for (const auto& [ins, why] : bad) {
    const std::string e = parse_error(ins);
    EXPECT_HAS(e, "line 7");
    EXPECT_HAS(e, why);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Tensor copies

// A tensor in global memory: `dims` elements (innermost first) of `element_bytes` random nonzero bytes, dimension d
// (>= 1) `strides[d - 1]` bytes apart; the storage is 16-byte aligned as the encoder asks.
struct Tensor {
  std::vector<uint64_t> dims, strides;
  uint32_t element_bytes = 0;
  std::vector<uint64_t> storage;
  Tensor(std::vector<uint64_t> d, std::vector<uint64_t> s, uint32_t eb, uint32_t seed)
      : dims(std::move(d)), strides(std::move(s)), element_bytes(eb) {
    const uint64_t bytes = strides.empty() ? dims[0] * eb : strides.back() * dims.back();
    storage.resize((bytes + 15) / 16 * 2);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(1, 255);
    for (uint64_t i = 0; i < bytes; ++i) data()[i] = uint8_t(byte(rng));
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage.data()); }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(storage.data()); }
};

std::array<uint8_t, 128> encode(int type, const Tensor& t, const std::vector<uint32_t>& box, bool swizzle) {
  std::array<uint8_t, 128> map{};
  const std::vector<uint32_t> ones(box.size(), 1);
  EXPECT_EQ(mock::encode_tiled(map.data(), type, uint32_t(t.dims.size()), t.data(), t.dims.data(), t.strides.data(),
                               box.data(), ones.data(), 0, swizzle ? mock::kSwizzle128B : mock::kSwizzleNone, 0, 0),
            0);
  return map;
}

// What a copy of the box at `coords` leaves in shared memory from a 1024-aligned destination: the box's elements
// innermost first, zeros for those outside the tensor; with the 128-byte swizzle, 16-byte chunk c of 128-byte row r
// (counted from the destination) moves to chunk c ^ (r % 8).
std::vector<uint8_t> expected_tile(const Tensor& t, const std::vector<uint32_t>& box, const std::vector<int32_t>& coords,
                                   bool swizzle) {
  const uint32_t eb = t.element_bytes;
  const uint32_t b0 = box[0], b1 = box.size() > 1 ? box[1] : 1, b2 = box.size() > 2 ? box[2] : 1;
  std::vector<uint8_t> tile(size_t(b0) * b1 * b2 * eb);
  for (uint32_t z = 0; z < b2; ++z)
    for (uint32_t y = 0; y < b1; ++y)
      for (uint32_t x = 0; x < b0; ++x) {
        const int64_t g[3] = {int64_t(coords[0]) + x, coords.size() > 1 ? int64_t(coords[1]) + y : 0,
                              coords.size() > 2 ? int64_t(coords[2]) + z : 0};
        bool inside = true;
        uint64_t source = 0;
        for (size_t d = 0; d < t.dims.size(); ++d) {
          inside = inside && g[d] >= 0 && uint64_t(g[d]) < t.dims[d];
          source += uint64_t(g[d]) * (d == 0 ? eb : t.strides[d - 1]);
        }
        const size_t logical = ((size_t(z) * b1 + y) * b0 + x) * eb;
        size_t at = logical;
        if (swizzle) {
          const size_t row = logical / 128, chunk = logical % 128 / 16;
          at = row * 128 + (chunk ^ (row % 8)) * 16 + logical % 16;
        }
        for (uint32_t i = 0; i < eb; ++i) tile[at + i] = inside ? t.data()[source + i] : 0;
      }
  return tile;
}

// One thread copies the box at `coords` (read from global memory) into a 1024-aligned shared tile with a tensor copy
// that signals an mbarrier; every thread waits for the phase, then the block copies the tile out to global memory.
std::string copy_kernel(size_t rank, uint32_t bytes) {
  std::string coords = "%r4";
  for (size_t d = 1; d < rank; ++d) coords += ", %r" + std::to_string(4 + d);
  const std::string b = std::to_string(bytes);
  return "  .shared .align 1024 .b8 tile[" + std::to_string((bytes + 1023) / 1024 * 1024) + R"(];
  .shared .align 8 .b8 bar[8];
  ld.param.u64 %rd1, [p0];
  mov.b64 %rd2, p1;
  cvta.param.u64 %rd2, %rd2;
  ld.param.u64 %rd3, [p2];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, tile;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra ISSUED;
  mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  ld.global.s32 %r4, [%rd1];
  add.s64 %rd4, %rd1, 4;
  ld.global.s32 %r5, [%rd4];
  add.s64 %rd4, %rd1, 8;
  ld.global.s32 %r6, [%rd4];
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], )" + b + R"(;
  cp.async.bulk.tensor.)" + std::to_string(rank) + "d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd2, {" +
         coords + R"(}], [bar];
ISSUED:
  bar.sync 0;
)" + await("bar", "0", "LANDED") + copy_words("%r2", "%rd3", bytes, 32, false, "OUT") + "  ret;\n";
}

void expect_copy(int type, Tensor& t, const std::vector<uint32_t>& box, const std::vector<int32_t>& coords, bool swizzle) {
  SCOPED_TRACE("box at (" + std::to_string(coords[0]) + ", " + std::to_string(coords[1]) +
               (coords.size() > 2 ? ", " + std::to_string(coords[2]) : "") + ")" + (swizzle ? ", 128B swizzle" : ""));
  const std::vector<uint8_t> want = expected_tile(t, box, coords, swizzle);
  std::vector<int32_t> c(coords);
  c.resize(3);
  std::vector<uint8_t> out(want.size(), 0xEE);
  Params params;
  params.buffer(c);
  params.map(encode(type, t, box, swizzle));
  params.buffer(out);
  params.buffer(t.storage);
  ASSERT_EQ(run(params, copy_kernel(coords.size(), uint32_t(want.size())), 32), "");
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(int(out[i]), int(want[i])) << "byte " << i;
}

// An f16 tensor of 100 x 37 with rows padded to 208 bytes, in 64 x 8 boxes: inside, at the far edges, partly past
// them, at negative coordinates, and wholly outside (all zeros); and 24 x 5 boxes (48-byte rows) unswizzled.
TEST(PtxInterpHopper, TensorCopy2dWithAndWithoutSwizzle) {
  Tensor t({100, 37}, {208}, 2, 21);
  for (bool swizzle : {false, true})
    for (std::vector<int32_t> c : {std::vector<int32_t>{0, 0}, {36, 29}, {48, 32}, {-8, -3}, {13, -7}, {200, 0}})
      expect_copy(kF16, t, {64, 8}, c, swizzle);
  for (std::vector<int32_t> c : {std::vector<int32_t>{0, 0}, {90, 33}, {-5, 2}}) expect_copy(kBF16, t, {24, 5}, c, false);
}

// f32 tensors of 40 x 6 x 5 (rows of 176 bytes, planes of 1056) in 32 x 4 x 3 boxes, and a bf16 one of 64 x 3 x 4.
TEST(PtxInterpHopper, TensorCopy3dWithAndWithoutSwizzle) {
  Tensor t({40, 6, 5}, {176, 1056}, 4, 22);
  for (bool swizzle : {false, true})
    for (std::vector<int32_t> c : {std::vector<int32_t>{0, 0, 0}, {8, 2, 2}, {16, -1, 3}, {-4, 3, -2}})
      expect_copy(kF32, t, {32, 4, 3}, c, swizzle);
  Tensor h({64, 3, 4}, {128, 384}, 2, 23);
  for (bool swizzle : {false, true}) expect_copy(kBF16, h, {64, 2, 2}, {0, 2, 1}, swizzle);
}

// The .extern .shared array starts at its alignment after the static arrays; a tensor copy lands there.
TEST(PtxInterpHopper, DynamicSharedArrayHonoursItsAlignment) {
  Tensor t({64, 8}, {128}, 2, 24);
  const std::vector<uint32_t> box = {64, 8};
  std::vector<uint32_t> out(1 + 256, 0);
  Params params;
  params.map(encode(kF16, t, box, true));
  params.buffer(out);
  params.buffer(t.storage);
  std::string body = R"(
  .shared .align 4 .b8 pad[40];
  .shared .align 8 .b8 bar[8];
  mov.b64 %rd2, p0;
  cvta.param.u64 %rd2, %rd2;
  ld.param.u64 %rd3, [p1];
  mov.u32 %r2, dyn;
  st.global.u32 [%rd3], %r2;
  add.s64 %rd3, %rd3, 4;
  mbarrier.init.shared::cta.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 1024;
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd2, {0, 0}], [bar];
)" + await("bar", "0", "LANDED") + copy_words("%r2", "%rd3", 1024, 1, false, "OUT") + "  ret;\n";
  ASSERT_EQ(run(params, body, 1, 2048, ".extern .shared .align 1024 .b8 dyn[];\n"), "");
  EXPECT_EQ(out[0], 1024u);
  const std::vector<uint8_t> want = expected_tile(t, box, {0, 0}, true);
  EXPECT_EQ(std::memcmp(out.data() + 1, want.data(), want.size()), 0);
}

// A phase with an expect_tx completes only once the copies brought its bytes, whichever comes first (bytes landing
// before the expect_tx leave the count negative meanwhile); a box wholly outside the tensor still brings all its bytes;
// bytes beyond those expected are a fault.
TEST(PtxInterpHopper, ExpectTxPhaseWaitsForTheCopiedBytes) {
  Tensor t({64, 8}, {128}, 2, 25);
  std::vector<uint32_t> out(4, 99);
  Params params;
  params.map(encode(kF16, t, {64, 8}, false));
  params.buffer(out);
  params.buffer(t.storage);
  auto record = [](int slot, const std::string& bar) {
    return "  mbarrier.try_wait.parity.shared::cta.b64 %p3, [" + bar + "], 0;\n  selp.u32 %r3, 1, 0, %p3;\n" +
           "  add.s64 %rd4, %rd3, " + std::to_string(4 * slot) + ";\n  st.global.u32 [%rd4], %r3;\n";
  };
  const std::string setup = R"(
  .shared .align 1024 .b8 tile[1024];
  .shared .align 8 .b8 bars[16];
  mov.b64 %rd2, p0;
  cvta.param.u64 %rd2, %rd2;
  ld.param.u64 %rd3, [p1];
  mov.u32 %r1, tile;
  mov.u32 %r2, bars;
  add.u32 %r5, %r2, 8;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  mbarrier.init.shared::cta.b64 [%r5], 1;
)";
  const std::string copy = "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2, {";
  std::string body = setup + "  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 1024;\n" + record(0, "%r2") + copy +
                     "100, -50}], [%r2];\n" + record(1, "%r2") + copy + "0, 0}], [%r5];\n" + record(2, "%r5") +
                     "  mov.u32 %r6, 1024;\n  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], %r6;\n" +
                     record(3, "%r5") + "  ret;\n";
  ASSERT_EQ(run(params, body, 1), "");
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 0, 1}));
  const std::string e = run(params, setup + "  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 512;\n" + copy +
                                        "0, 0}], [%r2];\n  ret;\n", 1);
  EXPECT_HAS(e, "signals 512 bytes more than the mbarrier");
  EXPECT_HAS(e, "at: cp.async.bulk.tensor.2d");
}

TEST(PtxInterpHopper, TensorCopyFaults) {
  Tensor t({64, 8}, {128}, 2, 26);
  const std::array<uint8_t, 128> map = encode(kF16, t, {64, 8}, true);
  auto copy = [&](const std::array<uint8_t, 128>& m, bool register_tensor, const std::string& dst_offset,
                  const std::string& instruction = "2d", const std::string& coords = "0, 0",
                  const std::string& bar = "bar") {
    Params params;
    params.map(m);
    if (register_tensor) params.buffer(t.storage);
    const std::string body = R"(
  .shared .align 1024 .b8 tile[2048];
  .shared .align 8 .b8 bar[8];
  mov.b64 %rd2, p0;
  cvta.param.u64 %rd2, %rd2;
  mov.u32 %r1, tile;
  add.u32 %r1, %r1, )" + dst_offset + R"(;
  mov.u32 %r2, )" + bar + R"(;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  cp.async.bulk.tensor.)" + instruction + ".shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2, {" +
                             coords + "}], [%r2];\n  ret;\n";
    return run(params, body, 1);
  };
  EXPECT_EQ(copy(map, true, "0"), "");
  EXPECT_HAS(copy(map, true, "16"), "tensor copy destination 16 is not 128-byte aligned");
  EXPECT_HAS(copy(map, true, "1152"), "past 2056 bytes");
  EXPECT_HAS(copy(map, true, "0", "3d", "0, 0, 0"), "a 3d tensor copy with a rank-2 tensor map");
  EXPECT_HAS(copy(std::array<uint8_t, 128>{}, true, "0"), "no tensor map");
  std::string e = copy(map, false, "0");  // the tensor is no memory of the launch
  EXPECT_HAS(e, "out-of-bounds global access");
  EXPECT_HAS(e, "(tensor copy) at: cp.async.bulk.tensor.2d");
  EXPECT_EQ(copy(map, false, "0", "2d", "64, 0"), "");  // wholly outside the tensor: nothing is read
  // A barrier in the tile's second half: the 1024-byte box may land in the first, not over it.
  EXPECT_EQ(copy(map, true, "0", "2d", "0, 0", "tile;\n  add.u32 %r2, %r2, 1792"), "");
  EXPECT_HAS(copy(map, true, "1024", "2d", "0, 0", "tile;\n  add.u32 %r2, %r2, 1792"), "overwrites an mbarrier");
}

// cuTensorMapEncodeTiled's checks (the mock driver's encoder is this function).
TEST(PtxInterpHopper, TensorMapEncoderRefusesWhatTheDriverRefuses) {
  alignas(16) static uint8_t storage[64 * 1024];
  struct Args {
    int type = kBF16;
    uint32_t rank = 2;
    const void* address = storage;
    std::vector<uint64_t> dims = {64, 100}, strides = {256, 25600};
    std::vector<uint32_t> box = {64, 32}, element_strides = {1, 1};
    int interleave = 0, swizzle = int(mock::kSwizzle128B), l2 = 2, oob = 0;
  };
  auto encode_args = [](const Args& a, std::array<uint8_t, 128>& out) {
    return mock::encode_tiled(out.data(), a.type, a.rank, a.address, a.dims.data(), a.strides.data(), a.box.data(),
                              a.element_strides.data(), a.interleave, a.swizzle, a.l2, a.oob);
  };
  std::array<uint8_t, 128> bytes{};
  ASSERT_EQ(encode_args(Args{}, bytes), 0);
  mock::TensorMap m;
  ASSERT_TRUE(mock::decode_tensor_map(bytes.data(), m));
  EXPECT_EQ(m.rank, 2u);
  EXPECT_EQ(m.element_bytes, 2u);
  EXPECT_EQ(m.global_address, reinterpret_cast<uint64_t>(storage));
  EXPECT_EQ(m.dims[0], 64u);
  EXPECT_EQ(m.dims[1], 100u);
  EXPECT_EQ(m.strides[0], 256u);
  EXPECT_EQ(m.box[0], 64u);
  EXPECT_EQ(m.box[1], 32u);
  EXPECT_EQ(m.swizzle, mock::kSwizzle128B);
  const std::vector<std::pair<std::string, std::function<void(Args&)>>> bad = {
      {"rank 0", [](Args& a) { a.rank = 0; }},
      {"rank 6", [](Args& a) { a.rank = 6, a.dims.resize(6, 1), a.strides.resize(5, 25600), a.box.resize(6, 1),
                               a.element_strides.resize(6, 1); }},
      {"address 8 bytes past 16-byte alignment", [](Args& a) { a.address = storage + 8; }},
      {"stride of 200 bytes", [](Args& a) { a.strides[0] = 200, a.swizzle = 0; }},
      {"box dim 0", [](Args& a) { a.box[1] = 0; }},
      {"box dim 257", [](Args& a) { a.box[1] = 257; }},
      {"128B swizzle of 256-byte rows", [](Args& a) { a.box[0] = 128; }},
      {"element stride 2", [](Args& a) { a.element_strides[1] = 2; }},
      {"32B swizzle", [](Args& a) { a.swizzle = int(mock::kSwizzle32B); }},
      {"64B swizzle", [](Args& a) { a.swizzle = int(mock::kSwizzle64B); }},
      {"interleave", [](Args& a) { a.interleave = 1; }},
      {"NaN out-of-bounds fill", [](Args& a) { a.oob = 1; }},
      {"FLOAT32_FTZ", [](Args& a) { a.type = 10; }},
      {"box rows of 8 bytes", [](Args& a) { a.box[0] = 4; }},
      {"dim 0", [](Args& a) { a.dims[1] = 0; }},
  };
  for (const auto& [what, change] : bad) {
    Args a;
    change(a);
    std::array<uint8_t, 128> untouched;
    untouched.fill(0x5A);
    EXPECT_EQ(encode_args(a, untouched), mock::kTensorMapInvalidValue) << what;
    EXPECT_EQ(untouched[0], 0x5A) << what;
  }
  Args f32;  // 4-byte elements: 32 of them fill a swizzled row
  f32.type = kF32, f32.box = {32, 8};
  EXPECT_EQ(encode_args(f32, bytes), 0);
  f32.box = {64, 8};
  EXPECT_EQ(encode_args(f32, bytes), mock::kTensorMapInvalidValue);
}

TEST(PtxInterpHopper, RefusesTensorCopyFormsOutsideTheSubset) {
  const std::string good =
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4]";
  EXPECT_EQ(parse_error(good), "");
  EXPECT_EQ(parse_error("mov.b64 %rd1, %rd2;\n  cvta.param.u64 %rd1, %rd1"), "");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2}], [%r4]",
       "takes 2 coordinates"},
      {"cp.async.bulk.tensor.6d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2}], [%r4]",
       "only cp.async.bulk.tensor"},
      {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4]",
       "only cp.async.bulk.tensor"},
      {"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r2, %r3}], [%r1]", "only cp.async.bulk.tensor"},
      {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], [%r4]",
       "[map, {coordinates}] expected"},
      {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}]",
       "takes [dst], [map, {coordinates}], [bar]"},
  };
  for (const auto& [ins, why] : bad) {
    const std::string e = parse_error(ins);
    EXPECT_HAS(e, "line 7");
    EXPECT_HAS(e, why);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Warpgroup MMA

// The canonical layouts of a 16-bit wgmma operand in shared memory (8 elements = a 16-byte core row), by major-ness
// (K-major: K runs along each core row; MN-major: M or N does, imm-trans 1) and swizzle (none, or 128-byte).
enum class Layout { KMajor, MnMajor, KMajor128B, MnMajor128B };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::KMajor: return "K-major";
    case Layout::MnMajor: return "MN-major";
    case Layout::KMajor128B: return "K-major 128B-swizzled";
    case Layout::MnMajor128B: return "MN-major 128B-swizzled";
  }
  return "?";
}

// Where an operand of `rows` x 16 elements (A: 64 rows along M; B: N columns) lies in a 1024-aligned shared region,
// and its descriptor's fields. The strides leave gaps, and the gaps hold garbage, so a misread shows.
struct Placement {
  Layout layout;
  uint32_t start, lbo, sbo, bytes;  // start: from the region

  bool mn_major() const { return layout == Layout::MnMajor || layout == Layout::MnMajor128B; }
  bool swizzled() const { return layout == Layout::KMajor128B || layout == Layout::MnMajor128B; }

  // Byte offset of element (mn, k) from the region.
  uint32_t offset(uint32_t mn, uint32_t k) const {
    uint32_t x = 0;
    switch (layout) {
      case Layout::KMajor: x = start + (k / 8) * lbo + (mn / 8) * sbo + (mn % 8) * 16 + (k % 8) * 2; break;
      case Layout::MnMajor: x = start + (k / 8) * lbo + (mn / 8) * sbo + (k % 8) * 16 + (mn % 8) * 2; break;
      case Layout::KMajor128B: x = start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2; break;
      case Layout::MnMajor128B: x = start + (k / 8) * sbo + (mn / 64) * lbo + (k % 8) * 128 + (mn % 64) * 2; break;
    }
    if (!swizzled()) return x;
    // 16-byte chunk c of 128-byte row r moves to chunk c ^ (r % 8) (the region is 1024-aligned).
    const uint32_t row = x / 128, chunk = x % 128 / 16;
    return row * 128 + (chunk ^ (row % 8)) * 16 + x % 16;
  }

  // The descriptor for the operand in the region at shared address `region` (16-byte units, 14-bit fields).
  uint64_t descriptor(uint32_t region) const {
    return uint64_t((region + start) >> 4) | uint64_t(lbo >> 4) << 16 | uint64_t(sbo >> 4) << 32 |
           uint64_t(swizzled() ? 1 : 0) << 62;
  }
};

Placement place(Layout l, uint32_t rows) {
  switch (l) {
    case Layout::KMajor: {  // M / N blocks 128 bytes apart, the second K block after them all and a gap
      const uint32_t lbo = rows / 8 * 128 + 48;
      return {l, 0, lbo, 128, lbo + rows / 8 * 128};
    }
    case Layout::MnMajor: {  // M / N blocks 160 bytes apart (gaps of 32), the second K block after them
      const uint32_t lbo = rows / 8 * 160;
      return {l, 0, lbo, 160, 2 * lbo};
    }
    case Layout::KMajor128B:  // rows of 64 k; this 16-deep slice is k 16 .. 31 (32 bytes in); LBO unused
      return {l, 32, 16, 1024, rows / 8 * 1024};
    case Layout::MnMajor128B:  // rows of 64 mn; 64-wide atoms 3072 apart (a 1024-byte gap after each)
      return {l, 0, 3072, 1024, (rows + 63) / 64 * 3072};
  }
  return {};
}

// "{%f1, ..., %f<count>}"
std::string reg_list(const std::string& prefix, uint32_t first, uint32_t count) {
  std::string s = "{";
  for (uint32_t i = 0; i < count; ++i) s += (i ? ", " : "") + prefix + std::to_string(first + i);
  return s + "}";
}

// PTX: each thread stores its `count` f32 registers from %f<first> to out (the 64-bit register) + 4 (slot + tid
// count + i): the accumulators of every thread, in thread order.
std::string store_accumulators(const std::string& out, uint32_t first, uint32_t count, uint32_t slot) {
  std::string s = "  mov.u32 %r70, %tid.x;\n  mul.wide.u32 %rd70, %r70, " + std::to_string(4 * count) + ";\n" +
                  "  add.s64 %rd70, %rd70, " + out + ";\n  add.s64 %rd70, %rd70, " + std::to_string(4 * slot) + ";\n";
  for (uint32_t i = 0; i < count; ++i)
    s += "  st.global.f32 [%rd70], %f" + std::to_string(first + i) + ";\n  add.s64 %rd70, %rd70, 4;\n";
  return s;
}

// The (row, column) of D that accumulator register i of warpgroup thread t holds (PTX ISA, wgmma .m64nNk16 D layout).
std::pair<uint32_t, uint32_t> d_element(uint32_t t, uint32_t i) {
  return {16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (t % 4) + i % 2};
}

// A random 64 x 16 A and 16 x n B of bf16 or f16 values placed in a shared-memory image, garbage elsewhere.
struct Operands {
  uint32_t n;
  bool bf16;
  Placement pa, pb;
  uint32_t b_region;
  std::vector<double> a, b;  // a[m * 16 + k], b[k * n + col]
  std::vector<uint32_t> image;

  Operands(uint32_t n_, bool bf16_, Layout la, Layout lb, uint32_t seed)
      : n(n_), bf16(bf16_), pa(place(la, 64)), pb(place(lb, n_)), b_region((pa.bytes + 1023) / 1024 * 1024) {
    std::mt19937 rng(seed);
    image.resize((b_region + pb.bytes) / 4);
    for (auto& w : image) w = uint32_t(rng());
    std::uniform_real_distribution<float> d(-2, 2);
    auto put = [&](uint32_t at) {
      const uint16_t h = bf16 ? f32_to_bf16_bits(d(rng)) : f32_to_f16_bits(d(rng));
      std::memcpy(reinterpret_cast<uint8_t*>(image.data()) + at, &h, 2);
      return double(bf16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h));
    };
    a.resize(64 * 16);
    b.resize(16 * size_t(n));
    for (uint32_t m = 0; m < 64; ++m)
      for (uint32_t k = 0; k < 16; ++k) a[m * 16 + k] = put(pa.offset(m, k));
    for (uint32_t col = 0; col < n; ++col)
      for (uint32_t k = 0; k < 16; ++k) b[k * n + col] = put(b_region + pb.offset(col, k));
  }
  uint32_t image_bytes() const { return uint32_t(image.size() * 4); }

  // Checks out[slot + t * n / 2 + i] (thread t's accumulator i) against scale * A B, in double.
  void expect_product(const std::vector<float>& out, size_t slot, double scale) const {
    for (uint32_t t = 0; t < 128; ++t)
      for (uint32_t i = 0; i < n / 2; ++i) {
        auto [row, col] = d_element(t, i);
        double want = 0, magnitude = 0;
        for (uint32_t k = 0; k < 16; ++k) {
          want += a[row * 16 + k] * b[k * n + col];
          magnitude += std::abs(a[row * 16 + k] * b[k * n + col]);
        }
        const float got = out[slot + t * n / 2 + i];
        ASSERT_LE(std::abs(double(got) - scale * want), 1e-5 * scale * magnitude + 1e-30)
            << "D[" << row << "][" << col << "] = " << got << ", want " << scale * want;
      }
  }
};

// The kernel's common start: the block copies the image into a 1024-aligned tile, fences it for the async proxy,
// and builds the descriptors (%rd6: A, %rd7: B) from the templates (p2, p3) plus the tile's address.
std::string wgmma_setup(uint32_t image_bytes) {
  return "  .shared .align 1024 .b8 tile[" + std::to_string((image_bytes + 1023) / 1024 * 1024) + R"(];
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  ld.param.u64 %rd3, [p2];
  ld.param.u64 %rd4, [p3];
  mov.u32 %r2, tile;
)" + copy_words("%r2", "%rd1", image_bytes, 128, true, "IN") + R"(
  fence.proxy.async.shared::cta;
  bar.sync 0;
  shr.u32 %r3, %r2, 4;
  cvt.u64.u32 %rd5, %r3;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, %r1;
  setp.ne.u32 %p2, %r1, %r1;
)";
}

std::string mma(const Operands& o, uint32_t first, const std::string& scale_d) {
  const std::string t = o.bf16 ? "bf16" : "f16";
  return "  wgmma.mma_async.sync.aligned.m64n" + std::to_string(o.n) + "k16.f32." + t + "." + t + " " +
         reg_list("%f", first, o.n / 2) + ", %rd6, %rd7, " + scale_d + ", 1, 1, " + (o.pa.mn_major() ? "1" : "0") +
         ", " + (o.pb.mn_major() ? "1" : "0") + ";\n";
}

std::string fill_accumulators(uint32_t first, uint32_t count, const std::string& value) {
  std::string s;
  for (uint32_t i = 0; i < count; ++i) s += "  mov.f32 %f" + std::to_string(first + i) + ", " + value + ";\n";
  return s;
}

void bind(Params& params, Operands& o, std::vector<float>& out) {
  params.buffer(o.image);
  params.buffer(out);
  params.scalar(o.pa.descriptor(0));
  params.scalar(o.pb.descriptor(o.b_region));
}

// With scale-d false the accumulators' old values (1000) are ignored: D = A B; then with scale-d true D = A B + D.
void expect_wgmma(uint32_t n, bool bf16, Layout la, Layout lb, uint32_t seed) {
  SCOPED_TRACE(std::string("m64n") + std::to_string(n) + "k16 " + (bf16 ? "bf16" : "f16") + ", A " + layout_name(la) +
               ", B " + layout_name(lb));
  Operands o(n, bf16, la, lb, seed);
  std::vector<float> out(2 * 64 * size_t(n), -1.0f);
  Params params;
  bind(params, o, out);
  std::string body = wgmma_setup(o.image_bytes()) + fill_accumulators(1, n / 2, "0f447A0000");
  body += "  wgmma.fence.sync.aligned;\n" + mma(o, 1, "%p2") +
          "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n" +
          store_accumulators("%rd2", 1, n / 2, 0);
  body += "  wgmma.fence.sync.aligned;\n" + mma(o, 1, "%p1") +
          "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n" +
          store_accumulators("%rd2", 1, n / 2, 64 * n) + "  ret;\n";
  ASSERT_EQ(run(params, body, 128), "");
  o.expect_product(out, 0, 1.0);
  o.expect_product(out, 64 * size_t(n), 2.0);
}

const Layout kLayouts[] = {Layout::KMajor, Layout::MnMajor, Layout::KMajor128B, Layout::MnMajor128B};

// Every pairing of A's and B's layouts, m64n64k16 bf16.
TEST(PtxInterpHopper, WgmmaReadsEveryOperandLayout) {
  uint32_t seed = 100;
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) expect_wgmma(64, true, la, lb, seed++);
}

// The narrowest and the widest shape, bf16 and f16, each layout for both operands.
TEST(PtxInterpHopper, WgmmaShapesAndTypes) {
  uint32_t seed = 200;
  for (uint32_t n : {8u, 64u, 256u})
    for (bool bf16 : {true, false}) {
      if (n == 64 && bf16) continue;  // WgmmaReadsEveryOperandLayout
      for (Layout l : kLayouts) expect_wgmma(n, bf16, l, l, seed++);
    }
}

// A multiply runs when a wait_group covers its batch: until then the accumulators keep their values (7). wait_group 0
// leaves an uncommitted multiply alone; wait_group 1 completes all but the newest batch.
TEST(PtxInterpHopper, WgmmaCompletesAtWaitGroup) {
  Operands o(8, true, Layout::KMajor, Layout::MnMajor, 300);
  std::vector<float> out(5 * 4 * 128, -1.0f);
  Params params;
  bind(params, o, out);
  const uint32_t slot = 4 * 128;  // one store of 4 accumulators per thread
  std::string body = wgmma_setup(o.image_bytes()) + fill_accumulators(1, 8, "0f40E00000");
  body += "  wgmma.fence.sync.aligned;\n" + mma(o, 1, "%p2") + "  wgmma.wait_group.sync.aligned 0;\n" +
          store_accumulators("%rd2", 1, 4, 0);
  body += "  wgmma.commit_group.sync.aligned;\n" + mma(o, 5, "%p2") + "  wgmma.commit_group.sync.aligned;\n" +
          store_accumulators("%rd2", 1, 4, slot);
  body += "  wgmma.wait_group.sync.aligned 1;\n" + store_accumulators("%rd2", 1, 4, 2 * slot) +
          store_accumulators("%rd2", 5, 4, 3 * slot);
  body += "  wgmma.wait_group.sync.aligned 0;\n" + store_accumulators("%rd2", 5, 4, 4 * slot) + "  ret;\n";
  ASSERT_EQ(run(params, body, 128), "");
  for (size_t i = 0; i < 2 * slot; ++i) ASSERT_EQ(out[i], 7.0f) << i;
  o.expect_product(out, 2 * slot, 1.0);
  for (size_t i = 3 * slot; i < 4 * slot; ++i) ASSERT_EQ(out[i], 7.0f) << i;
  o.expect_product(out, 4 * slot, 1.0);
}

TEST(PtxInterpHopper, WgmmaFaults) {
  Operands o(8, false, Layout::KMajor128B, Layout::KMajor128B, 301);
  std::vector<float> out(4 * 128);
  auto fault = [&](const std::string& before, const std::string& after = "  wgmma.commit_group.sync.aligned;\n"
                                                                           "  wgmma.wait_group.sync.aligned 0;\n",
                   unsigned threads = 128) {
    Params params;
    bind(params, o, out);
    return run(params, wgmma_setup(o.image_bytes()) + before + mma(o, 1, "%p1") + after + "  ret;\n", threads);
  };
  EXPECT_EQ(fault(""), "");
  std::string e = fault("", "");
  EXPECT_HAS(e, "exits with wgmma multiplies its warpgroup never waited for");
  EXPECT_HAS(fault("", "  wgmma.commit_group.sync.aligned;\n"), "never waited for");
  e = fault("  or.b64 %rd6, %rd6, 0x8000000000000000;\n");  // swizzle mode 2 (64-byte)
  EXPECT_HAS(e, "only no swizzle (0) or the 128-byte one (1)");
  EXPECT_HAS(e, "at: wgmma.mma_async");
  EXPECT_HAS(fault("  or.b64 %rd7, %rd7, 0x2000000000000;\n"), "sets bits outside start, LBO, SBO and swizzle");
  EXPECT_HAS(fault("  cvt.u64.u32 %rd8, %r1;\n  add.s64 %rd6, %rd6, %rd8;\n"), "different descriptors or scale-d");
  EXPECT_HAS(fault("  and.b32 %r9, %r1, 1;\n  setp.eq.u32 %p1, %r9, 0;\n"), "different descriptors or scale-d");
  EXPECT_HAS(fault("  add.s64 %rd6, %rd6, 0x3000;\n"), "wgmma operand element at shared address");
  EXPECT_HAS(fault("  setp.eq.u32 %p3, %r1, 5;\n  @%p3 bra SKIP;\n", "SKIP:\n  wgmma.commit_group.sync.aligned;\n"
                                                                   "  wgmma.wait_group.sync.aligned 0;\n"),
             "do not all reach the same wgmma");
  EXPECT_HAS(fault("", "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n", 96),
             "wgmma needs the 128 threads of a warpgroup, but the warpgroup is partial");
}

TEST(PtxInterpHopper, RefusesWgmmaFormsOutsideTheSubset) {
  const std::string acc4 = reg_list("%f", 1, 4), ops = ", %rd1, %rd2, %p1, 1, 1, 0, 1";
  const std::string good = "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + acc4 + ops;
  EXPECT_EQ(parse_error(good), "");
  EXPECT_EQ(parse_error("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " + reg_list("%f", 1, 128) +
                        ", %rd1, %rd2, 1, 1, 1, 1, 0"),
            "");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"@%p2 " + good, "guarded wgmma"},
      {"@%p2 wgmma.commit_group.sync.aligned", "guarded wgmma"},
      {"wgmma.mma_async.sync.aligned.m64n12k16.f32.bf16.bf16 " + reg_list("%f", 1, 6) + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n264k16.f32.bf16.bf16 " + reg_list("%f", 1, 132) + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 " + acc4 + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r1, %r2}" + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.f16 " + acc4 + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 " + acc4 + ops, "only wgmma.mma_async"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + reg_list("%f", 1, 3) + ops, "4 registers"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + acc4 + ", {%r1, %r2, %r3, %r4}, %rd2, %p1, 1, 1, 0, 1",
       "A in registers is not in the subset"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + acc4 + ", %rd1, %rd2, %p1, -1, 1, 0, 1",
       "only scale-a and scale-b 1"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + acc4 + ", %rd1, %rd2, %p1, 1, 1, 2, 0",
       "trans-a and trans-b are 0 or 1"},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 " + acc4 + ", %rd1, %rd2, %p1, 1, 1, 0",
       "takes {d}, desc-a, desc-b"},
      {"wgmma.wait_group.sync.aligned %r1", "needs a count"},
      {"wgmma.fence.sync.aligned %r1", "takes no operands"},
  };
  for (const auto& [ins, why] : bad) {
    const std::string e = parse_error(ins);
    EXPECT_HAS(e, "line 7");
    EXPECT_HAS(e, why);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Producer / consumer: TMA, mbarriers and wgmma together

// C = A B for A 128 x 256 and B 256 x 256 (row-major bf16), C f32, as Hopper matmuls pipeline it: 3 warpgroups; thread 0
// of warpgroup 0 produces, loading 64-deep K slices of A (a 64 x 128 box, K-major) and B (four 64 x 64 boxes along
// N, MN-major) with 128-byte swizzle into 2 shared-memory stages. A stage's "full" barrier (1 arrival + the bytes)
// says it landed; its "empty" barrier (1 arrival per consumer) says both consumers are done with it. Warpgroups 1
// and 2 each multiply 64 rows of A by B (m64n256k16, 4 per slice, one batch in flight) and release a stage once the
// batch reading it completed. Every stage is refilled once, so a release that came too early would corrupt a product.
TEST(PtxInterpHopper, ProducerConsumerMatmulThroughTmaAndWgmma) {
  constexpr uint32_t M = 128, N = 256, K = 256, kStage = 64 * M * 2 + 64 * N * 2;  // 49152 bytes
  std::mt19937 rng(400);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<uint16_t> a(M * K), b(K * N);
  for (auto& v : a) v = f32_to_bf16_bits(d(rng));
  for (auto& v : b) v = f32_to_bf16_bits(d(rng));
  std::vector<float> c(M * N, std::nanf(""));
  const std::vector<uint32_t> ones = {1, 1};
  auto map = [&](const std::vector<uint16_t>& m, uint64_t inner, uint64_t outer, uint32_t box_inner, uint32_t box_outer) {
    std::array<uint8_t, 128> bytes{};
    const uint64_t dims[2] = {inner, outer}, stride = inner * 2;
    const uint32_t box[2] = {box_inner, box_outer};
    EXPECT_EQ(mock::encode_tiled(bytes.data(), kBF16, 2, m.data(), dims, &stride, box, ones.data(), 0,
                                 int(mock::kSwizzle128B), 0, 0),
              0);
    return bytes;
  };
  Params params;
  params.map(map(a, K, M, 64, M));
  params.map(map(b, N, K, 64, 64));
  params.buffer(c);
  params.buffer(a);
  params.buffer(b);

  // Descriptor fields: A K-major swizzled (SBO 1024); B MN-major swizzled (LBO 8192 between the 64-wide boxes, SBO 1024).
  auto fields = [](uint64_t lbo, uint64_t sbo) {
    return std::to_string(lbo >> 4 << 16 | sbo >> 4 << 32 | uint64_t(1) << 62);
  };
  std::string body = R"(
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  add.u32 %r3, %r2, )" + std::to_string(2 * kStage) + R"(;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra INITIALIZED;
  mbarrier.init.shared::cta.b64 [%r3], 1;
  add.u32 %r4, %r3, 8;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  add.u32 %r4, %r3, 16;
  mbarrier.init.shared::cta.b64 [%r4], 2;
  add.u32 %r4, %r3, 24;
  mbarrier.init.shared::cta.b64 [%r4], 2;
  fence.mbarrier_init.release.cluster;
INITIALIZED:
  bar.sync 0;
  shr.u32 %r5, %r1, 7;
  and.b32 %r6, %r1, 127;
  setp.ne.u32 %p2, %r5, 0;
  @%p2 bra CONSUMER;
  setmaxnreg.dec.sync.aligned.u32 40;
  setp.ne.u32 %p3, %r6, 0;
  @%p3 bra EXIT;
  mov.b64 %rd1, p0;
  cvta.param.u64 %rd1, %rd1;
  mov.b64 %rd2, p1;
  cvta.param.u64 %rd2, %rd2;
  mov.u32 %r10, 0;
PRODUCE:
  and.b32 %r11, %r10, 1;
  setp.lt.u32 %p4, %r10, 2;
  @%p4 bra STAGE_FREE;
  shr.u32 %r12, %r10, 1;
  add.u32 %r12, %r12, 1;
  and.b32 %r12, %r12, 1;
  mad.lo.u32 %r13, %r11, 8, %r3;
  add.u32 %r13, %r13, 16;
)" + await("%r13", "%r12", "WAIT_EMPTY") + R"(
STAGE_FREE:
  mad.lo.u32 %r14, %r11, 8, %r3;
  mad.lo.u32 %r15, %r11, )" + std::to_string(kStage) + R"(, %r2;
  add.u32 %r16, %r15, )" + std::to_string(64 * M * 2) + R"(;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r14], )" + std::to_string(kStage) + R"(;
  shl.b32 %r17, %r10, 6;
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r15], [%rd1, {%r17, 0}], [%r14];
)";
  for (uint32_t j = 0; j < N / 64; ++j)
    body += "  add.u32 %r18, %r16, " + std::to_string(8192 * j) +
            ";\n  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r18], [%rd2, {" +
            std::to_string(64 * j) + ", %r17}], [%r14];\n";
  body += R"(
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p5, %r10, )" + std::to_string(K / 64) + R"(;
  @%p5 bra PRODUCE;
EXIT:
  ret;
CONSUMER:
  setmaxnreg.inc.sync.aligned.u32 232;
)" + fill_accumulators(1, 128, "0f00000000") + R"(
  setp.eq.u32 %p6, %r1, %r1;
  sub.u32 %r7, %r5, 1;
  mov.u32 %r30, 0;
CONSUME:
  and.b32 %r31, %r30, 1;
  shr.u32 %r32, %r30, 1;
  and.b32 %r32, %r32, 1;
  mad.lo.u32 %r33, %r31, 8, %r3;
)" + await("%r33", "%r32", "WAIT_FULL") + R"(
  mad.lo.u32 %r34, %r31, )" + std::to_string(kStage) + R"(, %r2;
  add.u32 %r35, %r34, )" + std::to_string(64 * M * 2) + R"(;
  mad.lo.u32 %r34, %r7, 8192, %r34;
  wgmma.fence.sync.aligned;
)";
  for (uint32_t ks = 0; ks < 4; ++ks)
    body += "  add.u32 %r40, %r34, " + std::to_string(32 * ks) +
            ";\n  shr.u32 %r40, %r40, 4;\n  and.b32 %r40, %r40, 16383;\n  cvt.u64.u32 %rd40, %r40;\n  or.b64 %rd40, %rd40, " +
            fields(16, 1024) + ";\n  add.u32 %r41, %r35, " + std::to_string(2048 * ks) +
            ";\n  shr.u32 %r41, %r41, 4;\n  and.b32 %r41, %r41, 16383;\n  cvt.u64.u32 %rd41, %r41;\n  or.b64 %rd41, %rd41, " +
            fields(8192, 1024) + ";\n  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " + reg_list("%f", 1, 128) +
            ", %rd40, %rd41, %p6, 1, 1, 0, 1;\n";
  body += R"(
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 1;
  setp.eq.u32 %p7, %r30, 0;
  setp.ne.or.u32 %p7, %r6, 0, %p7;
  @%p7 bra KEPT;
  sub.u32 %r36, %r30, 1;
  and.b32 %r36, %r36, 1;
  mad.lo.u32 %r37, %r36, 8, %r3;
  add.u32 %r37, %r37, 16;
  mbarrier.arrive.shared::cta.b64 _, [%r37];
KEPT:
  add.u32 %r30, %r30, 1;
  setp.lt.u32 %p8, %r30, )" + std::to_string(K / 64) + R"(;
  @%p8 bra CONSUME;
  wgmma.wait_group.sync.aligned 0;
  ld.param.u64 %rd3, [p2];
  shr.u32 %r50, %r6, 5;
  and.b32 %r51, %r6, 31;
  shr.u32 %r51, %r51, 2;
  mad.lo.u32 %r52, %r7, 64, %r51;
  mad.lo.u32 %r52, %r50, 16, %r52;
  and.b32 %r53, %r6, 3;
  shl.b32 %r53, %r53, 1;
  mad.lo.u32 %r54, %r52, )" + std::to_string(N) + R"(, %r53;
  mul.wide.u32 %rd50, %r54, 4;
  add.s64 %rd50, %rd50, %rd3;
)";
  // Accumulator i is C[row0 + 8 ((i / 2) % 2)][col0 + 8 (i / 4) + i % 2].
  for (uint32_t i = 0; i < 128; ++i)
    body += "  add.s64 %rd51, %rd50, " + std::to_string(4 * (8 * ((i / 2) % 2) * N + 8 * (i / 4) + i % 2)) +
            ";\n  st.global.f32 [%rd51], %f" + std::to_string(i + 1) + ";\n";
  body += "  ret;\n";
  ASSERT_EQ(run(params, body, 384, 2 * kStage + 32, ".extern .shared .align 1024 .b8 smem[];\n"), "");
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      double want = 0, magnitude = 0;
      for (uint32_t k = 0; k < K; ++k) {
        const double p = double(bf16_bits_to_f32(a[m * K + k])) * double(bf16_bits_to_f32(b[k * N + n]));
        want += p;
        magnitude += std::abs(p);
      }
      ASSERT_LE(std::abs(double(c[m * N + n]) - want), 1e-5 * magnitude) << "C[" << m << "][" << n << "] = "
                                                                          << c[m * N + n] << ", want " << want;
    }
}

}  // namespace ptx_interp_hopper_test
}  // namespace spire::ptx::testing
