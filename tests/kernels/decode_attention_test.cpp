// Attention at a few queries in one launch (kernels/decode_attention_kernel.h) on every device, against attention
// computed in float64 here: one to four queries, keys fewer than, equal to and more than the workgroup (with a ragged
// last round), depths read four elements at a time and one at a time, value depths narrower than the workgroup, equal
// to it and wider (two passes), f16 and bf16 operands widened as read, a score function that scales and masks (a
// decoder's), a small workgroup, f64 sums, the step's new key and value rows written into the caches (the caches read
// back whole afterwards), and grouped-query attention (several query heads reading one key-value head); the output
// poisoned before the launch.
//
// Tolerance: an output is sum_j p_j v_j with p_j = e_j / sum e: the f32 dot products (D terms), the exponentials and
// the L-term sums each round by a few ulp relative to sum_j p_j |v_j| (the scale passed to compare): 2e-5 relative
// for L up to 700 here (L * 2^-24 < 5e-5 in the worst case; random signs keep it far below). f64: 1e-12.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "kernels/decode_attention_kernel.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"

namespace decode_attention_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

// batches x rows queries of depth against keys keys, values of value_depth; f32 operands, no groups.
heavy::DecodeAttentionShape shape(int64_t batches, int64_t rows, int64_t keys, int64_t depth, int64_t value_depth) {
  heavy::DecodeAttentionShape s;
  s.batches = batches, s.rows = rows, s.keys = keys, s.depth = depth, s.value_depth = value_depth;
  return s;
}

struct AttentionCase {
  int64_t batches, rows, keys, depth, value_depth;
  graph::DType half = graph::DType::F32;  // k and v stored so (q too with half_q)
  bool half_q = false;
  bool masked = true;  // the score: scaled by 1/sqrt(depth), every third key masked with the f32 minimum
  uint32_t wg = heavy::kDecodeAttentionWorkgroup;
  bool f64 = false;
  bool writes = false;  // new rows written at slot keys / 2 of k and v (whose rows there hold other values before)
  uint32_t columns = 0;  // value columns a workgroup (0: all, up to the workgroup)
  int64_t group = 1;     // query heads (batches) sharing one batch of k and v (grouped-query attention)
};

constexpr double kLowest = -3.4028234663852886e38;  // the f32 minimum, as a decoder's mask writes it

bool masked_out(const AttentionCase& c, int64_t j) { return c.masked && c.keys > 1 && j % 3 == 2; }

// Attention in float64 from the inputs' (rounded) values, and sum_j p_j |v_j|, the bound's scale.
std::pair<graph::Tensor, graph::Tensor> reference(const AttentionCase& c, const graph::Tensor& q, const graph::Tensor& k,
                                                  const graph::Tensor& v) {
  const int64_t B = c.batches, R = c.rows, L = c.keys, D = c.depth, Dv = c.value_depth;
  graph::Tensor out(graph::DType::F64, {B, R, Dv}, 0.0), scale(graph::DType::F64, {B, R, Dv}, 0.0);
  const double factor = c.masked ? 1.0 / std::sqrt(double(D)) : 1.0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r) {
      std::vector<double> s(static_cast<size_t>(L));
      double most = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < L; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[(b * R + r) * D + d] * k[(b / c.group * L + j) * D + d];
        s[size_t(j)] = masked_out(c, j) ? kLowest : dot * factor;
        most = std::max(most, s[size_t(j)]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - most));
      for (int64_t j = 0; j < L; ++j)
        for (int64_t e = 0; e < Dv; ++e) {
          const double p = s[size_t(j)] / sum, value = v[(b / c.group * L + j) * Dv + e];
          out.data[size_t((b * R + r) * Dv + e)] += p * value;
          scale.data[size_t((b * R + r) * Dv + e)] += p * std::abs(value);
        }
    }
  return {out, scale};
}

