// conv2d on tensor cores (kernels/conv2d_mma_kernel.h) on every device that reports cooperative-matrix
// (cuda:0 of sm_80 and newer, NVIDIA's vulkan:0; ctest also runs these under the mock CUDA driver, whose PTX
// interpreter emulates wmma), over geometries that exercise each index path of the gathered operand, and tilings with
// edges in every direction; read as stored (the input gathered element by element) and channels last (the input and
// weights moved by channels_last_kernel.h first, the input then copied 16 bytes at a time).
//
// Inputs and weights are fresh random f16/bf16 values; the reference is the float64 convolution of those same values,
// computed here. The products of two 16-bit values are exact in f32 and the sums are f32, so each result is within
// 1e-5 of its window's sum of |x w| (at most 147 terms here), as for the tensor-core matmul.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <ostream>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"
#include "kernels/channels_last_kernel.h"
#include "kernels/conv2d_mma_kernel.h"
#include "lowering/tunable.h"
#include "runtime/device.h"
#include "tests/support/sweep_sample.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/mma_tiling.h"
#include "tests/backends/ptx/ptxas_runner.h"

namespace conv2d_mma_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

struct ConvMmaCase {
  std::string name;
  graph::Shape x, w;
  graph::Conv2dOptions opt;
};

std::vector<ConvMmaCase> geometries() {
  using O = graph::Conv2dOptions;
  return {
      {"pad1", {2, 16, 9, 11}, {24, 16, 3, 3}, O{.padding = {1, 1}}},
      // 7x7 at stride 2 over 3 channels: 147-term windows, so the weights' rows do not start on 16 bytes.
      {"stem", {1, 3, 17, 15}, {16, 3, 7, 7}, O{.stride = {2, 2}, .padding = {3, 3}}},
      {"pointwise", {3, 32, 5, 7}, {20, 32, 1, 1}, O{}},
      // 24 positions an image: the input's rows copied 16 bytes at a time (3 images, so pieces meet image edges).
      {"pointwise_rows", {3, 32, 4, 6}, {40, 32, 1, 1}, O{}},
      {"mixed_axes", {2, 8, 10, 7}, {12, 8, 3, 2}, O{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}}},
      // 40 output channels by 2 x 8 x 8 positions with 64-term windows: whole 16-deep slices, partial blocks.
      {"whole_slices", {2, 16, 8, 8}, {40, 16, 2, 2}, O{.padding = {0, 0}, .dilation = {2, 2}}},
  };
}

void PrintTo(const ConvMmaCase& c, std::ostream* os) { *os << c.name; }

const heavy::MatmulTiling kTilings[] = {mma(32, 32, 16, 2, 2), mma(32, 64, 32, 2, 2), mma(64, 128, 32, 2, 4),
                                        mma(64, 64, 64, 2, 2), mma(128, 64, 16, 4, 2), mma(128, 64, 32, 4, 2)};

heavy::MatmulTiling staged(heavy::MatmulTiling t, uint32_t stages) {
  t.stages = stages;
  return t;
}

struct Reference {
  graph::Tensor y, magnitude;  // f64 [N, Cout, Ho, Wo]: the convolution, and the sum of |x w| of each window
};

Reference reference_conv(const heavy::Conv2dShape& s, const graph::Tensor& x, const graph::Tensor& w) {
  const graph::Shape shape{s.n, s.cout, s.ho, s.wo};
  Reference r{graph::Tensor(graph::DType::F64, shape), graph::Tensor(graph::DType::F64, shape)};
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t co = 0; co < s.cout; ++co)
      for (int64_t oh = 0; oh < s.ho; ++oh)
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          double sum = 0, mag = 0;
          for (int64_t ci = 0; ci < s.cin; ++ci)
            for (int64_t kh = 0; kh < s.kh; ++kh)
              for (int64_t kw = 0; kw < s.kw; ++kw) {
                const int64_t ih = oh * s.stride_h + kh * s.dil_h - s.pad_h, iw = ow * s.stride_w + kw * s.dil_w - s.pad_w;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const double p = x[((n * s.cin + ci) * s.h + ih) * s.w + iw] * w[((co * s.cin + ci) * s.kh + kh) * s.kw + kw];
                sum += p;
                mag += std::abs(p);
              }
          const int64_t at = ((n * s.cout + co) * s.ho + oh) * s.wo + ow;
          r.y[at] = sum;
          r.magnitude[at] = mag;
        }
  return r;
}

