// Copies into workgroup memory on Vulkan (backends/spirv/emit_copies.cpp: 16-byte loads whose stores land at the
// wait that covers them): pipelines 2 to 4 stages deep like the tensor-core matmul's, rolled and unrolled, in which each invocation copies one
// 16-byte piece of the next chunk while the workgroup reads the current one across pieces, with a chunk of invalid
// copies that must read as zeros. Outputs are poisoned with NaN first; the expectation is the input itself.
#include <cmath>
#include <cstring>
#include <random>

#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "base/half_bits.h"
#include "tests/runtime/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using namespace spire::kir;

constexpr uint32_t kInvocations = 32, kChunks = 5, kZeroChunk = 2;

// out[i] = f32(in[i]), except chunk kZeroChunk's elements = 0, through a pipeline of copies `stages` deep: round c
// waits until at most stages - 2 batches fly (chunk c has landed), reads chunk c and refills the stage chunk c - 1 used.
// `unrolled`: the loop runs laps of `stages` rounds, each round its own copy statement (so the backend keeps
// stages - 1 chunks in registers across the waits), the rounds past the last whole lap after it.
kir::Kernel pipeline_kernel(Type t, uint32_t stages, bool unrolled) {
  const uint32_t per_piece = 16 / dtype_bytes(t), chunk = per_piece * kInvocations;
  KernelBuilder kb(std::string("copy_pipeline_") + std::string(dtype_name(t)), kInvocations);
  auto in = kb.buffer("in", t, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto tile = kb.shared("tile", t, stages * chunk);
  Val lid = kb.local_id();
  auto copy = [&](Val c) {  // this invocation's piece of chunk c into stage c % stages
    kb.copy_to_shared(tile, (c % stages) * chunk + lid * per_piece, in, c * chunk + lid * per_piece, c != kZeroChunk);
  };
  for (uint32_t c = 0; c + 1 < stages; ++c) {
    copy(kb.u32(c));
    kb.copy_commit();
  }
  auto round = [&](Val c) {
    kb.copy_wait(stages - 2);
    kb.barrier();
    kb.if_(c + (stages - 1) < kChunks, [&] { copy(c + (stages - 1)); });
    kb.copy_commit();
    // Element j of the chunk comes from piece j / per_piece: another invocation's copy for most j.
    for (uint32_t e = 0; e < per_piece; ++e) {
      Val j = lid + e * kInvocations;
      out[c * chunk + j] = cast(Val(tile[(c % stages) * chunk + j]), Type::F32);
    }
  };
  if (!unrolled) {
    kb.for_(kb.u32(0), kb.u32(kChunks), round);
    return kb.finish();
  }
  kb.for_(kb.u32(0), kb.u32(kChunks / stages), [&](Val lap) {
    for (uint32_t r = 0; r < stages; ++r) round(lap * stages + r);
  });
  for (uint32_t c = kChunks / stages * stages; c < kChunks; ++c) round(kb.u32(c));
  return kb.finish();
}

class VulkanAsyncCopy : public VulkanTest, public testing::WithParamInterface<std::tuple<Type, uint32_t, bool>> {};

TEST_P(VulkanAsyncCopy, PipelinedCopiesLandBeforeTheBarrierAfterTheirWait) {
  const auto [t, stages, unrolled] = GetParam();
  if (!dev().info().features.has(Feature::AsyncCopy)) GTEST_SKIP() << dev().info().id << " has no async-copy";
  if (t == Type::F16 && !dev().info().features.has(Feature::Float16)) GTEST_SKIP() << dev().info().id << " has no float16";
  const uint32_t bytes = dtype_bytes(t), per_piece = 16 / bytes, chunk = per_piece * kInvocations, n = kChunks * chunk;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> want(n);
  std::vector<uint8_t> raw(size_t(n) * bytes);
  for (uint32_t i = 0; i < n; ++i) {
    float v = dist(rng);
    if (t == Type::F16) {
      const uint16_t h = f32_to_f16_bits(v);
      std::memcpy(&raw[size_t(i) * 2], &h, 2);
      v = f16_bits_to_f32(h);
    } else {
      std::memcpy(&raw[size_t(i) * 4], &v, 4);
    }
    want[i] = i / chunk == kZeroChunk ? 0.0f : v;
  }
  auto k = spire::backends::compile_and_load(dev(), pipeline_kernel(t, stages, unrolled));
  auto in = dev().alloc(raw.size()), out = dev().alloc(size_t(n) * 4);
  dev().upload(*in, raw.data(), raw.size());
  const std::vector<float> poison(n, std::nanf(""));
  dev().upload(*out, poison.data(), poison.size() * 4);
  BufferView views[] = {BufferView(in), BufferView(out)};
  dev().dispatch_now(*k, views, ScalarArgs(), Grid::threads(kInvocations, kInvocations));
  EXPECT_EQ(download_vector<float>(dev(), *out, n), want);
}

// 2 stages, and 3 and 4, whose waits leave the newest 1 or 2 batches in flight (one copy statement per round: each
// lands when it runs again; unrolled: at the wait that covers it, backends/spirv/copy_plan.h).
INSTANTIATE_TEST_SUITE_P(ElementTypesAndStages, VulkanAsyncCopy,
                         testing::Combine(testing::Values(Type::F32, Type::F16), testing::Values(2u, 3u, 4u),
                                          testing::Bool()),
                         [](const testing::TestParamInfo<std::tuple<Type, uint32_t, bool>>& p) {
                           return std::string(dtype_name(std::get<0>(p.param))) + "_" +
                                  std::to_string(std::get<1>(p.param)) + "_stages" +
                                  (std::get<2>(p.param) ? "_unrolled" : "");
                         });

}  // namespace
}  // namespace spire::rt::vulkan::test
