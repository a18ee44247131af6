// Kernels compiled by backends/ptx and run by the PTX interpreter on host memory, against C++ references:
// the backend's translation checked end to end (addressing, control flow, builtins, barriers, every op and
// conversion) without a GPU. The interpreter follows the PTX ISA; the GPU tests in tests/runtime/cuda check the
// hardware agrees.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "base/half_bits.h"
#include "backends/ptx/ptx_backend.h"
#include "ir/kernel/builder.h"
#include "tests/backends/ptx/interp/ptx_interp.h"

namespace spire::ptx::testing {
namespace {

using namespace kir;

// Host memory the kernel may touch: registered ranges, everything else faults.
struct Memory {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  void add(const void* p, size_t bytes) { ranges.emplace_back(reinterpret_cast<uint64_t>(p), bytes); }
  interp::GlobalCheck checker() const {
    return [this](uint64_t a, uint32_t n) {
      for (auto [b, len] : ranges)
        if (a >= b && a + n <= b + len) return;
      throw std::runtime_error("out-of-bounds global access at " + std::to_string(a));
    };
  }
};

// Runs `entry` of `m` with `buffers` (host arrays, the only memory it may touch) and `scalars` (raw values, each
// padded to 8 bytes) as its parameters, in that order.
void launch(const interp::Module& m, const interp::Entry& entry, std::array<unsigned, 3> grid,
            std::array<unsigned, 3> block, const std::vector<std::pair<void*, size_t>>& buffers,
            std::vector<uint64_t> scalars = {}) {
  Memory mem;
  std::vector<uint64_t> ptrs;
  for (auto [p, n] : buffers) {
    mem.add(p, n);
    ptrs.push_back(reinterpret_cast<uint64_t>(p));
  }
  std::vector<void*> params;
  for (auto& p : ptrs) params.push_back(&p);
  for (auto& s : scalars) params.push_back(&s);
  m.launch(entry, grid, block, params.data(), mem.checker());
}

// Compiles `k`, binds `buffers` (host arrays) and `scalars` (raw values, each padded to 8 bytes) and runs
// `groups` workgroups (folded like the runtime folds, with a small x limit to exercise the folding).
void run(const Kernel& k, std::vector<std::pair<void*, size_t>> buffers, std::vector<uint64_t> scalars,
         uint64_t groups, std::array<uint32_t, 3> max_grid = {65535, 65535, 65535}) {
  std::string ptx = compile(k, Target{90});
  auto m = interp::Module::parse(ptx);
  const interp::Entry* e = m->find(entry_name(k));
  ASSERT_NE(e, nullptr) << ptx;
  // fold as rt::fold_grid does (x fastest), without linking the runtime
  std::array<unsigned, 3> grid{1, 1, 1};
  if (groups <= max_grid[0]) {
    grid[0] = unsigned(groups);
  } else {
    uint64_t y = (groups + max_grid[0] - 1) / max_grid[0];
    grid = {unsigned((groups + y - 1) / y), unsigned(y), 1};
  }
  launch(*m, *e, grid, {k.workgroup_size[0], k.workgroup_size[1], k.workgroup_size[2]}, buffers, scalars);
}

template <class T>
std::pair<void*, size_t> buf(std::vector<T>& v) { return {v.data(), v.size() * sizeof(T)}; }

// Indices with constant terms (x + c, chains, an i32 x - c that reads before x): the backend's immediate offsets
// ([%rd+12], [%rd+-4]) address the same elements, and an offset past the buffer faults as any other access.
TEST(PtxInterp, ConstantOffsetsAddressTheSameElements) {
  KernelBuilder kb("offsets", 64);
  auto in = kb.buffer("in", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  Val x = kb.global_id();
  Val s = cast(x, Type::I32) + 2;
  out[x + 1u] = in[x + 3u].load() * 1000.0f + in[(x + 1u) + 4u].load() * 10.0f + in[s - 1].load();
  const Kernel k = kb.finish();
  std::vector<float> a(64 + 5), o(64 + 1, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 10);
  run(k, {buf(a), buf(o)}, {}, 1);
  EXPECT_EQ(o[0], -1.0f);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(o[i + 1], a[i + 3] * 1000 + a[i + 5] * 10 + a[i + 1]) << i;
  std::vector<float> short_in(64 + 4);  // in[x + 5] reads one element past it
  EXPECT_THROW(run(k, {buf(short_in), buf(o)}, {}, 1), std::exception);
}

TEST(PtxInterp, VectorAddWithFoldedGrid) {
  KernelBuilder kb("vadd", 64);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto b = kb.buffer("b", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { c[i] = a[i] + b[i]; });
  Kernel k = kb.finish();
  const uint32_t count = 10000;
  std::vector<float> ha(count), hb(count), hc(count + 64, -1.0f);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-10, 10);
  for (uint32_t j = 0; j < count; ++j) ha[j] = d(rng), hb[j] = d(rng);
  run(k, {buf(ha), buf(hb), buf(hc)}, {count}, (count + 63) / 64, {7, 65535, 65535});  // x limit 7: 2D grid
  for (uint32_t j = 0; j < count; ++j) ASSERT_EQ(hc[j], ha[j] + hb[j]) << j;
  for (uint32_t j = count; j < hc.size(); ++j) ASSERT_EQ(hc[j], -1.0f) << j;
}

TEST(PtxInterp, OutOfBoundsAccessFaults) {
  KernelBuilder kb("oob", 32);
  auto o = kb.buffer("o", Type::U32, Access::Write);
  o[kb.global_id() + 100u] = kb.u32(1);
  Kernel k = kb.finish();
  std::vector<uint32_t> h(32);
  EXPECT_THROW(run(k, {buf(h)}, {}, 1), interp::Error);
}

TEST(PtxInterp, ControlFlowLoopsAndVariables) {
  KernelBuilder kb("flow", 32);
  auto x = kb.buffer("x", Type::I32, Access::Read);
  auto y = kb.buffer("y", Type::I32, Access::Write);
  auto i = kb.global_id();
  auto acc = kb.var("acc", kb.i32(0));
  Val v = x[i];
  kb.if_else(v > 0, [&] {
    kb.for_(kb.i32(-3), v, kb.i32(2), [&](Val j) {
      kb.if_else((j % 3) == 0, [&] { acc += j * j; }, [&] { acc = acc - j; });
    });
  }, [&] { kb.if_(v < -10, [&] { acc = kb.i32(-10); }); });
  y[i] = acc.get();
  Kernel k = kb.finish();
  std::vector<int32_t> hx(64), hy(64);
  for (int j = 0; j < 64; ++j) hx[j] = j % 2 ? j : -j;
  run(k, {buf(hx), buf(hy)}, {}, 2);
  for (int j = 0; j < 64; ++j) {
    int acc_ref = 0, v = hx[j];
    if (v > 0) {
      for (int q = -3; q < v; q += 2) {
        if (q % 3 == 0) acc_ref += q * q;
        else acc_ref -= q;
      }
    } else if (v < -10) {
      acc_ref = -10;
    }
    ASSERT_EQ(hy[j], acc_ref) << "x = " << v;
  }
}

TEST(PtxInterp, UnsignedLoopsAndWideLoops) {
  for (Type t : {Type::U32, Type::I64}) {
    KernelBuilder kb("loops", 32);
    auto o = kb.buffer("o", t, Access::Write);
    auto acc = kb.var("acc", kb.constant(t, 0));
    kb.for_(kb.constant(t, 1), kb.constant(t, 40), kb.constant(t, 3), [&](Val j) {
      kb.for_(j, kb.constant(t, 45), [&](Val q) { acc += q - j + kb.constant(t, 1); });
    });
    o[kb.global_id()] = acc.get();
    Kernel k = kb.finish();
    int64_t ref = 0;
    for (int64_t j = 1; j < 40; j += 3)
      for (int64_t q = j; q < 45; ++q) ref += q - j + 1;
    if (t == Type::U32) {
      std::vector<uint32_t> h(32);
      run(k, {buf(h)}, {}, 1);
      EXPECT_EQ(h[5], uint32_t(ref));
    } else {
      std::vector<int64_t> h(32);
      run(k, {buf(h)}, {}, 1);
      EXPECT_EQ(h[5], ref);
    }
  }
}

TEST(PtxInterp, SharedMemoryReductionWithBarriers) {
  constexpr uint32_t wg = 128;
  KernelBuilder kb("reduce", wg);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto tile = kb.shared("tile", Type::F32, wg);
  auto lid = kb.local_id();
  tile[lid] = x[kb.global_id()];
  kb.barrier();
  for (uint32_t s = wg / 2; s > 0; s /= 2) {
    kb.if_(lid < s, [&] { tile[lid] = tile[lid] + tile[lid + s]; });
    kb.barrier();
  }
  kb.if_(lid == 0u, [&] { out[kb.group_id()] = tile[0u]; });
  Kernel k = kb.finish();
  std::vector<float> hx(wg * 5), ho(5, -1);
  for (size_t j = 0; j < hx.size(); ++j) hx[j] = float(j % 17);
  run(k, {buf(hx), buf(ho)}, {}, 5);
  for (uint32_t g = 0; g < 5; ++g) {
    float ref = 0;
    for (uint32_t j = 0; j < wg; ++j) ref += hx[g * wg + j];
    EXPECT_EQ(ho[g], ref) << g;  // small integers: exact in any order
  }
}

// Vector loads of workgroup memory and of buffers (kir::LoadSharedVector, LoadBufferVector as ld.shared / ld.global
// .v2 / .v4): every lane lands in its own value, in order, and a load from an index that is not a multiple of the
// width faults as the hardware does.
Kernel vector_load_kernel(uint32_t lanes, uint32_t offset, bool from_buffer) {
  constexpr uint32_t wg = 32;
  KernelBuilder kb(fmt::format("vector_load{}", lanes), wg);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto tile = kb.shared("tile", Type::F32, wg * 4 + 4);
  auto lid = kb.local_id();
  for (uint32_t i = 0; i < 4; ++i) tile[lid * 4u + i] = x[lid * 4u + i];
  kb.barrier();
  // Invocation l reads the lanes from element lanes * l (+ offset) and writes them reversed.
  Val at = lid * lanes + offset;
  std::vector<Val> v = from_buffer ? x.load_vector(at, lanes) : tile.load_vector(at, lanes);
  for (uint32_t i = 0; i < lanes; ++i) out[lid * lanes + (lanes - 1 - i)] = v[i];
  return kb.finish();
}

TEST(PtxInterp, VectorLoadsFillEveryLaneInOrder) {
  for (bool from_buffer : {false, true})
    for (uint32_t lanes : {2u, 4u}) {
      std::vector<float> hx(132), ho(32 * lanes, -1);
      for (size_t j = 0; j < hx.size(); ++j) hx[j] = float(j) + 0.5f;
      const Kernel k = vector_load_kernel(lanes, 0, from_buffer);
      // (On sm_90 a buffer not read before the kernel's wait loads coherently: ptx_translator.cpp's non_coherent.)
      const std::string want = fmt::format("{}.v{}.f32", from_buffer ? "ld.global" : "ld.shared", lanes);
      EXPECT_TRUE(compile(k, Target{90}).find(want) != std::string::npos) << want;
      run(k, {buf(hx), buf(ho)}, {}, 1);
      for (uint32_t l = 0; l < 32; ++l)
        for (uint32_t i = 0; i < lanes; ++i)
          EXPECT_EQ(ho[l * lanes + lanes - 1 - i], hx[l * lanes + i]) << want << " " << l;
    }
}

TEST(PtxInterp, MisalignedVectorLoadFaults) {
  for (bool from_buffer : {false, true}) {
    alignas(16) float hx[132] = {};
    std::vector<float> ho(128);
    try {
      run(vector_load_kernel(4, 2, from_buffer), {{hx, sizeof hx}, buf(ho)}, {}, 1);
      ADD_FAILURE() << "a 16-byte load from an 8-byte aligned address ran (" << (from_buffer ? "buffer" : "shared") << ")";
    } catch (const interp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("not aligned"), std::string::npos) << e.what();
    }
  }
}

// Packed bf16 fragment shares (kir::MatrixLoadPacked / MatrixStorePacked as ld.global.v4.b32 / st.global.v4.b32):
// each lane's 16 bytes go through the fragment's 4 registers unchanged, and a store to an address that is not a
// multiple of 16 bytes faults as the hardware does.
Kernel packed_round_trip_kernel(uint32_t store_offset) {
  KernelBuilder kb("packed_round_trip", 32);
  auto in = kb.buffer("in", Type::BF16, Access::Read);
  auto out = kb.buffer("out", Type::BF16, Access::Write);
  auto f = kb.fragment("f", MatrixUse::A, Type::BF16);
  kb.matrix_load_packed(f, in, kb.local_id() * 8u);
  kb.matrix_store_packed(out, kb.local_id() * 8u + store_offset, f);
  return kb.finish();
}

TEST(PtxInterp, PackedSharesPassThroughTheFragmentRegistersUnchanged) {
  std::vector<uint16_t> hx(256), ho(256, 0xFFFF);
  for (size_t j = 0; j < hx.size(); ++j) hx[j] = uint16_t(0x3F80 + j);
  const Kernel k = packed_round_trip_kernel(0);
  const std::string text = compile(k, Target{90});
  EXPECT_NE(text.find("st.global.v4.b32"), std::string::npos) << text;
  run(k, {buf(hx), buf(ho)}, {}, 1);
  EXPECT_EQ(ho, hx);
}

TEST(PtxInterp, MisalignedVectorStoreFaults) {
  std::vector<uint16_t> hx(256), ho(264);
  try {
    run(packed_round_trip_kernel(4), {buf(hx), buf(ho)}, {}, 1);
    ADD_FAILURE() << "a 16-byte store to an 8-byte aligned address ran";
  } catch (const interp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vector store to an address not aligned"), std::string::npos) << e.what();
  }
}

TEST(PtxInterp, BuiltinsOf3dWorkgroupAndFoldedGrid) {
  KernelBuilder kb("ids", {4, 2, 2});
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto g = kb.global_id();
  out[g * 5u + 0u] = kb.local_id();
  out[g * 5u + 1u] = kb.group_id();
  out[g * 5u + 2u] = kb.num_groups();
  out[g * 5u + 3u] = kb.builtin(Builtin::LocalIdZ);
  out[g * 5u + 4u] = kb.global_size();
  Kernel k = kb.finish();
  const uint32_t groups = 11;
  std::vector<uint32_t> h(12 * 16 * 5, 0xFFFFFFFFu);  // fold(11, x<=3) = 3 x 4 = 12 groups
  run(k, {buf(h)}, {}, groups, {3, 65535, 65535});
  for (uint32_t gid = 0; gid < 12 * 16; ++gid) {
    ASSERT_EQ(h[gid * 5 + 0], gid % 16) << gid;
    ASSERT_EQ(h[gid * 5 + 1], gid / 16) << gid;
    ASSERT_EQ(h[gid * 5 + 2], 12u) << gid;
    ASSERT_EQ(h[gid * 5 + 3], (gid % 16) / 8) << gid;
    ASSERT_EQ(h[gid * 5 + 4], 12u * 16) << gid;
  }
}

// shuffle_xor reads the partner lane's value within the warp (32 lanes: warps of a 2D workgroup are 32 consecutive
// linear ids), and the subgroup builtins name the warp and the lane.
TEST(PtxInterp, ShuffleXorAndSubgroupBuiltins) {
  KernelBuilder kb("shuffles", {16, 4, 1});
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto ids = kb.buffer("ids", Type::U32, Access::Write);
  auto g = kb.global_id();
  Val v = x[g];
  uint32_t k = 0;
  for (uint32_t mask : {1u, 6u, 16u, 31u}) out[g * 4u + k++] = kb.shuffle_xor(v, mask);
  ids[g * 3u + 0u] = kb.subgroup_size();
  ids[g * 3u + 1u] = kb.subgroup_id();
  ids[g * 3u + 2u] = kb.subgroup_local_id();
  Kernel k2 = kb.finish();
  EXPECT_TRUE(k2.features.has(Feature::SubgroupShuffle));
  const uint32_t groups = 3, n = groups * 64;
  std::vector<float> hx(n);
  for (uint32_t i = 0; i < n; ++i) hx[i] = float(i) * 0.5f - 7.0f;
  std::vector<float> ho(n * 4, -1.0f);
  std::vector<uint32_t> hi(n * 3, 0xFFFFFFFFu);
  run(k2, {buf(hx), buf(ho), buf(hi)}, {}, groups);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t lane = i % 32, warp_base = i - lane;
    uint32_t j = 0;
    for (uint32_t mask : {1u, 6u, 16u, 31u}) ASSERT_EQ(ho[i * 4 + j++], hx[warp_base + (lane ^ mask)]) << i << " mask " << mask;
    ASSERT_EQ(hi[i * 3 + 0], 32u);
    ASSERT_EQ(hi[i * 3 + 1], (i % 64) / 32) << i;
    ASSERT_EQ(hi[i * 3 + 2], lane) << i;
  }
}