using ConvMmaParam = std::tuple<std::string, ConvMmaCase, graph::DType>;
class Conv2dMmaOnDevice : public testing::TestWithParam<ConvMmaParam> {};

// Every tiling of `tilings` against the float64 convolution, with the weights staged element by element and (where the
// device has them) by 16-byte asynchronous copies. Channels last, the input is moved to NHWC and the weights to
// [Cout, kh, kw, Cin] first by launches of their own, as the lowering runs them.
void check_tilings(rt::Device& dev, const heavy::Conv2dShape& s, graph::DType half, bool channels_last,
                   std::vector<heavy::MatmulTiling> tilings) {
  const kir::Type h = half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  const graph::Tensor x = random_tensor(half, {s.n, s.cin, s.h, s.w}, channels_last ? 23 : 21);
  const graph::Tensor w = random_tensor(half, {s.cout, s.cin, s.kh, s.kw}, channels_last ? 24 : 22);
  const Reference want = reference_conv(s, x, w);
  for (const heavy::MatmulTiling& tl : tilings)
    for (bool copies : {false, true}) {
      if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
      if (tl.invocations() > dev.info().max_workgroup_invocations) continue;
      // A deeper pipeline than the device's workgroup memory holds (3 stages of 64x128x32 on NVIDIA's Vulkan).
      const heavy::MmaStaging plan = heavy::conv2d_mma_staging(s, h, tl, copies, channels_last);
      if (plan.shared_bytes > lowering::limits_of(dev.info()).shared_bytes) continue;
      graph::Graph none;
      DeviceRun run(dev, none);
      int32_t xs = run.add_slot(h, x.numel(), "x"), ws = run.add_slot(h, w.numel(), "w");
      const int32_t ys = run.add_slot(kir::Type::F32, want.y.numel(), "y");  // poisoned by run()
      run.upload(xs, x);
      run.upload(ws, w);
      if (channels_last) {
        const int64_t depth = heavy::conv2d_channels_last_depth(s);  // channels padded to a multiple of 8
        auto move = [&](int32_t from, int64_t batches, int64_t positions, const char* name) {
          const int32_t to = run.add_slot(h, batches * depth * positions, name);
          heavy::HeavyKernel m = heavy::channels_last_kernel(h, uint32_t(batches), uint32_t(s.cin), uint32_t(positions),
                                                             uint32_t(depth));
          run.launch(std::move(m.kernel), {from, to}, {}, m.groups);
          return to;
        };
        xs = move(xs, s.n, s.h * s.w, "x_nhwc");
        ws = move(ws, s.cout, s.kh * s.kw, "w_last");
      }
      heavy::HeavyKernel k = heavy::conv2d_mma_kernel(s, h, tl, copies, channels_last);
      const std::string name = k.kernel.name;
      run.launch(std::move(k.kernel), {xs, ws, ys}, {}, k.groups);
      run.run();
      const graph::Tensor got = run.download(ys, graph::DType::F32, want.y.shape);
      EXPECT_EQ(compare(got, want.y, {1e-5, 0}, &want.magnitude), "") << name;
    }
}

TEST_P(Conv2dMmaOnDevice, MatchesTheFloat64Convolution) {
  const auto& [device_id, c, half] = GetParam();
  rt::Device& dev = device(device_id);
  ASSERT_TRUE(dev.info().features.has(kir::Feature::CooperativeMatrix)) << device_id;
  const heavy::Conv2dShape s = heavy::conv2d_shape(c.x, c.w, c.opt.stride, c.opt.padding, c.opt.dilation, 1);
  const kir::Type h = half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  std::vector<heavy::MatmulTiling> tilings(std::begin(kTilings), std::end(kTilings));
  tilings.push_back(staged(mma(64, 128, 32, 2, 4), 3));  // copied input rows pipeline (the others stage in one)
  // Accumulators leaving 4 and 2 at a time (a subgroup's 4 and 8 of them).
  tilings.push_back(rounds(mma(64, 128, 32, 2, 4), 4));
  tilings.push_back(rounds(mma(128, 64, 32, 2, 2), 2));
  tilings.push_back(heavy::choose_conv2d_mma_tiling(s, h, lowering::limits_of(dev.info())));
  check_tilings(dev, s, half, false, tilings);
}