kir::Type kir_type(graph::DType t) {
  return t == graph::DType::BF16 ? kir::Type::BF16 : t == graph::DType::F16 ? kir::Type::F16
         : t == graph::DType::F64 ? kir::Type::F64 : kir::Type::F32;
}

class DecodeAttentionOnDevice : public testing::TestWithParam<std::tuple<std::string, AttentionCase>> {};

TEST_P(DecodeAttentionOnDevice, MatchesTheFloat64Attention) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  if (c.half == graph::DType::BF16 && !dev.info().features.has(kir::Feature::BFloat16))
    GTEST_SKIP() << device_id << " has no bfloat16 storage";
  if (c.half == graph::DType::F16 && !dev.info().features.has(kir::Feature::Float16))
    GTEST_SKIP() << device_id << " has no float16 storage";
  if (c.f64 && !dev.info().features.has(kir::Feature::Float64)) GTEST_SKIP() << device_id << " has no float64";
  const graph::DType sums = c.f64 ? graph::DType::F64 : graph::DType::F32;
  const graph::DType q_type = c.half_q ? c.half : sums, kv_type = c.half == graph::DType::F32 ? sums : c.half;
  const graph::Tensor q = random_tensor(q_type, {c.batches, c.rows, c.depth}, 71, -2, 2);
  const int64_t kv_batches = c.batches / c.group;
  const graph::Tensor k = random_tensor(kv_type, {kv_batches, c.keys, c.depth}, 72, -2, 2);
  const graph::Tensor v = random_tensor(kv_type, {kv_batches, c.keys, c.value_depth}, 73);
  // With writes, the caches after the step: k and v with their rows at the slot replaced by the new ones.
  const int64_t slot = c.keys / 2;
  const graph::Tensor key_row = random_tensor(kv_type, {kv_batches, 1, c.depth}, 74, -2, 2);
  const graph::Tensor value_row = random_tensor(kv_type, {kv_batches, 1, c.value_depth}, 75);
  graph::Tensor k_after = k, v_after = v;
  if (c.writes)
    for (int64_t b = 0; b < kv_batches; ++b) {
      for (int64_t d = 0; d < c.depth; ++d) k_after.data[size_t((b * c.keys + slot) * c.depth + d)] = key_row[b * c.depth + d];
      for (int64_t d = 0; d < c.value_depth; ++d)
        v_after.data[size_t((b * c.keys + slot) * c.value_depth + d)] = value_row[b * c.value_depth + d];
    }
  const auto [want, scale] = reference(c, q, k_after, v_after);

  heavy::DecodeAttentionShape s = shape(c.batches, c.rows, c.keys, c.depth, c.value_depth);
  s.key_group = s.value_group = c.group;
  if (c.half != graph::DType::F32) s.k_half = s.v_half = kir_type(c.half);
  if (c.half_q) s.q_half = kir_type(c.half);
  const kir::Type t = kir_type(sums);
  ASSERT_TRUE(heavy::decode_attention_fits(s, t));
  heavy::AttentionScore score;
  if (c.masked)
    score = [&](kir::KernelBuilder& kb, kir::Val index, kir::Val dot) {
      const kir::Val j = index % uint32_t(c.keys);
      const kir::Val lowest = kb.constant(t, kLowest);
      return c.keys > 1 ? kir::select(j % 3u == 2u, lowest, dot * (1.0 / std::sqrt(double(c.depth))))
                        : dot * (1.0 / std::sqrt(double(c.depth)));
    };
  const uint32_t columns = c.columns ? c.columns : heavy::choose_decode_attention_columns(s, c.wg, /*cpu=*/true);
  heavy::HeavyKernel kernel =
      heavy::decode_attention_kernel(s, t, c.wg, columns, dev.info().subgroup_size, score, {c.writes, c.writes});
  EXPECT_EQ(kernel.groups, uint64_t(c.batches * ((c.value_depth + columns - 1) / columns)));

  graph::Graph none;
  DeviceRun run(dev, none);
  const int32_t qs = run.add_slot(kir_type(q_type), q.numel(), "q"), ks = run.add_slot(kir_type(kv_type), k.numel(), "k");
  const int32_t vs = run.add_slot(kir_type(kv_type), v.numel(), "v");
  const int32_t os = run.add_slot(t, c.batches * c.rows * c.value_depth, "o");  // poisoned by run()
  run.upload(qs, q);
  run.upload(ks, k);
  run.upload(vs, v);
  std::vector<int32_t> buffers{qs, ks, vs, os};
  if (c.writes) {
    const int32_t kr = run.add_slot(kir_type(kv_type), key_row.numel(), "key_row");
    const int32_t vr = run.add_slot(kir_type(kv_type), value_row.numel(), "value_row");
    const int32_t at = run.add_slot(kir::Type::I32, 1, "slot");
    run.upload(kr, key_row);
    run.upload(vr, value_row);
    run.upload(at, graph::Tensor(graph::DType::I32, {1}, double(slot)));
    buffers.insert(buffers.end(), {kr, at, vr, at});
  }
  run.launch(std::move(kernel.kernel), buffers, {}, kernel.groups);
  run.run();
  const graph::Tensor got = run.download(os, sums, {c.batches, c.rows, c.value_depth});
  EXPECT_EQ(compare(got, want, {c.f64 ? 1e-12 : 2e-5, 0}, &scale), "");
  if (c.writes) {
    EXPECT_EQ(run.download(ks, kv_type, k.shape).data, k_after.data) << "the key cache after the step";
    EXPECT_EQ(run.download(vs, kv_type, v.shape).data, v_after.data) << "the value cache after the step";
  }
}