// fma rounds once: (1 + 2^-20)^2 - (1 + 2^-19) is 2^-40 fused, 0 through a rounded product.
TEST(PtxInterp, FmaRoundsOnce) {
  KernelBuilder kb("fma", 32);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto i = kb.global_id();
  out[i] = fma(a[i], a[i], c[i]);
  Kernel k = kb.finish();
  std::vector<float> ha(32, 1.0f + 0x1p-20f), hc(32, -(1.0f + 0x1p-19f)), ho(32, -1.0f);
  run(k, {buf(ha), buf(hc), buf(ho)}, {}, 1);
  for (float v : ho) ASSERT_EQ(v, 0x1p-40f);
}

TEST(PtxInterp, Atomics) {
  KernelBuilder kb("atoms", 64);
  auto ci = kb.buffer("ci", Type::I32, Access::ReadWrite);
  auto cf = kb.buffer("cf", Type::F32, Access::ReadWrite);
  auto i = kb.global_id();
  ci.atomic_add(i % 3u, kb.i32(-2));
  cf.atomic_add(kb.u32(0), kb.f32(0.25f));
  Kernel k = kb.finish();
  std::vector<int32_t> hi(3, 0);
  std::vector<float> hf(1, 0);
  run(k, {buf(hi), buf(hf)}, {}, 3);
  EXPECT_EQ(hi[0], -2 * 64);
  EXPECT_EQ(hi[1], -2 * 64);
  EXPECT_EQ(hi[2], -2 * 64);
  EXPECT_EQ(hf[0], 48.0f);
}