// Channels last, with the pipeline 2 and 3 stages deep (3 input channels padded to 8).
TEST_P(Conv2dMmaOnDevice, MatchesTheFloat64ConvolutionChannelsLast) {
  const auto& [device_id, c, half] = GetParam();
  rt::Device& dev = device(device_id);
  const heavy::Conv2dShape s = heavy::conv2d_shape(c.x, c.w, c.opt.stride, c.opt.padding, c.opt.dilation, 1);
  const kir::Type h = half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  std::vector<heavy::MatmulTiling> tilings(std::begin(kTilings), std::end(kTilings));
  tilings.push_back(staged(mma(64, 128, 32, 2, 4), 3));
  tilings.push_back(staged(mma(32, 32, 16, 2, 2), 3));
  tilings.push_back(heavy::choose_conv2d_channels_last_tiling(s, h, lowering::limits_of(dev.info())));
  check_tilings(dev, s, half, true, tilings);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Conv2dMmaOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids_with(kir::Feature::CooperativeMatrix)),
                                          testing::ValuesIn(geometries()),
                                          testing::Values(graph::DType::BF16, graph::DType::F16)),
                         [](const testing::TestParamInfo<ConvMmaParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + std::get<1>(p.param).name + "_" +
                                  std::string(graph::dtype_name(std::get<2>(p.param)));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conv2dMmaOnDevice);

