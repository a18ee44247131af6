#include "kernels/matvec_kernel.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

namespace {
// Elements of a normed row an invocation holds in registers (matvec_kernel's RowNorm): 16 of 256 invocations cover
// rows of 4096 (Llama's 2048, GPT-2's 768 and 3072).
constexpr uint32_t kNormHeld = 16;
}  // namespace

using namespace kir;

namespace {

constexpr uint32_t T = kMatvecWorkgroup;
// The heuristic's aim (choose_matvec_slices): at least this many workgroups. Fitted to the device times of every
// product in a decode step, where each weight is read once from memory, of Llama 3.2 1B and GPT-2 in bf16 on the H200
// (docs/DECODERS.md): 64 workgroups had given Llama's 2048 x 2048 and 8192 x 2048 products 8 and 16 slices, 256 give
// them 32 (9.0 -> 8.0 us, 14.8 -> 13.2), and more slices than 256 workgroups need were slower (the 2048 x 8192
// products 14.0 us with 8 slices, 16.7 with 16, 17.7 with 32).
constexpr uint64_t kLeastWorkgroups = 256;
constexpr uint32_t kGpuUnroll = 16;

// A B with a batch stride of its own: one product per batch (rows = M), each workgroup in one batch; else one product
// of every batch's rows (rows = batches x M) by the one B.
bool per_batch(const MatmulShape& s) {
  for (int64_t stride : s.b_batch_strides)
    if (stride != 0) return true;
  return false;
}
int64_t rows_of(const MatmulShape& s) { return per_batch(s) ? s.m : s.batch_count() * s.m; }
int64_t products_of(const MatmulShape& s) { return per_batch(s) ? s.batch_count() : 1; }

// Elements of B one invocation reads at a K unit, widened in registers where they are half: 16 bytes where the
// products sum in f32 and rows of B's contiguous extent start on 16 bytes (4 f32 elements in one read, 8 f16 or bf16
// ones in two 8-byte reads, the widest 16-bit read kir has), else 4 half elements (8 bytes) where rows start on 8
// bytes, else 1. Half weights read one 2-byte element at a time ran at a quarter of the copy bandwidth (Llama 1B,
// docs/DECODERS.md). 8 lanes only for at most 2 rows: B [K, N]'s partial sums (rows x 256 x lanes f32) then take at
// most 16 KiB, what every Vulkan device has.
uint32_t lanes_of(const MatmulShape& s, Type t) {
  if (t != Type::F32) return 1;
  const int64_t extent = s.b_transposed ? s.k : s.n;
  if (s.b_half && extent % 8 == 0 && rows_of(s) <= 2) return 8;
  return extent % 4 == 0 ? 4 : 1;
}

// Workgroup memory of the partial sums: a row's per invocation (and lane, for B).
uint64_t partial_bytes(const MatmulShape& s, Type t) {
  return uint64_t(rows_of(s)) * T * (s.b_transposed ? 1 : lanes_of(s, t)) * dtype_bytes(t);
}

// A RowNorm's normalized rows are staged in workgroup memory where they and the partial sums take at most this much
// (a row of K = 4096 f32): the product then reads each normalized element once from there instead of A, the norm's
// scale and its bias from memory and normalizing it again for every K unit (3.4x slower on NVIDIA's Vulkan driver,
// 2.8x on lavapipe, for GPT-2's [768, 2304] projection). Longer rows are normalized as read.
constexpr uint64_t kMostStagedBytes = 32 * 1024;
bool stages_norm(const MatmulShape& s, Type t) {
  return partial_bytes(s, t) + uint64_t(rows_of(s)) * uint64_t(s.k) * dtype_bytes(t) <= kMostStagedBytes;
}

// Units of K an invocation strides over: rows of B [K, N], or lanes-wide pieces of a row of B^T [N, K].
int64_t units_of(const MatmulShape& s, Type t) { return s.b_transposed ? s.k / lanes_of(s, t) : s.k; }

// Output columns one workgroup covers.
uint32_t columns_per_group(const MatmulShape& s, Type t, uint32_t slices) {
  return s.b_transposed ? T / slices : lanes_of(s, t) * (T / slices);
}

// Workgroups of one product.
uint64_t column_groups(const MatmulShape& s, Type t, uint32_t slices) {
  const uint32_t c = columns_per_group(s, t, slices);
  return (uint64_t(s.n) + c - 1) / c;
}
uint64_t groups_of(const MatmulShape& s, Type t, uint32_t slices) {
  return uint64_t(products_of(s)) * column_groups(s, t, slices);
}

}  // namespace