// out[i] = op(a[i], b[i]) for every binary op of a type, against C++.
template <class T>
void binary_ops(Type t, std::vector<T> a, std::vector<T> b,
                std::vector<std::pair<std::function<Val(Val, Val)>, std::function<T(T, T)>>> ops) {
  for (size_t o = 0; o < ops.size(); ++o) {
    KernelBuilder kb("binop", 64);
    auto ba = kb.buffer("a", t, Access::Read);
    auto bb = kb.buffer("b", t, Access::Read);
    auto by = kb.buffer("y", t, Access::Write);
    auto n = kb.scalar("n", Type::U32);
    auto i = kb.global_id();
    kb.if_(i < n, [&] { by[i] = ops[o].first(ba[i], bb[i]); });
    Kernel k = kb.finish();
    std::vector<T> y(a.size());
    run(k, {buf(a), buf(b), buf(y)}, {a.size()}, (a.size() + 63) / 64);
    for (size_t j = 0; j < a.size(); ++j) {
      T want = ops[o].second(a[j], b[j]);
      if constexpr (std::is_floating_point_v<T>) {
        ASSERT_TRUE((std::isnan(y[j]) && std::isnan(want)) || std::memcmp(&y[j], &want, sizeof(T)) == 0)
            << "op " << o << "(" << a[j] << ", " << b[j] << ") = " << y[j] << ", want " << want;
      } else {
        ASSERT_EQ(y[j], want) << "op " << o << "(" << a[j] << ", " << b[j] << ")";
      }
    }
  }
}