std::vector<AttentionCase> attention_cases() {
  using graph::DType;
  constexpr uint32_t wg = heavy::kDecodeAttentionWorkgroup;
  return {
      // GPT-2's step on a GPU: 12 heads, one query, 96 positions, 8 value columns a workgroup (8 workgroups a head)
      {12, 1, 96, 64, 64, DType::F32, false, true, wg, false, false, 8},
      {2, 1, 256, 64, 64},                    // keys = the workgroup, one workgroup a head
      {3, 2, 300, 64, 128, DType::F32, false, true, wg, false, false, 16},  // a ragged second round of keys, two queries
      {1, 4, 700, 32, 64, DType::F32, false, true, wg, false, false, 4},    // four queries, 4 columns a workgroup
      {2, 3, 37, 30, 7, DType::F32, false, true, wg, false, false, 4},      // a depth read one at a time, a ragged block
      {1, 1, 1, 64, 64},                      // one key
      {2, 1, 50, 16, 300},                    // values wider than the workgroup: a second, ragged block
      {4, 1, 200, 64, 64, DType::BF16, false, true, wg, false, false, 8},   // a bf16 cache
      {2, 2, 129, 64, 64, DType::F16, true},  // everything f16
      {3, 1, 90, 64, 64, DType::F32, false, false},  // the dot products as they are
      {2, 1, 300, 64, 64, DType::F32, false, true, 64, false, false, 16},   // a small workgroup: four slices
      {2, 2, 100, 24, 40, DType::F32, false, true, wg, true, false, 8},     // f64 sums
      {12, 1, 96, 64, 64, DType::F32, false, true, wg, false, true, 8},     // the new rows written, read from their buffers
      {4, 1, 300, 64, 300, DType::BF16, false, true, 64, false, true, 64},  // ... bf16, a small workgroup, five blocks
      // GPT-2's 288 positions of a bf16 cache: two rounds of keys read at once, a slice's 9 values read before the
      // scores; then the new key's slot in the second round (lid 0), 16 values a slice
      {12, 1, 288, 64, 64, DType::BF16, false, true, wg, false, true, 8},
      {3, 1, 128, 32, 32, DType::BF16, false, true, 64, false, true, 8},
      {2, 1, 128, 64, 64, DType::F32, false, true, 64, false, true, 16},    // 32 values a slice: read in the loop
      {2, 1, 1, 64, 64, DType::F32, false, true, wg, false, true, 64},      // one key, the new one
      // grouped-query attention: 8 query heads over 2 key-value heads, the rows written by each group's first
      {8, 1, 100, 64, 64, DType::F32, false, true, wg, false, true, 16, 4},
      {6, 2, 50, 32, 32, DType::BF16, false, true, wg, false, false, 8, 3},
  };
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DecodeAttentionOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(attention_cases())),
                         [](const testing::TestParamInfo<std::tuple<std::string, AttentionCase>>& p) {
                           const AttentionCase& c = std::get<1>(p.param);
                           return fmt::format("{}_b{}_r{}_l{}_d{}_dv{}_{}{}{}_wg{}_c{}_g{}{}{}", test_name_of(std::get<0>(p.param)),
                                              c.batches, c.rows, c.keys, c.depth, c.value_depth,
                                              graph::dtype_name(c.half), c.half_q ? "_q" : "",
                                              c.masked ? "_masked" : "", c.wg, c.columns, c.group, c.f64 ? "_f64" : "",
                                              c.writes ? "_writes" : "");
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DecodeAttentionOnDevice);