bool matmul_fits_matvec(const MatmulShape& s, Type t, const Limits& limits) {
  if (rows_of(s) < 1 || rows_of(s) > kMatvecMostRows || s.a_transposed || s.k < 1 || s.n < 1) return false;
  if (limits.max_invocations < T) return false;
  // The partial sums: a row's per invocation (and lane, for B).
  return partial_bytes(s, t) <= limits.shared_bytes;
}

bool matvec_takes_row_norm(const MatmulShape& s, Type t, const Limits& limits) {
  return matmul_fits_matvec(s, t, limits) && !per_batch(s);
}

std::vector<uint32_t> matvec_slice_candidates(const MatmulShape& s, Type t) {
  const int64_t units = units_of(s, t);
  std::vector<uint32_t> out;
  // B [K, N]: 2 to 128 slices (128 to 2 column groups of lanes: a row's 32 bytes still fill a memory sector); B^T: 8
  // to 256 (32 columns to one a workgroup).
  for (uint32_t slices = s.b_transposed ? 8 : 2; slices <= (s.b_transposed ? 256u : 128u); slices *= 2)
    if (slices <= units || out.empty()) out.push_back(slices);
  return out;
}

uint32_t choose_matvec_slices(const MatmulShape& s, Type t, const Limits& limits) {
  const std::vector<uint32_t> c = matvec_slice_candidates(s, t);
  // A CPU device runs workgroups on a few cores: more of them buys nothing, and each slice's partial sums cost.
  if (limits.cpu) return c[0];
  // Few slices keep a workgroup's reads of a row of B long (sectors and DRAM pages used whole) and its partial sums
  // few, but leave each invocation a long chain of reads and the GPU few workgroups.
  for (uint32_t slices : c)
    if (groups_of(s, t, slices) >= kLeastWorkgroups) return slices;
  return c.back();
}

// Past 256 workgroups, the most units of K an invocation reads in one iteration (choose_matvec_tiling).
constexpr uint32_t kMostUnitsInOneRound = 8;

MatmulTiling choose_matvec_tiling(const MatmulShape& s, Type t, const Limits& limits) {
  MatmulTiling tiling;
  tiling.matvec_slices = choose_matvec_slices(s, t, limits);
  // On a GPU, 16 units of reads in flight an invocation: a slice's whole share of a short K is then straight-line code
  // whose reads all issue at once. A CPU device keeps the smaller loop body.
  tiling.unroll = limits.cpu ? kMatvecUnroll : kGpuUnroll;
  // Past 256 workgroups the grid takes more than one round of the GPU's workgroup slots, and registers then cost more
  // than reads in flight gain: an invocation's share of K is read in the fewest units an iteration that still take it
  // in one (4 or 8), and a share longer than 8 units 4 at a time (4 units take 56 registers where 16 take 80 on
  // ptxas for the H200: 4 workgroups of 256 a multiprocessor, not 3). With caches flushed before each run (Nsight
  // Compute, H200), the bf16 B^T [16384, 2048] product (Llama 1B's gate and up projections merged, 512 workgroups, 32
  // units a share) took 18.1 us with 4 units against 22.2 with 16, while the 256-workgroup [8192, 2048] one was faster
  // with 16 (10.75 us against 11.62). Decode steps on the H200, builds alternating in one run: Llama 1B bf16 930 ->
  // 1055-1065 tokens/s with this and its products merged (passes/merged_products.h; 929 with the rule alone, 923 with
  // the merge alone); GPT-2 unchanged (f32 2627-2668 -> 2626-2653, bf16 2785-2815 -> 2793-2805), where 4 units past
  // 256 workgroups whatever the share cost cuda:0 2-6% in f32 (shares of 6 units then took two rounds of reads). A
  // share of 9 to 16 units read in one iteration of 16 holds up to 128 widened values an invocation: GPT-2's bf16 head
  // (B^T [50257, 768], 1571 workgroups, 12 units a share) took 39.7 us of a decode step in one iteration and 25.1 in
  // three of 4 (profiled, H200), and GPT-2 bf16 decoded 2830-2884 -> 3000-3046 tokens/s on cuda:0 by turns in one
  // run (2026-12-01; vulkan:0 2496 -> 2484, the same tokens).
  if (!limits.cpu && groups_of(s, t, tiling.matvec_slices) > kLeastWorkgroups) {
    const int64_t share = (units_of(s, t) + tiling.matvec_slices - 1) / tiling.matvec_slices;
    tiling.unroll = kMatvecUnroll;
    for (uint32_t u : kMatvecUnrolls)
      if (share <= int64_t(u) && u <= kMostUnitsInOneRound) {
        tiling.unroll = u;
        break;
      }
  }
  return tiling;
}