TEST(PtxInterp, IntegerOpsHaveCSemantics) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> d(-100000, 100000);
  std::vector<int32_t> a(300), b(300);
  for (size_t j = 0; j < a.size(); ++j) {
    a[j] = d(rng);
    b[j] = d(rng) / 997;
    if (b[j] == 0) b[j] = 3;
  }
  auto sel = [](Val c, Val x, Val y) { return select(c, x, y); };
  binary_ops<int32_t>(Type::I32, a, b, {
      {[](Val x, Val y) { return x + y; }, [](int32_t x, int32_t y) { return x + y; }},
      {[](Val x, Val y) { return x - y; }, [](int32_t x, int32_t y) { return x - y; }},
      {[](Val x, Val y) { return x * y; }, [](int32_t x, int32_t y) { return int32_t(uint32_t(x) * uint32_t(y)); }},
      {[](Val x, Val y) { return x / y; }, [](int32_t x, int32_t y) { return x / y; }},
      {[](Val x, Val y) { return x % y; }, [](int32_t x, int32_t y) { return x % y; }},
      {[](Val x, Val y) { return min(x, y); }, [](int32_t x, int32_t y) { return std::min(x, y); }},
      {[](Val x, Val y) { return max(x, y); }, [](int32_t x, int32_t y) { return std::max(x, y); }},
      {[](Val x, Val y) { return x >> (y & 15); }, [](int32_t x, int32_t y) { return x >> (y & 15); }},
      {[](Val x, Val y) { return x << (y & 15); }, [](int32_t x, int32_t y) { return int32_t(uint32_t(x) << (y & 15)); }},
      {[](Val x, Val y) { return (x & y) ^ (x | y); }, [](int32_t x, int32_t y) { return (x & y) ^ (x | y); }},
      {[](Val x, Val y) { return -x + abs(y) + !x; }, [](int32_t x, int32_t y) { return -x + std::abs(y) + ~x; }},
      {[sel](Val x, Val y) { return sel(x < y, x, y) + sel(x >= y, x, y); },
       [](int32_t x, int32_t y) { return (x < y ? x : y) + (x >= y ? x : y); }},
      {[sel](Val x, Val y) { return sel(x == y, x, y) - sel(x != y, y, x) + sel(x <= y, x, y) + sel(x > y, y, x); },
       [](int32_t x, int32_t y) { return (x == y ? x : y) - (x != y ? y : x) + (x <= y ? x : y) + (x > y ? y : x); }},
  });
  std::vector<uint32_t> ua(300), ub(300);
  for (size_t j = 0; j < ua.size(); ++j) {
    ua[j] = uint32_t(a[j]) * 2654435761u;
    ub[j] = uint32_t(b[j]) | 1u;
  }
  binary_ops<uint32_t>(Type::U32, ua, ub, {
      {[](Val x, Val y) { return x / y; }, [](uint32_t x, uint32_t y) { return x / y; }},
      {[](Val x, Val y) { return x % y; }, [](uint32_t x, uint32_t y) { return x % y; }},
      {[](Val x, Val y) { return x >> (y & 31u); }, [](uint32_t x, uint32_t y) { return x >> (y & 31u); }},
      {[](Val x, Val y) { return min(x, y); }, [](uint32_t x, uint32_t y) { return std::min(x, y); }},
      {[](Val x, Val y) { return select(x < y, x, y) + select(x >= y, y, x); },
       [](uint32_t x, uint32_t y) { return (x < y ? x : y) + (x >= y ? y : x); }},
      {[](Val x, Val y) { return select(x <= y, x, y) - select(x > y, y, x); },
       [](uint32_t x, uint32_t y) { return (x <= y ? x : y) - (x > y ? y : x); }},
  });
  std::vector<int64_t> la(300), lb(300);
  for (size_t j = 0; j < la.size(); ++j) {
    la[j] = int64_t(a[j]) * 1000003;
    lb[j] = int64_t(b[j]) * 7;
  }
  binary_ops<int64_t>(Type::I64, la, lb, {
      {[](Val x, Val y) { return x * y + x / y - x % y; }, [](int64_t x, int64_t y) { return x * y + x / y - x % y; }},
      {[](Val x, Val y) { return (x >> (y & 31)) + (x << (y & 7)); },
       [](int64_t x, int64_t y) { return (x >> (y & 31)) + int64_t(uint64_t(x) << (y & 7)); }},
      {[](Val x, Val y) { return select(x < y, min(x, y), max(x, y)) + abs(x) - (-y); },
       [](int64_t x, int64_t y) { return (x < y ? std::min(x, y) : std::max(x, y)) + std::abs(x) + y; }},
  });
}

// Division by a constant takes the backend's shortcuts (a shift or a mask for an unsigned power of two, an
// immediate divisor otherwise); each must keep C's results, negative dividends and divisors included.
TEST(PtxInterp, DivisionByConstantsKeepsCSemantics) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> d(-2000000000, 2000000000);
  std::vector<int32_t> a(300), b(300, 1);
  for (auto& x : a) x = d(rng);
  a[0] = std::numeric_limits<int32_t>::min();
  a[1] = -1;
  binary_ops<int32_t>(Type::I32, a, b, {
      {[](Val x, Val) { return x / 4; }, [](int32_t x, int32_t) { return x / 4; }},
      {[](Val x, Val) { return x % 4; }, [](int32_t x, int32_t) { return x % 4; }},
      {[](Val x, Val) { return x / 7 + x % 7; }, [](int32_t x, int32_t) { return x / 7 + x % 7; }},
      {[](Val x, Val) { return x / -3 + x % -3; }, [](int32_t x, int32_t) { return x / -3 + x % -3; }},
  });
  std::vector<uint32_t> ua(300), ub(300, 1);
  for (size_t j = 0; j < ua.size(); ++j) ua[j] = uint32_t(a[j]);
  binary_ops<uint32_t>(Type::U32, ua, ub, {
      {[](Val x, Val) { return x / 8u; }, [](uint32_t x, uint32_t) { return x / 8u; }},
      {[](Val x, Val) { return x % 8u; }, [](uint32_t x, uint32_t) { return x % 8u; }},
      {[](Val x, Val) { return x / 1u + x % 1u; }, [](uint32_t x, uint32_t) { return x; }},
      {[](Val x, Val) { return x / 2147483648u + x % 2147483648u; },
       [](uint32_t x, uint32_t) { return x / 2147483648u + x % 2147483648u; }},
      {[](Val x, Val) { return x / 40u * 3u + x % 136u; }, [](uint32_t x, uint32_t) { return x / 40u * 3u + x % 136u; }},
  });
  std::vector<int64_t> la(300), lb(300, 1);
  for (size_t j = 0; j < la.size(); ++j) la[j] = int64_t(a[j]) * 1000003;
  binary_ops<int64_t>(Type::I64, la, lb, {
      {[](Val x, Val) { return x / 16 - x % 16; }, [](int64_t x, int64_t) { return x / 16 - x % 16; }},
      {[](Val x, Val) { return x / 1000 + x % 1000; }, [](int64_t x, int64_t) { return x / 1000 + x % 1000; }},
  });
}

TEST(PtxInterp, FloatOpsAreIeee) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-100, 100);
  std::vector<float> a(300), b(300);
  for (size_t j = 0; j < a.size(); ++j) a[j] = d(rng), b[j] = d(rng);
  a.insert(a.end(), {0.0f, -0.0f, INFINITY, NAN, 1e-40f, -4.0f});
  b.insert(b.end(), {-0.0f, 0.0f, 2.0f, 1.0f, 3e-41f, 2.0f});
  binary_ops<float>(Type::F32, a, b, {
      {[](Val x, Val y) { return x + y; }, [](float x, float y) { return x + y; }},
      {[](Val x, Val y) { return x * y + x; }, [](float x, float y) { volatile float m = x * y; return m + x; }},
      {[](Val x, Val y) { return x / y - y; }, [](float x, float y) { volatile float q = x / y; return q - y; }},
      {[](Val x, Val y) { return x % y; }, [](float x, float y) { return std::fmod(x, y); }},
      {[](Val x, Val y) { return sqrt(abs(x)) + floor(y); }, [](float x, float y) { volatile float s = std::sqrt(std::abs(x)); return s + std::floor(y); }},
      {[](Val x, Val y) { return rsqrt(abs(x)); }, [](float x, float) { return 1.0f / std::sqrt(std::abs(x)); }},
      {[](Val x, Val y) { return select(x != y, x, y); }, [](float x, float y) { return x != y ? x : y; }},
      {[](Val x, Val y) { return select(x < y, x, -y); }, [](float x, float y) { return x < y ? x : -y; }},
  });
  std::vector<double> da(a.begin(), a.end()), db(b.begin(), b.end());
  binary_ops<double>(Type::F64, da, db, {
      {[](Val x, Val y) { return x * y + x / y; }, [](double x, double y) { volatile double m = x * y; return m + x / y; }},
      {[](Val x, Val y) { return x % y; }, [](double x, double y) { return std::fmod(x, y); }},
      {[](Val x, Val y) { return sqrt(abs(x)) - floor(y); }, [](double x, double y) { volatile double s = std::sqrt(std::abs(x)); return s - std::floor(y); }},
  });
}

