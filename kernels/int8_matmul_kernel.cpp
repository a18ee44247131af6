#include "kernels/int8_matmul_kernel.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kWorkgroup = 64;

// Byte b of `word` (i32) as a signed integer of float type t: shifted to the top, then arithmetically back down.
Val int8_byte(Val word, uint32_t b, Type t) { return cast((word << int32_t(24 - 8 * b)) >> 24, t); }

}  // namespace

HeavyKernel int8_matmul_kernel(const Int8MatmulShape& s, Type t, uint32_t subgroup) {
  const std::string name = fmt::format("matmul_int8_weight_r{}_k{}_n{}_{}", s.rows, s.k, s.n,
                                       float_suffix(t, "matmul_int8_weight"));
  index_u32(s.rows * s.k, "matmul_int8_weight x elements");
  index_u32(s.rows * s.n, "matmul_int8_weight result elements");
  index_u32(s.n * ((s.k + 3) / 4), "matmul_int8_weight weight words");
  if (s.rows * s.n == 0) return empty_result(name);
  const uint32_t K = uint32_t(s.k), N = uint32_t(s.n), rows = uint32_t(s.rows);
  const uint32_t words = (K + 3) / 4, full_words = K / 4, tail = K % 4;
  const uint32_t block = uint32_t(std::min<int64_t>(s.rows, kInt8RowsPerGroup));
  const uint32_t blocks = (rows + block - 1) / block;

  KernelBuilder kb(name, kWorkgroup);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf w = kb.buffer("w", Type::I32, Access::Read);
  Buf scale = kb.buffer("scale", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Shared scratch = kb.shared("partial", t, kWorkgroup);
  WorkgroupReduce reduce(kb, kWorkgroup, reduce_subgroup_size(subgroup, kWorkgroup, t));
  Val lid = reduce.element();
  Val group = kb.group_id();
  kb.if_(group < N * blocks, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val n = group % N, first_row = (group / N) * block;
    // The block's rows, the last block's missing ones read as its last row (their sums are never stored).
    std::vector<Val> row_base;
    std::vector<Var> acc;
    for (uint32_t r = 0; r < block; ++r) {
      row_base.push_back(min(first_row + r, rows - 1) * K);
      acc.push_back(kb.var(fmt::format("acc{}", r), kb.constant(t, 0)));
    }
    Val weight_row = n * words;
    // Each word's four weights, widened once and used for every row of the block.
    kb.for_(lid, kb.u32(full_words), kb.u32(kWorkgroup), [&](Val j) {
      Val word = w[weight_row + j].load();
      Val q[4];
      for (uint32_t b = 0; b < 4; ++b) q[b] = int8_byte(word, b, t);
      for (uint32_t r = 0; r < block; ++r) {
        Val at = row_base[r] + j * 4u;
        Val sum = x[at].load() * q[0];
        for (uint32_t b = 1; b < 4; ++b) sum = fma(x[at + b].load(), q[b], sum);
        acc[r] += sum;
      }
    });
    if (tail > 0)  // the last word's first K % 4 bytes; the rest are padding
      kb.if_(lid == 0u, [&] {
        Val word = w[weight_row + full_words].load();
        for (uint32_t r = 0; r < block; ++r)
          for (uint32_t b = 0; b < tail; ++b) acc[r] += x[row_base[r] + (full_words * 4 + b)].load() * int8_byte(word, b, t);
      });
    for (uint32_t r = 0; r < block; ++r) {
      reduce.reduce(scratch, acc[r].get(), TreeOp::Sum);
      Val row = first_row + r;
      kb.if_((lid == 0u) & (row < rows), [&] { y[row * N + n] = scratch[0u].load() * scale[n].load(); });
      kb.barrier();  // every invocation has read the sum before the next reduction writes the scratch
    }
  });
  return {kb.finish(), uint64_t(N) * blocks};
}

}  // namespace spire::lowering::heavy
