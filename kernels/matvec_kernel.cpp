#include "kernels/matvec_kernel.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t T = kMatvecWorkgroup;
// K steps an invocation's loop takes per iteration: their reads are issued before the multiply-adds that wait on
// them, so each invocation keeps several reads in flight.
constexpr uint32_t kUnroll = 4;
// The heuristic's aims (choose_matvec_slices).
constexpr uint64_t kWantedWorkgroups = 256;
constexpr int64_t kLeastUnitsPerSlice = 4;

// A B with a batch stride of its own: one product per batch (rows = M), each workgroup in one batch; else one product
// of every batch's rows (rows = batches x M) by the one B.
bool per_batch(const MatmulShape& s) {
  for (int64_t stride : s.b_batch_strides)
    if (stride != 0) return true;
  return false;
}
int64_t rows_of(const MatmulShape& s) { return per_batch(s) ? s.m : s.batch_count() * s.m; }
int64_t products_of(const MatmulShape& s) { return per_batch(s) ? s.batch_count() : 1; }

// Elements of B one invocation reads at a K unit: 4 (one 16-byte read of f32, one 8-byte read of f16 or bf16, widened
// in registers) where the products sum in f32 and rows of B's contiguous extent start on 4 elements; else 1. Half
// weights read one 2-byte element at a time ran at a quarter of the copy bandwidth (Llama 1B, docs/DECODERS.md).
uint32_t lanes_of(const MatmulShape& s, Type t) {
  // (Along B^T's K, A is read 4 at a time too.)
  return t == Type::F32 && (s.b_transposed ? s.k : s.n) % 4 == 0 ? 4 : 1;
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
  return uint64_t(rows_of(s)) * T * (s.b_transposed ? 1 : lanes_of(s, t)) * dtype_bytes(t) <= limits.shared_bytes;
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
  const int64_t units = units_of(s, t);
  size_t i = 0;
  // A CPU device runs workgroups on a few cores: more of them buys nothing, and each slice's partial sums cost.
  if (limits.cpu) return c[0];
  while (i + 1 < c.size() && groups_of(s, t, c[i]) < kWantedWorkgroups && units / c[i + 1] >= kLeastUnitsPerSlice) ++i;
  return c[i];
}