TEST(PtxInterp, Conversions) {
  std::vector<float> x = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 123456.7f, -98765.4f, 3e9f, -3e9f, 65519.0f, 65520.0f, 1e-6f};
  const size_t n = x.size();
  KernelBuilder kb("conv", 32);
  auto bx = kb.buffer("x", Type::F32, Access::Read);
  auto oi = kb.buffer("oi", Type::I32, Access::Write);
  auto ou = kb.buffer("ou", Type::U32, Access::Write);
  auto ol = kb.buffer("ol", Type::I64, Access::Write);
  auto oh = kb.buffer("oh", Type::F16, Access::Write);
  auto od = kb.buffer("od", Type::F64, Access::Write);
  auto of = kb.buffer("of", Type::F32, Access::Write);
  auto i = kb.global_id();
  kb.if_(i < uint32_t(n), [&] {
    Val v = bx[i];
    oi[i] = cast(v, Type::I32);
    ou[i] = cast(abs(v), Type::U32);
    ol[i] = cast(v, Type::I64);
    oh[i] = cast(v, Type::F16);
    od[i] = cast(v, Type::F64) / 3.0;
    of[i] = cast(cast(cast(v, Type::I32), Type::I64), Type::F32) + cast(cast(v, Type::F64) / 3.0, Type::F32);
  });
  Kernel k = kb.finish();
  std::vector<int32_t> hi(n);
  std::vector<uint32_t> hu(n);
  std::vector<int64_t> hl(n);
  std::vector<uint16_t> hh(n);
  std::vector<double> hd(n);
  std::vector<float> hf(n);
  run(k, {buf(x), buf(hi), buf(hu), buf(hl), buf(hh), buf(hd), buf(hf)}, {}, 1);
  for (size_t j = 0; j < n; ++j) {
    double v = x[j];
    int32_t want_i = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : int32_t(v);  // saturating
    EXPECT_EQ(hi[j], want_i) << x[j];
    EXPECT_EQ(hu[j], uint32_t(std::abs(v))) << x[j];
    EXPECT_EQ(hl[j], int64_t(v)) << x[j];
    EXPECT_EQ(hh[j], f32_to_f16_bits(x[j])) << x[j];
    EXPECT_EQ(hd[j], v / 3.0) << x[j];
    EXPECT_EQ(hf[j], float(double(want_i)) + float(v / 3.0)) << x[j];
  }
}

TEST(PtxInterp, HalfValuesComputeInF32) {
  KernelBuilder kb("half", 32);
  auto a = kb.buffer("a", Type::F16, Access::Read);
  auto y = kb.buffer("y", Type::F16, Access::Write);
  auto i = kb.global_id();
  Val v = a[i];
  y[i] = select(v > kb.constant(Type::F16, 1.0), v * v + v, exp(v));
  Kernel k = kb.finish();
  std::vector<uint16_t> ha, hy(32);
  for (int j = 0; j < 32; ++j) ha.push_back(f32_to_f16_bits(float(j) / 8 - 1));
  run(k, {buf(ha), buf(hy)}, {}, 1);
  for (int j = 0; j < 32; ++j) {
    float v = f16_bits_to_f32(ha[j]);
    uint16_t want = v > 1 ? f32_to_f16_bits(f16_bits_to_f32(f32_to_f16_bits(v * v)) + v) : f32_to_f16_bits(std::exp(v));
    EXPECT_EQ(hy[j], want) << v;  // exp within 1e-6 relative rounds to the same f16 here
  }
}

// Hand-written PTX: one entry `k` whose parameters p0, p1, ... are the buffers (.u64 pointers), run as one workgroup
// of `threads` threads. Returns the interpreter's error, or "" when the launch ran.
std::string run_ptx(const std::string& body, std::vector<std::pair<void*, size_t>> buffers, unsigned threads = 32) {
  std::string ptx = ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n";
  for (size_t i = 0; i < buffers.size(); ++i)
    ptx += "  .param .u64 p" + std::to_string(i) + (i + 1 < buffers.size() ? ",\n" : "\n");
  ptx += ")\n.reqntid " + std::to_string(threads) + ", 1, 1\n{\n" + body + "}\n";
  try {
    auto m = interp::Module::parse(ptx);
    launch(*m, m->entries().at(0), {1, 1, 1}, {threads, 1, 1}, buffers);
  } catch (const interp::Error& e) {
    return e.what();
  }
  return "";
}

template <class T, size_t N>
std::pair<void*, size_t> buf(std::array<T, N>& v) { return {v.data(), sizeof(T) * N}; }

// "{%f1, %f2, ..., %f8}": a wmma fragment operand of `count` registers.
std::string frag(const std::string& prefix, int first, int count = 8) {
  std::string s = "{";
  for (int i = 0; i < count; ++i) s += (i ? ", " : "") + prefix + std::to_string(first + i);
  return s + "}";
}

// mov.f32 of 0 into %f<first> .. %f<first + 7>: a zero accumulator.
std::string zero_f32(int first) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += "  mov.f32 %f" + std::to_string(first + i) + ", 0f00000000;\n";
  return s;
}

std::array<uint16_t, 256> random_16bit(std::mt19937& rng, bool bf16) {
  std::uniform_real_distribution<float> d(-2, 2);
  std::array<uint16_t, 256> m;
  for (auto& v : m) v = bf16 ? f32_to_bf16_bits(d(rng)) : f32_to_f16_bits(d(rng));
  return m;
}

// Checks got(i, j) against C + A B in double for A, B 16 x 16 (row-major, exact values), C (or 0): within 1e-5 of
// the terms' magnitudes, which the f32 fma chain easily meets, and a wrong element or layout does not.
void expect_product(const std::function<float(int, int)>& got, const std::function<double(int, int)>& a,
                    const std::function<double(int, int)>& b, const std::function<double(int, int)>& c) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = c(i, j), magnitude = std::abs(c(i, j));
      for (int k = 0; k < 16; ++k) {
        want += a(i, k) * b(k, j);
        magnitude += std::abs(a(i, k) * b(k, j));
      }
      ASSERT_LE(std::abs(double(got(i, j)) - want), 1e-5 * magnitude) << "D[" << i << "][" << j << "] = " << got(i, j)
                                                                       << ", want " << want;
    }
}

constexpr float kPoison = -12345.0f;  // what the outputs hold before the launch: an unwritten element shows