std::vector<MatmulTiling> matvec_candidates(const MatmulShape& s, Type t, const Limits& limits) {
  std::vector<MatmulTiling> out{choose_matvec_tiling(s, t, limits)};
  for (uint32_t slices : matvec_slice_candidates(s, t))
    for (uint32_t unroll : kMatvecUnrolls) {
      MatmulTiling c;
      c.matvec_slices = slices;
      c.unroll = unroll;
      if (!(c == out.front())) out.push_back(c);
    }
  return out;
}

bool matvec_pairs(const MatmulShape& s, uint32_t slices) {
  return s.b_transposed && s.n % 2 == 0 && slices >= 1 && slices <= T / 2 && !per_batch(s);
}

HeavyKernel matvec_kernel(const MatmulShape& s, Type t, uint32_t slices, const std::optional<RowNorm>& norm,
                          uint32_t subgroup, uint32_t unroll, const MatvecPair* pair) {
  // (matmul_checked_name's checks but one: this kernel reads a batched B transposed too.)
  for (int64_t extent : {s.m, s.k, s.n, s.batch_count(), s.batch_count() * s.m * s.n, s.batch_count() * s.k * s.n})
    index_u32(extent, "matvec extents");
  const std::string name = fmt::format("matvec_{}{}_s{}{}_{}{}", s.text(), norm ? norm->tag() : "", slices,
                                       unroll == kMatvecUnroll ? "" : fmt::format("_u{}", unroll), float_suffix(t, "matmul"),
                                       pair ? "_paired" : "");
  if (!matmul_fits_matvec(s, t, Limits{.shared_bytes = 1u << 30, .max_invocations = T}))
    throw std::invalid_argument(fmt::format("{}: not a product of at most {} rows by one matrix", name, kMatvecMostRows));
  if (norm && !matvec_takes_row_norm(s, t, Limits{.shared_bytes = 1u << 30, .max_invocations = T}))
    throw std::invalid_argument(fmt::format("{}: a norm of A's rows needs one B for every row", name));
  if (slices < 1 || slices > T || T % slices != 0)
    throw std::invalid_argument(fmt::format("{}: {} slices do not divide a workgroup of {}", name, slices, T));
  if (unroll < 1 || unroll > 32) throw std::invalid_argument(fmt::format("{}: unroll {} is not 1 to 32", name, unroll));
  if (pair && (!matvec_pairs(s, slices) || uint64_t(pair->half) * 2 != uint64_t(s.n)))
    throw std::invalid_argument(fmt::format("{}: pairs columns n and {} + n of B^T [{}, K] with at most {} slices", name,
                                            pair->half, s.n, T / 2));
  const uint32_t R = uint32_t(rows_of(s)), K = uint32_t(s.k), N = uint32_t(s.n);
  if (uint64_t(R) * N * products_of(s) == 0) return empty_result(name);
  const uint32_t L = lanes_of(s, t), units = uint32_t(units_of(s, t)), C = columns_per_group(s, t, slices);
  // Paired: a workgroup's first C / 2 columns are n = group * C / 2 + i < H, its others H + n.
  const uint32_t H = pair ? pair->half : 0, P = C / 2;
  const uint32_t column_groups_of_product = pair ? (H + P - 1) / P : uint32_t(column_groups(s, t, slices));
  const Type b_type = s.b_half.value_or(t);

  KernelBuilder kb(name, T);
  Buf A = kb.buffer("a", s.a_half.value_or(t), Access::Read);
  Buf B = kb.buffer("b", b_type, Access::Read);
  Buf Y = kb.buffer("c", pair && pair->combine ? pair->out : t, Access::Write);
  std::optional<Buf> scale, bias;
  if (norm) scale = kb.buffer("scale", norm->scale, Access::Read);
  if (norm && norm->center) bias = kb.buffer("bias", norm->bias, Access::Read);
  Shared partial = kb.shared("partial", t, R * T * (s.b_transposed ? 1 : L));
  std::optional<Shared> staged;  // the normalized rows (stages_norm)
  if (norm && stages_norm(s, t)) staged = kb.shared("normalized", t, R * K);
  const uint64_t groups = uint64_t(products_of(s)) * column_groups_of_product;
  std::optional<Shared> pair_sums;  // [row][column of the group]: the sums, read in pairs
  if (pair) pair_sums = kb.shared("pair_sums", t, R * C);
  kb.if_(kb.group_id() < uint32_t(groups), [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val lid = kb.local_id();
    // The product (batch) this workgroup computes and its block of columns there; the products' offsets into A, B and
    // the result (0 with one product).
    Val product = kb.group_id() / column_groups_of_product, group = kb.group_id() % column_groups_of_product;
    const bool batched = per_batch(s);
    Val a_base = batched ? matmul_batch_offset(kb, s, product, s.a_batch_strides) : kb.u32(0);
    Val b_base = batched ? matmul_batch_offset(kb, s, product, s.b_batch_strides) : kb.u32(0);
    Val y_base = product * (R * N);
    // This invocation's slice, and its column (B^T) or first of L columns (B), clamped to a real one for reading: a
    // column past N is read but never stored.
    Val slice = s.b_transposed ? lid % slices : lid / (T / slices);
    Val local = lid / slices;
    Val column = pair                ? select(local < P, group * P + local, H + group * P + (local - P))
                 : s.b_transposed ? group * C + local
                                  : group * C + (lid % (T / slices)) * L;
    Val read_column = min(column, N - (s.b_transposed ? 1 : L));
    // Partial sums: B^T, one a row (the L elements of a unit lie along K, in one sum); B, one a row and column.
    const uint32_t per_row = s.b_transposed ? 1 : L;
    std::vector<Var> acc;
    for (uint32_t i = 0; i < R * per_row; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
    auto to_t = [&](Val v) { return v.type() == t ? v : cast(v, t); };
    auto raw_a = [&](Val at) { return s.a_half ? cast(A[a_base + at].load(), t) : A[a_base + at].load(); };
    // L consecutive elements of a buffer or workgroup array from `at` on (a multiple of L): one read of up to 4, two
    // of 4 for 8 16-bit ones; a half buffer's widened to f32 as they are loaded (kernel.h's LoadBufferVector::widen).
    auto read_lanes = [&](const auto& buf, Val at) {
      if (L == 1) return std::vector<Val>{buf[at].load()};
      auto load = [&](Val from, uint32_t n) {
        if constexpr (std::is_same_v<std::decay_t<decltype(buf)>, Buf>)
          if (buf.elem() == Type::F16 || buf.elem() == Type::BF16) return buf.load_vector_widened(from, n);
        return buf.load_vector(from, n);
      };
      std::vector<Val> v = load(at, std::min(L, 4u));
      if (L == 8)
        for (Val e : load(at + 4u, 4)) v.push_back(e);
      return v;
    };
    auto read_b = [&](Val at) {
      std::vector<Val> v = read_lanes(B, b_base + at);
      for (Val& e : v) e = to_t(e);
      return v;
    };
    // B's elements at one unit of K (an invocation's lanes).
    auto b_at = [&](Val unit) { return read_b(s.b_transposed ? read_column * K + unit * L : unit * N + read_column); };
    // Units slice, slice + slices, ...: every slice has `whole` of them, the first `extra` slices one more.
    const uint32_t whole = units / slices, extra = units % slices, unrolled = whole / unroll * unroll;
    // One B for every row (a layer's weights, which no kernel of a decoder's step writes) and a slice's whole share in
    // straight-line code: its reads are issued before the kernel waits for the kernel before it (PTX's
    // griddepcontrol.wait, kir::WaitForPriorKernels), so their latency hides behind that kernel's end. (Were B written
    // by the launch before, the runtime launches this one only after it: rt::KernelInterface's read_before_wait.)
    const bool early_b = !batched && unrolled == 0 && whole > 0;
    std::vector<std::vector<Val>> early;  // [i]: B at unit slice + i * slices
    if (early_b) {
      kb.read_before_wait(B);
      for (uint32_t i = 0; i < whole; ++i) early.push_back(b_at(slice + i * slices));
      kb.wait_for_prior_kernels();
    }
    // The norm's statistics of each row (mean 0 for rms_norm), every invocation holding them.
    std::vector<Val> mean(R, kb.constant(t, 0)), rstd(R);
    // Where a row's elements are few enough a thread (rows staged normalized, at most kNormHeld an invocation), each
    // invocation reads its elements e, e + T, ... of every row once, all reads issued together, and computes the
    // statistics and the staged values from its registers: a loop would wait for each read in turn, three times over
    // (the mean, the moment, the staging), which cost a decoder's normed products a third of their time.
    const uint32_t held = (K + T - 1) / T;
    const bool in_registers = norm && staged && held <= kNormHeld;
    std::vector<std::vector<Val>> row_values(R);  // [row][i]: element e + i * T (0 past the row's end)
    std::vector<Val> held_scale, held_bias;        // [i]: the norm's scale and bias there
    Val e;
    if (norm) {
      WorkgroupReduce reduce(kb, T, reduce_subgroup_size(subgroup, T, t));
      e = reduce.element();
      if (in_registers) {
        for (uint32_t r = 0; r < R; ++r)
          for (uint32_t i = 0; i < held; ++i) {
            Val k = e + i * T;
            row_values[r].push_back(select(k < K, to_t(raw_a(r * K + min(k, K - 1))), kb.constant(t, 0)));
          }
        // (The norm's scale and bias at those elements too, read with them.)
        for (uint32_t i = 0; i < held; ++i) {
          Val k = min(e + i * T, K - 1);
          held_scale.push_back(to_t((*scale)[k].load()));
          if (bias) held_bias.push_back(to_t((*bias)[k].load()));
        }
      }
      auto row_sum = [&](uint32_t r, const std::function<Val(Val)>& term) {
        Var acc = kb.var(fmt::format("norm_sum{}", r), kb.constant(t, 0));
        if (in_registers) {
          for (uint32_t i = 0; i < held; ++i) acc += select(e + i * T < K, term(row_values[r][i]), kb.constant(t, 0));
        } else {
          kb.for_(e, kb.u32(K), kb.u32(T), [&](Val k) { acc += term(raw_a(r * K + k)); });
        }
        reduce.reduce(partial, acc.get(), TreeOp::Sum);
        Val total = partial[0u].load();
        kb.barrier();  // every invocation has read the sum before the next one (or the product) writes the scratch
        return total;
      };
      for (uint32_t r = 0; r < R; ++r) {
        if (norm->center) mean[r] = row_sum(r, [](Val a) { return a; }) / kb.constant(t, double(K));
        Val moment = row_sum(r, [&](Val a) {
          Val d = a - mean[r];
          return d * d;
        });
        rstd[r] = kb.constant(t, 1.0) / sqrt(moment / kb.constant(t, double(K)) + kb.constant(t, norm->epsilon));
      }
    }
    // Element k of row r of A as the product reads it: normalized where A is a norm's result.
    auto normalized = [&](Val a, uint32_t r, Val k) {
      if (!norm) return a;
      Val out = (a - mean[r]) * rstd[r] * to_t((*scale)[k].load());
      return bias ? out + to_t((*bias)[k].load()) : out;
    };
    if (staged) {
      if (in_registers)
        for (uint32_t i = 0; i < held; ++i) {
          Val k = e + i * T;
          kb.if_(k < K, [&] {
            for (uint32_t r = 0; r < R; ++r) {
              Val out = (row_values[r][i] - mean[r]) * rstd[r] * held_scale[i];
              (*staged)[r * K + k] = bias ? out + held_bias[i] : out;
            }
          });
        }
      else
        for (uint32_t r = 0; r < R; ++r)
          kb.for_(lid, kb.u32(K), kb.u32(T), [&](Val k) { (*staged)[r * K + k] = normalized(raw_a(r * K + k), r, k); });
      kb.barrier();
    }
    auto read_a = [&](Val k, uint32_t r) {
      return staged ? (*staged)[k + r * K].load() : normalized(raw_a(k + r * K), r, k);
    };
    // One unit of K: its B elements (b, read once) multiplied into every row's sums.
    auto multiply = [&](Val unit, const std::vector<Val>& b) {
      if (s.b_transposed) {
        for (uint32_t r = 0; r < R; ++r) {
          std::vector<Val> x = L == 1  ? std::vector<Val>{read_a(unit, r)}
                               : staged ? read_lanes(*staged, r * K + unit * L)
                                        : read_lanes(A, a_base + (r * K + unit * L));
          if (L > 1 && !staged)
            for (uint32_t j = 0; j < L; ++j) x[j] = normalized(to_t(x[j]), r, unit * L + j);
          Val sum = acc[r].get();
          for (uint32_t j = 0; j < L; ++j) sum = fma(x[j], b[j], sum);
          acc[r] = sum;
        }
      } else {
        for (uint32_t r = 0; r < R; ++r) {
          Val x = read_a(unit, r);
          for (uint32_t j = 0; j < L; ++j) acc[r * L + j] = fma(x, b[j], acc[r * L + j].get());
        }
      }
    };
    auto step = [&](Val unit) { multiply(unit, b_at(unit)); };
    if (unrolled > 0)
      kb.for_(kb.u32(0), kb.u32(unrolled), kb.u32(unroll), [&](Val i) {
        for (uint32_t u = 0; u < unroll; ++u) step((i + u) * slices + slice);
      });
    for (uint32_t i = unrolled; i < whole; ++i) {
      Val unit = slice + i * slices;
      multiply(unit, early_b ? early[i] : b_at(unit));
    }
    if (extra > 0) kb.if_(slice < extra, [&] { step(slice + whole * slices); });
    // Partial sums in workgroup memory, then each output's added up.
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t j = 0; j < per_row; ++j) {
        // B^T: [row][invocation]; B: [row][slice][column of the group].
        Val at = s.b_transposed ? lid + r * T : (slice * C + (lid % (T / slices)) * L + j) + r * slices * C;
        partial[at] = acc[r * per_row + j].get();
      }
    kb.barrier();
    const uint32_t outputs = R * C;
    auto part = [&](Val r, Val c, Val sl) {
      return s.b_transposed ? partial[r * T + c * slices + sl].load() : partial[r * (slices * C) + sl * C + c].load();
    };
    auto store = [&](Val r, Val c, Val sum) {
      if (pair) {
        (*pair_sums)[r * C + c] = sum;
        return;
      }
      Val n = group * C + c;
      kb.if_(n < N, [&] { Y[y_base + r * N + n] = sum; });
    };
    // Threads an output's slices are added by: a power of two, each adding slices p, p + helpers, ... in order, then
    // the helpers' sums pairwise (halves, quarters, ...): one fixed order on every device. With one helper an output's
    // slices are added in slice order.
    uint32_t helpers = 1;
    while (helpers * 2 <= slices && outputs * helpers * 2 <= T) helpers *= 2;
    if (helpers == 1) {
      for (uint32_t q = 0; q < (outputs + T - 1) / T; ++q) {
        Val o = lid + q * T;
        kb.if_(o < outputs, [&] {
          Val r = o / C, c = o % C;
          Var sum = kb.var(fmt::format("sum{}", q), part(r, c, kb.u32(0)));
          if (slices > 1) kb.for_(kb.u32(1), kb.u32(slices), kb.u32(1), [&](Val sl) { sum = sum.get() + part(r, c, sl); });
          store(r, c, sum.get());
        });
      }
    } else {
      Val o = lid / helpers, helper = lid % helpers;
      Val r = min(o, kb.u32(outputs - 1)) / C, c = min(o, kb.u32(outputs - 1)) % C;  // (invocations past the outputs idle)
      Val sum = part(r, c, helper);
      for (uint32_t j = 1; j < slices / helpers; ++j) sum = sum + part(r, c, helper + j * helpers);
      kb.barrier();  // every partial is read before the sums overwrite them
      partial[lid] = sum;
      for (uint32_t half = helpers / 2; half >= 1; half /= 2) {
        kb.barrier();
        kb.if_(helper < half, [&] { partial[lid] = partial[lid].load() + partial[lid + half].load(); });
      }
      kb.if_((helper == 0u) & (o < outputs), [&] { store(r, c, partial[lid].load()); });
    }
    if (pair) {
      // Each pair's two sums, from the invocations that added them up.
      kb.barrier();
      for (uint32_t q = 0; q < (R * P + T - 1) / T; ++q) {
        Val o = lid + q * T;
        kb.if_(o < R * P, [&] {
          Val r = o / P, i = o % P, n = group * P + i;
          Val first = (*pair_sums)[r * C + i].load(), second = (*pair_sums)[r * C + P + i].load();
          kb.if_(n < H, [&] {
            if (pair->combine) {
              Y[r * H + n] = pair->combine(kb, r * H + n, first, second);
            } else {
              Y[r * N + n] = first;
              Y[r * N + H + n] = second;
            }
          });
        });
      }
    }
  });
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