HeavyKernel matvec_kernel(const MatmulShape& s, Type t, uint32_t slices, const std::optional<RowNorm>& norm,
                          uint32_t subgroup) {
  // (matmul_checked_name's checks but one: this kernel reads a batched B transposed too.)
  for (int64_t extent : {s.m, s.k, s.n, s.batch_count(), s.batch_count() * s.m * s.n, s.batch_count() * s.k * s.n})
    index_u32(extent, "matvec extents");
  const std::string name =
      fmt::format("matvec_{}{}_s{}_{}", s.text(), norm ? norm->tag() : "", slices, float_suffix(t, "matmul"));
  if (!matmul_fits_matvec(s, t, Limits{.shared_bytes = 1u << 30, .max_invocations = T}))
    throw std::invalid_argument(fmt::format("{}: not a product of at most {} rows by one matrix", name, kMatvecMostRows));
  if (norm && !matvec_takes_row_norm(s, t, Limits{.shared_bytes = 1u << 30, .max_invocations = T}))
    throw std::invalid_argument(fmt::format("{}: a norm of A's rows needs one B for every row", name));
  if (slices < 1 || slices > T || T % slices != 0)
    throw std::invalid_argument(fmt::format("{}: {} slices do not divide a workgroup of {}", name, slices, T));
  const uint32_t R = uint32_t(rows_of(s)), K = uint32_t(s.k), N = uint32_t(s.n);
  if (uint64_t(R) * N * products_of(s) == 0) return empty_result(name);
  const uint32_t column_groups_of_product = uint32_t(column_groups(s, t, slices));
  const uint32_t L = lanes_of(s, t), units = uint32_t(units_of(s, t)), C = columns_per_group(s, t, slices);
  const Type b_type = s.b_half.value_or(t);

  KernelBuilder kb(name, T);
  Buf A = kb.buffer("a", s.a_half.value_or(t), Access::Read);
  Buf B = kb.buffer("b", b_type, Access::Read);
  Buf Y = kb.buffer("c", t, Access::Write);
  std::optional<Buf> scale, bias;
  if (norm) scale = kb.buffer("scale", norm->scale, Access::Read);
  if (norm && norm->center) bias = kb.buffer("bias", norm->bias, Access::Read);
  Shared partial = kb.shared("partial", t, R * T * (s.b_transposed ? 1 : L));
  const uint64_t groups = groups_of(s, t, slices);
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
    Val column = s.b_transposed ? group * C + lid / slices : group * C + (lid % (T / slices)) * L;
    Val read_column = min(column, N - (s.b_transposed ? 1 : L));
    // Partial sums: B^T, one a row (the L elements of a unit lie along K, in one sum); B, one a row and column.
    const uint32_t per_row = s.b_transposed ? 1 : L;
    std::vector<Var> acc;
    for (uint32_t i = 0; i < R * per_row; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
    auto widened = [&](Val v) { return s.b_half ? cast(v, t) : v; };
    auto to_t = [&](Val v) { return v.type() == t ? v : cast(v, t); };
    auto raw_a = [&](Val at) { return s.a_half ? cast(A[a_base + at].load(), t) : A[a_base + at].load(); };
    // The norm's statistics of each row (mean 0 for rms_norm), every invocation holding them.
    std::vector<Val> mean(R, kb.constant(t, 0)), rstd(R);
    if (norm) {
      WorkgroupReduce reduce(kb, T, reduce_subgroup_size(subgroup, T, t));
      Val e = reduce.element();
      auto row_sum = [&](uint32_t r, const std::function<Val(Val)>& term) {
        Var acc = kb.var(fmt::format("norm_sum{}", r), kb.constant(t, 0));
        kb.for_(e, kb.u32(K), kb.u32(T), [&](Val k) { acc += term(raw_a(r * K + k)); });
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
    auto read_a = [&](Val k, uint32_t r) { return normalized(raw_a(k + r * K), r, k); };
    auto read_b = [&](Val at) {
      at = b_base + at;
      if (L == 1) return std::vector<Val>{widened(B[at].load())};
      std::vector<Val> v = B.load_vector(at, L);
      for (Val& e : v) e = widened(e);
      return v;
    };
    // One unit of K: its B elements read once, multiplied into every row's sums.
    auto step = [&](Val unit) {
      if (s.b_transposed) {
        const std::vector<Val> b = read_b(read_column * K + unit * L);
        for (uint32_t r = 0; r < R; ++r) {
          std::vector<Val> x = L == 4 ? A.load_vector(a_base + (r * K + unit * L), 4) : std::vector<Val>{read_a(unit, r)};
          if (L == 4)
            for (uint32_t j = 0; j < L; ++j) x[j] = normalized(to_t(x[j]), r, unit * L + j);
          Val sum = acc[r].get();
          for (uint32_t j = 0; j < L; ++j) sum = fma(x[j], b[j], sum);
          acc[r] = sum;
        }
      } else {
        const std::vector<Val> b = read_b(unit * N + read_column);
        for (uint32_t r = 0; r < R; ++r) {
          Val x = read_a(unit, r);
          for (uint32_t j = 0; j < L; ++j) acc[r * L + j] = fma(x, b[j], acc[r * L + j].get());
        }
      }
    };
    // Units slice, slice + slices, ...: every slice has `whole` of them, the first `extra` slices one more.
    const uint32_t whole = units / slices, extra = units % slices, unrolled = whole / kUnroll * kUnroll;
    if (unrolled > 0)
      kb.for_(kb.u32(0), kb.u32(unrolled), kb.u32(kUnroll), [&](Val i) {
        for (uint32_t u = 0; u < kUnroll; ++u) step((i + u) * slices + slice);
      });
    for (uint32_t i = unrolled; i < whole; ++i) step(slice + i * slices);
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
  });
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