// bf16 A and B copied from global to shared memory (rows padded to 24 elements) with ld / st, loaded with
// wmma.load from there (the address once a shared array, once a register; the stride once an immediate, once a
// register), multiplied into a zero accumulator and stored to global memory with rows of 20 elements.
TEST(PtxInterp, WmmaBf16FromSharedMemory) {
  std::mt19937 rng(11);
  alignas(32) std::array<uint16_t, 256> a = random_16bit(rng, true), b = random_16bit(rng, true);
  alignas(32) std::array<float, 16 * 20> out;
  out.fill(kPoison);
  // Lane l copies the 8 elements (16 bytes) of row l / 2 from column 8 (l % 2): global row r at 32 r bytes, shared
  // row r at 48 r.
  std::string body = R"(
  .shared .align 32 .b8 sa[768];
  .shared .align 32 .b8 sb[768];
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  ld.param.u64 %rd3, [p2];
  mov.u32 %r1, %laneid;
  shr.u32 %r2, %r1, 1;
  and.b32 %r3, %r1, 1;
  shl.b32 %r4, %r3, 4;
  mad.lo.u32 %r5, %r2, 32, %r4;
  mad.lo.u32 %r6, %r2, 48, %r4;
  cvt.u64.u32 %rd4, %r5;
  add.u64 %rd5, %rd1, %rd4;
  add.u64 %rd6, %rd2, %rd4;
  mov.u32 %r7, sa;
  add.u32 %r8, %r7, %r6;
  mov.u32 %r9, sb;
  add.u32 %r10, %r9, %r6;
)";
  for (int w = 0; w < 4; ++w)
    body += R"(
  ld.global.b32 %r11, [%rd5];
  st.shared.b32 [%r8], %r11;
  ld.global.b32 %r11, [%rd6];
  st.shared.b32 [%r10], %r11;
  add.u64 %rd5, %rd5, 4;
  add.u64 %rd6, %rd6, 4;
  add.u32 %r8, %r8, 4;
  add.u32 %r10, %r10, 4;
)";
  body += "  bar.sync 0;\n";
  body += "  wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 " + frag("%r", 20, 4) + ", [sa], 24;\n";
  body += "  mov.u32 %r24, 24;\n";
  body += "  wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16 " + frag("%r", 25, 4) + ", [%r9], %r24;\n";
  body += zero_f32(1);
  body += "  wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 " + frag("%f", 11) + ", " + frag("%r", 20, 4) +
          ", " + frag("%r", 25, 4) + ", " + frag("%f", 1) + ";\n";
  body += "  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd3], " + frag("%f", 11) + ", 20;\n  ret;\n";
  ASSERT_EQ(run_ptx(body, {buf(a), buf(b), buf(out)}), "");
  auto bf = [](const std::array<uint16_t, 256>& m) {
    return [&m](int r, int c) { return double(bf16_bits_to_f32(m[size_t(r * 16 + c)])); };
  };
  expect_product([&](int i, int j) { return out[size_t(i * 20 + j)]; }, bf(a), bf(b), [](int, int) { return 0.0; });
  for (int i = 0; i < 16; ++i)
    for (int j = 16; j < 20; ++j) ASSERT_EQ(out[size_t(i * 20 + j)], kPoison) << i << ", " << j;  // the row padding
}

// f16 A, B and an f32 C loaded with wmma.load from global memory, accumulated in place (d names c's registers),
// stored to shared memory (rows of 24 elements) and copied out with ld / st.
TEST(PtxInterp, WmmaF16WithAccumulatorThroughGlobalMemory) {
  std::mt19937 rng(12);
  alignas(32) std::array<uint16_t, 256> a = random_16bit(rng, false), b = random_16bit(rng, false);
  alignas(32) std::array<float, 256> c, out;
  std::uniform_real_distribution<float> d(-8, 8);
  for (auto& v : c) v = d(rng);
  out.fill(kPoison);
  std::string body = R"(
  .shared .align 32 .b8 sd[1536];
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  ld.param.u64 %rd3, [p2];
  ld.param.u64 %rd4, [p3];
)";
  body += "  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 " + frag("%r", 11) + ", [%rd1], 16;\n";
  body += "  wmma.load.b.sync.aligned.row.m16n16k16.global.f16 " + frag("%r", 21) + ", [%rd2], 16;\n";
  body += "  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 " + frag("%f", 1) + ", [%rd3], 16;\n";
  body += "  wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 " + frag("%f", 1) + ", " + frag("%r", 11) + ", " +
          frag("%r", 21) + ", " + frag("%f", 1) + ";\n";
  body += "  wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [sd], " + frag("%f", 1) + ", 24;\n";
  // Lane l copies the 8 elements of row l / 2 from column 8 (l % 2): shared row r at 96 r bytes, global at 64 r.
  body += R"(
  mov.u32 %r1, %laneid;
  shr.u32 %r2, %r1, 1;
  and.b32 %r3, %r1, 1;
  shl.b32 %r4, %r3, 5;
  mad.lo.u32 %r5, %r2, 64, %r4;
  mad.lo.u32 %r6, %r2, 96, %r4;
  mov.u32 %r7, sd;
  add.u32 %r8, %r7, %r6;
  cvt.u64.u32 %rd5, %r5;
  add.u64 %rd6, %rd4, %rd5;
)";
  for (int w = 0; w < 8; ++w)
    body += R"(
  ld.shared.f32 %f20, [%r8];
  st.global.f32 [%rd6], %f20;
  add.u32 %r8, %r8, 4;
  add.u64 %rd6, %rd6, 4;
)";
  body += "  ret;\n";
  ASSERT_EQ(run_ptx(body, {buf(a), buf(b), buf(c), buf(out)}), "");
  auto half = [](const std::array<uint16_t, 256>& m) {
    return [&m](int r, int col) { return double(f16_bits_to_f32(m[size_t(r * 16 + col)])); };
  };
  expect_product([&](int i, int j) { return out[size_t(i * 16 + j)]; }, half(a), half(b),
                 [&](int i, int j) { return double(c[size_t(i * 16 + j)]); });
}

// .col reads the matrix column-major: B loaded .col from a row-major M is M^T (so D = A M^T), and D stored .col
// with a stride of 20 puts D[i][j] at 20 j + i.
TEST(PtxInterp, WmmaColumnMajorLoadAndStore) {
  std::mt19937 rng(13);
  alignas(32) std::array<uint16_t, 256> a = random_16bit(rng, true), m = random_16bit(rng, true);
  alignas(32) std::array<float, 16 * 20> out;
  out.fill(kPoison);
  std::string body = R"(
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  ld.param.u64 %rd3, [p2];
)";
  body += "  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 " + frag("%r", 1, 4) + ", [%rd1], 16;\n";
  body += "  wmma.load.b.sync.aligned.col.m16n16k16.global.bf16 " + frag("%r", 5, 4) + ", [%rd2], 16;\n";
  body += zero_f32(1);
  body += "  wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 " + frag("%f", 11) + ", " + frag("%r", 1, 4) +
          ", " + frag("%r", 5, 4) + ", " + frag("%f", 1) + ";\n";
  body += "  wmma.store.d.sync.aligned.col.m16n16k16.global.f32 [%rd3], " + frag("%f", 11) + ", 20;\n  ret;\n";
  ASSERT_EQ(run_ptx(body, {buf(a), buf(m), buf(out)}), "");
  expect_product([&](int i, int j) { return out[size_t(j * 20 + i)]; },
                 [&](int r, int c) { return double(bf16_bits_to_f32(a[size_t(r * 16 + c)])); },
                 [&](int k, int n) { return double(bf16_bits_to_f32(m[size_t(n * 16 + k)])); },
                 [](int, int) { return 0.0; });
  for (int j = 0; j < 16; ++j)
    for (int i = 16; i < 20; ++i) ASSERT_EQ(out[size_t(j * 20 + i)], kPoison) << i << ", " << j;  // column padding
}

