#include "kernels/channels_last_kernel.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

HeavyKernel channels_last_kernel(Type t, uint32_t batches, uint32_t channels, uint32_t positions, uint32_t depth) {
  constexpr uint32_t kBlock = 32, kRows = 8;  // a 32 x 32 block moved by 32 x 8 invocations, 4 elements each
  constexpr uint32_t kLd = kBlock + 1;        // a padded block row: the column reads fall in different banks
  if (depth == 0) depth = channels;
  if (depth < channels)
    throw std::invalid_argument(fmt::format("channels last: {} channels do not fit rows of {}", channels, depth));
  std::string name = fmt::format("channels_last_{}_b{}_c{}_p{}{}", dtype_name(t), batches, channels, positions,
                                 depth > channels ? fmt::format("_d{}", depth) : "");
  if (uint64_t(batches) * channels * positions == 0) return empty_result(name);
  index_u32(uint64_t(batches) * depth * positions, "channels-last elements");
  const uint32_t blocks_c = (depth + kBlock - 1) / kBlock, blocks_p = (positions + kBlock - 1) / kBlock;
  KernelBuilder kb(std::move(name), kBlock * kRows);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  // Staged as f32 (kir keeps bf16 out of workgroup memory outside matrix kernels): widening a 16-bit value and rounding
  // it back is exact, so every element arrives as it was stored.
  const bool narrow = t == Type::F16 || t == Type::BF16;
  const Type staged = narrow ? Type::F32 : t;
  Shared block = kb.shared("block", staged, kBlock * kLd);
  Val zero = staged == Type::F32 ? kb.f32(0) : cast(kb.f32(0), staged);
  Val group = kb.group_id(), lid = kb.local_id();
  Val batch = group / (blocks_c * blocks_p), rest = group % (blocks_c * blocks_p);
  Val c0 = (rest / blocks_p) * kBlock, p0 = (rest % blocks_p) * kBlock;
  Val tx = lid % kBlock, ty = lid / kBlock;
  // Uniform across the workgroup (a folded grid's extra workgroups skip everything, the barrier included).
  kb.if_(batch < batches, [&] {
    for (uint32_t r = 0; r < kBlock; r += kRows) {  // rows of channels, positions along them
      Val c = c0 + ty + r, p = p0 + tx;
      Val to = (ty + r) * kLd + tx;
      kb.if_((c < depth) & (p < positions), [&] {
        kb.if_else(
            c < channels,
            [&] {
              Val v = x[batch * (channels * positions) + c * positions + p];
              block[to] = narrow ? cast(v, Type::F32) : v;
            },
            [&] { block[to] = zero; });
      });
    }
    kb.barrier();
    for (uint32_t r = 0; r < kBlock; r += kRows) {  // rows of positions, channels along them
      Val p = p0 + ty + r, c = c0 + tx;
      kb.if_((c < depth) & (p < positions), [&] {
        Val v = block[tx * kLd + ty + r];
        y[batch * (depth * positions) + p * depth + c] = narrow ? cast(v, t) : v;
      });
    }
  });
  return {kb.finish(), uint64_t(batches) * blocks_c * blocks_p};
}

}  // namespace spire::lowering::heavy