TEST(DecodeAttentionKernel, TakesFewQueriesWhoseScoresFitSixteenKiB) {
  const kir::Type f32 = kir::Type::F32;
  EXPECT_TRUE(heavy::decode_attention_fits(shape(12, 1, 1024, 64, 64), f32));
  // (64 + 3520 + 256 + 64) * 4 bytes = 15616 (the query, the scores, the partial sums, the new key row): fits; 4096
  // keys do not.
  EXPECT_TRUE(heavy::decode_attention_fits(shape(1, 1, 3520, 64, 64), f32));
  EXPECT_FALSE(heavy::decode_attention_fits(shape(1, 1, 4096, 64, 64), f32));
  EXPECT_FALSE(heavy::decode_attention_fits(shape(1, 5, 16, 64, 64), f32));  // five queries: a prefill
  EXPECT_EQ(heavy::decode_attention_shared_bytes(shape(12, 2, 100, 64, 64), f32, 256), uint64_t((2 * (64 + 100 + 256) + 64) * 4));
  EXPECT_THROW(heavy::decode_attention_kernel(shape(1, 5, 16, 64, 64), f32, 256, 64, 0), std::invalid_argument);
  EXPECT_THROW(heavy::decode_attention_kernel(shape(1, 1, 16, 64, 64), f32, 96, 64, 0), std::invalid_argument);
  EXPECT_THROW(heavy::decode_attention_kernel(shape(1, 1, 16, 64, 64), f32, 256, 24, 0), std::invalid_argument);
  EXPECT_THROW(heavy::decode_attention_kernel(shape(1, 1, 16, 64, 64), f32, 64, 128, 0), std::invalid_argument);
}

// The columns a workgroup, worked out by hand from the rule (all, halved on a GPU while under 96 workgroups, to 4).
TEST(DecodeAttentionKernel, ColumnsFillTheGpu) {
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(12, 1, 288, 64, 64), 256, false), 8u);   // GPT-2: 96 workgroups
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(32, 1, 288, 64, 64), 256, false), 16u);  // Llama 1B: 128
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(1, 1, 288, 64, 64), 256, false), 4u);    // one head: 16, the fewest
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(96, 1, 288, 64, 64), 256, false), 64u);  // 96 heads: one each
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(12, 1, 288, 64, 64), 256, true), 64u);   // a CPU: all
  EXPECT_EQ(heavy::choose_decode_attention_columns(shape(2, 1, 50, 16, 300), 256, true), 256u);   // up to the workgroup
}

}  // namespace
}  // namespace decode_attention_test