// A wmma.load of a 16 x 16 tile in shared memory at `addr` (a register expression on sa) with `stride`.
std::string load_tile(const std::string& type, const std::string& addr, const std::string& stride,
                      unsigned shared_bytes = 4096, const std::string& setup = "") {
  const bool wide = type == "f32";
  return "  .shared .align 32 .b8 sa[" + std::to_string(shared_bytes) + "];\n  mov.u32 %r1, %laneid;\n" + setup +
         "  mov.u32 %r2, sa;\n  add.u32 %r3, %r2, " + addr + ";\n  wmma.load." + (wide ? "c" : "a") +
         ".sync.aligned.row.m16n16k16.shared." + type + " " + frag(wide ? "%f" : "%r", 10, wide ? 8 : 4) + ", [%r3], " +
         stride + ";\n  ret;\n";
}

// The PTX ISA asks for a 32-byte aligned address and a stride of whole 16 bytes (8 elements of 16 bits, 4 of 32).
TEST(PtxInterp, WmmaRefusesMisalignedAddressesAndStrides) {
  EXPECT_EQ(run_ptx(load_tile("bf16", "0", "8"), {}), "");
  EXPECT_EQ(run_ptx(load_tile("bf16", "64", "24"), {}), "");
  EXPECT_EQ(run_ptx(load_tile("f32", "32", "4"), {}), "");
  std::string e = run_ptx(load_tile("bf16", "0", "12"), {});
  EXPECT_NE(e.find("stride 12 (elements) is not a multiple of 16 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("wmma.load.a"), std::string::npos) << e;
  e = run_ptx(load_tile("f32", "0", "6"), {});
  EXPECT_NE(e.find("stride 6"), std::string::npos) << e;
  e = run_ptx(load_tile("bf16", "16", "16"), {});
  EXPECT_NE(e.find("address 16 is not 32-byte aligned"), std::string::npos) << e;
  // global: the absolute address
  alignas(32) std::array<uint16_t, 272> g{};
  const std::string global_load = "  ld.param.u64 %rd1, [p0];\n  add.u64 %rd2, %rd1, 2;\n"
                                  "  wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 " + frag("%r", 10, 4) +
                                  ", [%rd2], 16;\n  ret;\n";
  e = run_ptx(global_load, {buf(g)});
  EXPECT_NE(e.find("is not 32-byte aligned"), std::string::npos) << e;
}

// Every element is checked: shared accesses stay in the CTA's shared memory, global ones in the launch's buffers.
TEST(PtxInterp, WmmaAccessesAreBoundsChecked) {
  std::string e = run_ptx(load_tile("bf16", "0", "16", 480), {});  // 16 rows of 32 bytes need 512
  EXPECT_NE(e.find("shared memory access at 480 past 480 bytes"), std::string::npos) << e;
  alignas(32) std::array<float, 255> g{};  // one element short
  const std::string body = "  ld.param.u64 %rd1, [p0];\n" + zero_f32(1) +
                           "  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], " + frag("%f", 1) +
                           ", 16;\n  ret;\n";
  e = run_ptx(body, {buf(g)});
  EXPECT_NE(e.find("out-of-bounds global access"), std::string::npos) << e;
  EXPECT_NE(e.find("wmma.store.d"), std::string::npos) << e;
  std::array<float, 256> whole{};
  EXPECT_EQ(run_ptx(body, {buf(whole)}).find("out-of-bounds"), std::string::npos);
}

// wmma is warp-wide: every lane passes the same address and stride, the whole warp reaches it, and no guard may
// leave a lane out.
TEST(PtxInterp, WmmaNeedsTheWholeWarpInAgreement) {
  std::string e = run_ptx(load_tile("bf16", "%r4", "16", 32 * 512, "  mul.lo.u32 %r4, %r1, 32;\n"), {});
  EXPECT_NE(e.find("lanes of a warp pass different addresses or strides to wmma"), std::string::npos) << e;
  e = run_ptx(load_tile("bf16", "0", "%r4", 4096, "  and.b32 %r5, %r1, 1;\n  mad.lo.u32 %r4, %r5, 8, 16;\n"), {});
  EXPECT_NE(e.find("lanes of a warp pass different addresses or strides to wmma"), std::string::npos) << e;
  // lane 0 branches around the load
  const std::string diverging = "  .shared .align 32 .b8 sa[4096];\n  mov.u32 %r1, %laneid;\n"
                                "  setp.eq.u32 %p1, %r1, 0;\n  @%p1 bra DONE;\n"
                                "  wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 " + frag("%r", 10, 4) +
                                ", [sa], 16;\nDONE:\n  ret;\n";
  e = run_ptx(diverging, {});
  EXPECT_NE(e.find("do not all reach the same wmma"), std::string::npos) << e;
  e = run_ptx(load_tile("bf16", "0", "16"), {}, 16);
  EXPECT_NE(e.find("wmma names 32 lanes, but the warp is partial"), std::string::npos) << e;
  EXPECT_EQ(run_ptx(load_tile("bf16", "0", "16"), {}, 64), "");  // two whole warps
}

TEST(PtxInterp, RefusesInstructionsOutsideTheSubset) {
  std::string ptx = ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n  brev.b32 %r0, %r1;\n}\n";
  try {
    interp::Module::parse(ptx);
    FAIL() << "brev accepted";
  } catch (const interp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 7"), std::string::npos) << e.what();
  }
}

// .minnctapersm (the backend's occupancy request) is a hint the interpreter accepts; a malformed one is refused.
TEST(PtxInterp, AcceptsTheOccupancyHint) {
  auto module = [](const std::string& hint) {
    return ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n.reqntid 256, 1, 1\n" + hint +
           "\n{\n  ret;\n}\n";
  };
  EXPECT_NO_THROW(interp::Module::parse(module(".minnctapersm 2")));
  EXPECT_THROW(interp::Module::parse(module(".minnctapersm 0")), interp::Error);
  EXPECT_THROW(interp::Module::parse(module(".minnctapersm two")), interp::Error);
}

// wmma beyond the forms the backend writes is refused when the module is parsed, naming the line.
TEST(PtxInterp, RefusesWmmaOutsideTheSubset) {
  const std::string a4 = "{%r1, %r2, %r3, %r4}", f8 = "{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}";
  const std::string good = "wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 " + a4 + ", [%r9], 16";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"@%p1 " + good, "guarded wmma"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.bf16 " + a4 + ", [%rd9], 16", "only wmma.load"},  // generic space
      {"wmma.load.a.sync.aligned.row.m32n8k16.shared.bf16 " + a4 + ", [%r9], 16", "only wmma.load"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%r1, %r2, %r3}, [%r9], 16", "4 registers"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 " + a4 + ", [%r9], 16", "8 registers"},
      {"wmma.load.c.sync.aligned.row.m16n16k16.shared.f16 " + f8 + ", [%r9], 16", "matrix or type"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.s8 " + a4 + ", [%r9], 16", "matrix or type"},
      {"wmma.store.d.sync.aligned.row.m16n16k16.shared.bf16 [%r9], " + a4 + ", 16", "matrix or type"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 " + a4 + ", %r9, 16", "address"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 " + a4 + ", [%r9]", "a fragment, an address and a stride"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%r1, %r2, %r3, 7}, [%r9], 16", "list of registers"},
      {"wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16 " + f8 + ", " + f8 + ", " + f8 + ", " + f8, "only wmma.mma"},
      {"wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32.satfinite " + f8 + ", " + a4 + ", " + a4 + ", " + f8,
       "only wmma.mma"},
      {"wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 " + f8 + ", " + a4 + ", " + a4,
       "fragments d, a, b, c"},
      {"wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 " + f8 + ", " + f8 + ", " + a4 + ", " + f8,
       "4 registers"},
      {"wmma.load.a.sync.aligned.row.m16n16k16.shared.b16 " + a4 + ", [%r9], 16", "matrix or type"},
  };
  auto module = [](const std::string& ins) {
    return ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n  " + ins + ";\n}\n";
  };
  EXPECT_NO_THROW(interp::Module::parse(module(good)));
  for (const auto& [ins, why] : bad) {
    try {
      interp::Module::parse(module(ins));
      ADD_FAILURE() << "accepted: " << ins;
    } catch (const interp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("line 7"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

}  // namespace
// cp.async: each of 32 threads copies 16 bytes (thread 5 with source size 0: zeros) from global into shared memory;
// after cp.async.wait_all and bar.sync, each copies a word of its neighbour's chunk back out. Without the wait the
// copies have not landed (the interpreter lands them at the wait, as late as PTX allows), so the garbage shows;
// a thread that exits with copies pending is an error.
TEST(PtxInterp, CpAsyncLandsAtWaitAllAndZeroFillsAnEmptySource) {
  std::array<uint32_t, 128> in;
  for (uint32_t i = 0; i < 128; ++i) in[i] = 1000 + i;
  auto kernel = [](bool wait, bool exit_pending) {
    std::string b =
        "  .reg .b32 %r<20>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p<2>;\n  .shared .align 16 .b8 sh[512];\n"
        "  ld.param.u64 %rd1, [p0];\n  ld.param.u64 %rd2, [p1];\n  mov.u32 %r1, %tid.x;\n"
        "  mul.wide.u32 %rd3, %r1, 16;\n  add.s64 %rd4, %rd1, %rd3;\n  mov.u32 %r2, sh;\n  mad.lo.u32 %r3, %r1, 16, %r2;\n"
        "  setp.ne.u32 %p1, %r1, 5;\n  selp.b32 %r4, 16, 0, %p1;\n"
        "  cp.async.cg.shared.global [%r3], [%rd4], 16, %r4;\n";
    if (exit_pending) return b + "  ret;\n";
    if (wait) b += "  cp.async.wait_all;\n";
    b += "  bar.sync 0;\n  add.u32 %r5, %r1, 1;\n  and.b32 %r5, %r5, 31;\n  mad.lo.u32 %r6, %r5, 16, %r2;\n"
         "  ld.shared.b32 %r7, [%r6];\n  mul.wide.u32 %rd5, %r1, 4;\n  add.s64 %rd6, %rd2, %rd5;\n"
         "  st.global.b32 [%rd6], %r7;\n";
    if (!wait) b += "  cp.async.wait_all;\n";
    return b + "  ret;\n";
  };
  std::array<uint32_t, 32> out;
  out.fill(0xDEADBEEF);
  ASSERT_EQ(run_ptx(kernel(true, false), {buf(in), buf(out)}), "");
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t from = (t + 1) % 32;
    EXPECT_EQ(out[t], from == 5 ? 0u : 1000 + 4 * from) << t;
  }
  out.fill(0xDEADBEEF);
  ASSERT_EQ(run_ptx(kernel(false, false), {buf(in), buf(out)}), "");
  EXPECT_NE(out[0], 1000u + 4) << "a copy landed before its wait: a missing wait would go unseen";
  EXPECT_NE(run_ptx(kernel(true, true), {buf(in), buf(out)}).find("never waited"), std::string::npos);
}

// cp.async.wait_group N: each thread commits a group copying its first chunk, then one copying its second; after
// wait_group 1 the first has landed and the second need not have (the interpreter lands it as late as allowed);
// after wait_group 0 both have. An uncommitted copy is not covered by wait_group 0.
TEST(PtxInterp, CpAsyncWaitGroupLeavesTheNewestGroupsInFlight) {
  std::array<uint32_t, 256> in;
  for (uint32_t i = 0; i < 256; ++i) in[i] = 5000 + i;
  auto kernel = [](const std::string& wait_between) {
    return "  .reg .b32 %r<20>;\n  .reg .b64 %rd<12>;\n  .shared .align 16 .b8 sh[1024];\n"
           "  ld.param.u64 %rd1, [p0];\n  ld.param.u64 %rd2, [p1];\n  mov.u32 %r1, %tid.x;\n"
           "  mul.wide.u32 %rd3, %r1, 16;\n  add.s64 %rd4, %rd1, %rd3;\n  add.s64 %rd5, %rd4, 512;\n"
           "  mov.u32 %r2, sh;\n  mad.lo.u32 %r3, %r1, 16, %r2;\n  add.u32 %r4, %r3, 512;\n"
           "  cp.async.cg.shared.global [%r3], [%rd4], 16, 16;\n  cp.async.commit_group;\n"
           "  cp.async.cg.shared.global [%r4], [%rd5], 16, 16;\n  " + wait_between + "\n"
           "  ld.shared.b32 %r5, [%r3];\n  ld.shared.b32 %r6, [%r4];\n"
           "  mul.wide.u32 %rd6, %r1, 8;\n  add.s64 %rd7, %rd2, %rd6;\n"
           "  add.s64 %rd8, %rd7, 4;\n  st.global.b32 [%rd7], %r5;\n  st.global.b32 [%rd8], %r6;\n  cp.async.wait_all;\n  ret;\n";
  };
  std::array<uint32_t, 64> out;
  auto run = [&](const std::string& wait) {
    out.fill(0xDEADBEEF);
    return run_ptx(kernel(wait), {buf(in), buf(out)});
  };
  ASSERT_EQ(run("cp.async.commit_group;\n  cp.async.wait_group 1;"), "");
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(out[2 * t], 5000 + 4 * t) << t;
    EXPECT_NE(out[2 * t + 1], 5128 + 4 * t) << t << ": the newest group landed before its wait";
  }
  ASSERT_EQ(run("cp.async.commit_group;\n  cp.async.wait_group 0;"), "");
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[2 * t + 1], 5128 + 4 * t) << t;
  ASSERT_EQ(run("cp.async.wait_group 0;"), "");  // the second copy is in the open group
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(out[2 * t], 5000 + 4 * t) << t;
    EXPECT_NE(out[2 * t + 1], 5128 + 4 * t) << t << ": wait_group covered an uncommitted copy";
  }
}

}  // namespace