TEST(Conv2dMmaKernel, RefusesWhatItCannotCompute) {
  const heavy::Conv2dShape grouped = heavy::conv2d_shape({1, 8, 8, 8}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2);
  EXPECT_THROW(heavy::conv2d_mma_kernel(grouped, kir::Type::BF16, mma(32, 32, 16, 2, 2), true), std::invalid_argument);
  const heavy::Conv2dShape s = heavy::conv2d_shape({1, 8, 8, 8}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  // (f32 operands are TF32: tests/kernels/tf32_mma_test.cpp)
  EXPECT_THROW(heavy::conv2d_mma_kernel(s, kir::Type::F64, mma(32, 32, 16, 2, 2), true), std::invalid_argument);
  EXPECT_THROW(heavy::conv2d_mma_kernel(s, kir::Type::F16, mma(32, 48, 16, 2, 2), true), std::invalid_argument);
  EXPECT_THROW(heavy::conv2d_mma_kernel(s, kir::Type::F16, heavy::MatmulTiling{64, 64, 16, 4, 4}, true),
               std::invalid_argument);  // a SIMT tiling
  EXPECT_NO_THROW(heavy::conv2d_mma_kernel(s, kir::Type::F16, mma(32, 32, 16, 2, 2), true));
  // Accumulators leave in rounds that divide a subgroup's count (4 here); the config text keeps the round.
  EXPECT_THROW(heavy::conv2d_mma_kernel(s, kir::Type::F16, rounds(mma(64, 64, 32, 2, 2), 3), true), std::invalid_argument);
  const heavy::MatmulTiling four = rounds(mma(64, 64, 32, 2, 2), 4);
  EXPECT_EQ(heavy::MatmulTiling::from(four.config()), four);
  EXPECT_NE(heavy::conv2d_mma_kernel(s, kir::Type::F16, four, true).kernel.name.find("_r4_mma"), std::string::npos);
}

// The gathered operand never copies (its elements are not rows of a buffer); the weights copy where their rows (Cin x
// taps) start on 16 bytes. The heuristic fits every device's limits, NVIDIA's Vulkan 48 KiB included.
TEST(Conv2dMmaKernel, GathersTheInputAndCopiesWeightsWhereTheirRowsAllow) {
  const heavy::Conv2dShape s = heavy::conv2d_shape({64, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  const heavy::MatmulTiling tl = mma(64, 128, 32, 2, 4);
  const heavy::MmaStaging p = heavy::mma_staging(heavy::conv2d_mma_gemm_shape(s, kir::Type::BF16), tl, true, true);
  EXPECT_TRUE(p.a_copies);
  EXPECT_FALSE(p.b_copies);
  EXPECT_EQ(p.stages, 1u);
  const heavy::Conv2dShape stem = heavy::conv2d_shape({64, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1);
  EXPECT_FALSE(heavy::mma_staging(heavy::conv2d_mma_gemm_shape(stem, kir::Type::BF16), tl, true, true).a_copies);
  heavy::Limits vulkan;
  vulkan.shared_bytes = 49152;
  vulkan.max_invocations = 1024;
  vulkan.cooperative_matrix = vulkan.async_copy = true;
  const heavy::Conv2dShape wide = heavy::conv2d_shape({64, 256, 14, 14}, {256, 256, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_EQ(heavy::choose_conv2d_mma_tiling(wide, kir::Type::BF16, vulkan), rounds(mma(128, 64, 32, 4, 2), 4));
  for (const heavy::Conv2dShape& shape : {s, stem, wide}) {
    const heavy::MatmulTiling chosen = heavy::choose_conv2d_mma_tiling(shape, kir::Type::BF16, vulkan);
    if (shape.cout == 64) {
      EXPECT_EQ(chosen, rounds(tl, 4));
    }
    for (const heavy::MatmulTiling& c : heavy::conv2d_mma_candidates(shape, kir::Type::BF16, vulkan))
      EXPECT_LE(heavy::mma_staging(heavy::conv2d_mma_gemm_shape(shape, kir::Type::BF16), c, true, true).shared_bytes,
                vulkan.shared_bytes);
  }
}

// A 1x1 window at stride 1 over images of whole 16-byte pieces copies its input's rows as the weights' (both operands
// pipeline, 3 stages deep where they fit); 14x14 images (196 positions) only in f32 (TF32), 4 to a piece; a stride or
// padding gathers.
TEST(Conv2dMmaKernel, PointwiseLayersCopyTheirInputRows) {
  const heavy::Conv2dShape s = heavy::conv2d_shape({32, 256, 56, 56}, {64, 256, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1);
  EXPECT_TRUE(heavy::conv2d_copies_input_rows(s, kir::Type::BF16));
  heavy::Limits cuda;
  cuda.shared_bytes = 227 * 1024;
  cuda.max_invocations = 1024;
  cuda.cooperative_matrix = cuda.async_copy = true;
  const heavy::MatmulTiling chosen = heavy::choose_conv2d_mma_tiling(s, kir::Type::BF16, cuda);
  EXPECT_EQ(chosen, rounds(staged(mma(64, 128, 32, 2, 4), 3), 4));
  const heavy::MmaStaging p = heavy::conv2d_mma_staging(s, kir::Type::BF16, chosen, true);
  EXPECT_TRUE(p.a_copies);
  EXPECT_TRUE(p.b_copies);
  EXPECT_EQ(p.stages, 3u);
  EXPECT_FALSE(heavy::conv2d_mma_staging(s, kir::Type::BF16, chosen, false).b_copies);  // no asynchronous copies
  const heavy::Conv2dShape small = heavy::conv2d_shape({32, 1024, 14, 14}, {256, 1024, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1);
  EXPECT_FALSE(heavy::conv2d_copies_input_rows(small, kir::Type::BF16));
  EXPECT_TRUE(heavy::conv2d_copies_input_rows(small, kir::Type::F32));
  const heavy::Conv2dShape strided = heavy::conv2d_shape({32, 256, 56, 56}, {512, 256, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1);
  EXPECT_FALSE(heavy::conv2d_copies_input_rows(strided, kir::Type::BF16));
  const heavy::Conv2dShape padded = heavy::conv2d_shape({32, 256, 56, 56}, {64, 256, 1, 1}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_FALSE(heavy::conv2d_copies_input_rows(padded, kir::Type::BF16));
  heavy::Limits vulkan = cuda;
  vulkan.shared_bytes = 49152;
  for (const heavy::MatmulTiling& c : heavy::conv2d_mma_candidates(s, kir::Type::BF16, vulkan))
    EXPECT_LE(heavy::conv2d_mma_staging(s, kir::Type::BF16, c, true).shared_bytes, vulkan.shared_bytes);
}

// Channels last, the input copies too (16 bytes: 8 channels of one pixel), so both operands pipeline, and the heuristic
// block of 128 x 128 fits NVIDIA's Vulkan 48 KiB 2 stages deep (3 where workgroup memory is large).
TEST(Conv2dMmaKernel, ChannelsLastCopiesBothOperandsInAPipeline) {
  const heavy::Conv2dShape s = heavy::conv2d_shape({64, 128, 28, 28}, {128, 128, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  const heavy::MatmulShape g = heavy::conv2d_mma_gemm_shape(s, kir::Type::BF16, true);
  EXPECT_TRUE(g.b_transposed);
  heavy::Limits vulkan;
  vulkan.shared_bytes = 49152;
  vulkan.max_invocations = 1024;
  vulkan.cooperative_matrix = vulkan.async_copy = true;
  const heavy::MatmulTiling small = heavy::choose_conv2d_channels_last_tiling(s, kir::Type::BF16, vulkan);
  EXPECT_EQ(small, staged(mma(128, 128, 32, 2, 4), 2));
  const heavy::MmaStaging p = heavy::mma_staging(g, small, true);
  EXPECT_TRUE(p.a_copies);
  EXPECT_TRUE(p.b_copies);
  EXPECT_EQ(p.stages, 2u);
  heavy::Limits cuda = vulkan;
  cuda.shared_bytes = 227 * 1024;
  EXPECT_EQ(heavy::choose_conv2d_channels_last_tiling(s, kir::Type::BF16, cuda), rounds(staged(mma(128, 128, 32, 2, 4), 3), 4));
  // 2304-term windows: 64-deep slices where workgroup memory is large, not in 48 KiB.
  const heavy::Conv2dShape deep = heavy::conv2d_shape({64, 256, 14, 14}, {256, 256, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_EQ(heavy::choose_conv2d_channels_last_tiling(deep, kir::Type::BF16, cuda), rounds(staged(mma(128, 128, 64, 2, 4), 2), 4));
  EXPECT_EQ(heavy::choose_conv2d_channels_last_tiling(deep, kir::Type::BF16, vulkan), staged(mma(128, 128, 32, 2, 4), 2));
  for (const heavy::MatmulTiling& c : heavy::conv2d_channels_last_candidates(s, kir::Type::BF16, vulkan))
    EXPECT_LE(heavy::mma_staging(g, c, true).shared_bytes, vulkan.shared_bytes);
  // 12 channels are padded to 16: 3x3 windows of 144 terms.
  const heavy::Conv2dShape ragged = heavy::conv2d_shape({1, 12, 8, 8}, {8, 12, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_EQ(heavy::conv2d_channels_last_depth(ragged), 16);
  EXPECT_EQ(heavy::conv2d_mma_gemm_shape(ragged, kir::Type::F16, true).k, 144);
  EXPECT_EQ(heavy::conv2d_mma_gemm_shape(ragged, kir::Type::F16, false).k, 108);
}

// The move to channels last on every device (lavapipe included), blocks with edges in both directions, each element
// where the NHWC layout puts it; the output poisoned first.
class ChannelsLastKernelOnDevice : public testing::TestWithParam<std::string> {};

TEST_P(ChannelsLastKernelOnDevice, MovesEveryElementToItsNhwcPlace) {
  rt::Device& dev = device(GetParam());
  const uint32_t batches = 3, channels = 40, positions = 70;
  const std::pair<graph::DType, kir::Feature> types[] = {{graph::DType::F16, kir::Feature::Float16},
                                                         {graph::DType::BF16, kir::Feature::BFloat16},
                                                         {graph::DType::F32, kir::Feature::None}};
  for (const auto& [dt, needs] : types)
    for (uint32_t depth : {channels, 48u}) {  // rows of exactly the channels, and padded with zeros
      if (needs != kir::Feature::None && !dev.info().features.has(needs)) continue;
      const kir::Type t = dt == graph::DType::F16 ? kir::Type::F16 : dt == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F32;
      const graph::Tensor x = random_tensor(dt, {batches, channels, positions}, 25);
      graph::Tensor want(graph::DType::F64, {batches, positions, depth});  // zeros past the channels
      for (uint32_t b = 0; b < batches; ++b)
        for (uint32_t c = 0; c < channels; ++c)
          for (uint32_t p = 0; p < positions; ++p) want[(b * positions + p) * depth + c] = x[(b * channels + c) * positions + p];
      graph::Graph none;
      DeviceRun run(dev, none);
      const int32_t xs = run.add_slot(t, x.numel(), "x");
      const int32_t ys = run.add_slot(t, want.numel(), "y");  // poisoned by run()
      run.upload(xs, x);
      heavy::HeavyKernel k = heavy::channels_last_kernel(t, batches, channels, positions, depth);
      run.launch(std::move(k.kernel), {xs, ys}, {}, k.groups);
      run.run();
      EXPECT_EQ(compare(run.download(ys, dt, want.shape), want, {0, 0}), "") << graph::dtype_name(dt) << " " << depth;
    }
  EXPECT_THROW(heavy::channels_last_kernel(kir::Type::F16, 1, 16, 4, 8), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ChannelsLastKernelOnDevice, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });

// Every tiling the tuner may offer builds SPIR-V and assembles for sm_90, the heuristic's for sm_80 too (where no GPU
// is present this is as far as the kernel gets here; Debian's spirv-val cannot read cooperative-matrix modules,
// tests/backends/spirv/cooperative_matrix_test.cpp checks their words): resnet18's first layer in small in f16 (147-term
// windows: weights element by element), a 3x3 layer in bf16 with the weights copied.
TEST(Conv2dMmaKernel, EveryCandidateBuildsSpirvAndAssemblesForAmpereAndHopper) {
  const auto ptxas = ptx::testing::find_ptxas();
  heavy::Limits limits;
  limits.shared_bytes = 48 * 1024;
  limits.max_invocations = 1024;
  int assembled = 0;
  for (const auto& [s, half] :
       {std::pair{heavy::conv2d_shape({2, 3, 30, 30}, {64, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1), kir::Type::F16},
        std::pair{heavy::conv2d_shape({2, 64, 14, 14}, {128, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), kir::Type::BF16},
        // a 1x1 layer copying its input's rows (conv2d_copies_input_rows)
        std::pair{heavy::conv2d_shape({2, 64, 16, 16}, {128, 64, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), kir::Type::BF16}}) {
    limits.async_copy = half == kir::Type::BF16;
    const heavy::MatmulTiling heuristic = heavy::choose_conv2d_mma_tiling(s, half, limits);
    std::vector<std::pair<heavy::MatmulTiling, bool>> offered;
    for (const heavy::MatmulTiling& t : heavy::conv2d_mma_candidates(s, half, limits)) offered.push_back({t, false});
    for (const heavy::MatmulTiling& t : heavy::conv2d_channels_last_candidates(s, half, limits)) offered.push_back({t, true});
    // A representative subset unless SPIRE_FULL_SWEEPS=1 (ctest -L full: spire_kernels_ptx_sweeps_full).
    for (const auto& [t, channels_last] : testing_support::sampled(offered)) {
      const kir::Kernel k = heavy::conv2d_mma_kernel(s, half, t, limits.async_copy, channels_last).kernel;
      EXPECT_NO_THROW(spirv::compile(k)) << k.name;
      for (uint32_t sm : {80u, 90u}) {
        if (sm == 80 && !(t == heuristic && !channels_last)) continue;
        const std::string text = ptx::compile(k, ptx::Target{sm});
        EXPECT_NE(text.find("wmma.mma.sync.aligned"), std::string::npos) << k.name;
        if (!ptxas) continue;
        const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, text, sm);
        EXPECT_TRUE(r.ok) << k.name << " for sm_" << sm << ":\n" << r.log;
        ++assembled;
      }
    }
  }
  if (!ptxas) GTEST_SKIP() << "ptxas not found: the tensor-core PTX was generated but not assembled";
  // Every tiling: at least 20 modules; the test command's subset: 18 (the sweep must not come out empty).
  const char* full = std::getenv("SPIRE_FULL_SWEEPS");
  EXPECT_GE(assembled, full && std::string(full) == "1" ? 20 : 16);
}

}  // namespace
}  // namespace conv2d_mma_test
