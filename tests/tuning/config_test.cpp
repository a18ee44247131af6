// Configs as text (the cache's and the user's form) and the templates' candidate lists: the heuristic first,
// no duplicates, every candidate within the device's limits.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_kernel.h"
#include "kernels/softmax_kernels.h"
#include "kernels/tuning_config.h"

using namespace spire::lowering::heavy;

namespace {

TEST(Config, TextRoundTrip) {
  Config c{{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 16}, {"reg_m", 4}, {"reg_n", 4}};
  EXPECT_EQ(c.text(), "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4");
  EXPECT_EQ(Config::parse(c.text()), c);
  EXPECT_EQ(Config::parse(""), Config{});
  EXPECT_EQ(Config::parse("a=-3").get("a"), -3);
  c.set("tile_k", 8);
  EXPECT_EQ(c.get("tile_k"), 8);
  EXPECT_EQ(c.values().size(), 5u);
}

TEST(Config, ParseRefusesMalformedText) {
  for (const char* bad : {"a", "a=", "=1", "a=1,", "a=1,,b=2", "a=x", "a=1,a=2", "A=1", "a b=1", "a=1.5"})
    EXPECT_THROW(Config::parse(bad), std::invalid_argument) << bad;
  EXPECT_THROW(Config{}.get("missing"), std::invalid_argument);
}

TEST(Config, TypedConfigsRoundTrip) {
  MatmulTiling m{128, 64, 8, 8, 4};
  EXPECT_EQ(MatmulTiling::from(m.config()), m);
  Conv2dConfig c{false, 128, 4};
  EXPECT_EQ(Conv2dConfig::from(Config::parse(c.config().text())), c);
  GradWeightConfig g{1, 5, 64, 8, true};
  EXPECT_EQ(GradWeightConfig::from(g.config()), g);
  RowConfig r{true, 512};
  EXPECT_EQ(RowConfig::from(r.config()), r);
  EXPECT_THROW(Conv2dConfig::from(Config::parse("rows=2,wg=64,c_block=1")), std::invalid_argument);
  EXPECT_THROW(MatmulTiling::from(Config::parse("tile_m=64")), std::invalid_argument);
}

template <class C>
void expect_distinct_with_heuristic_first(const std::vector<C>& cs, const C& heuristic) {
  ASSERT_FALSE(cs.empty());
  EXPECT_EQ(cs.front(), heuristic);
  for (size_t i = 0; i < cs.size(); ++i)
    for (size_t j = i + 1; j < cs.size(); ++j) EXPECT_FALSE(cs[i] == cs[j]) << cs[i].config().text();
}

TEST(Candidates, MatmulFitTheLimits) {
  const MatmulShape s = matmul_shape({512, 784}, {784, 512});
  for (Limits limits : {Limits{16384, 256}, Limits{49152, 1024}}) {
    auto cs = matmul_candidates(s, spire::kir::Type::F32, limits);
    expect_distinct_with_heuristic_first(cs, choose_matmul_tiling(s, spire::kir::Type::F32));
    EXPECT_GT(cs.size(), 10u);
    for (const auto& c : cs) {
      EXPECT_LE(c.invocations(), limits.max_invocations) << c.config().text();
      EXPECT_LE(c.tile_k * (c.tile_m + 1 + c.tile_n) * 4, limits.shared_bytes) << c.config().text();
    }
  }
  // A tiny product gets no 128-wide blocks.
  for (const auto& c : matmul_candidates(matmul_shape({8, 8}, {8, 8}), spire::kir::Type::F32, {}))
    EXPECT_LE(c.tile_m, 16u) << c.config().text();
}

TEST(Candidates, Conv2dFamilies) {
  const Conv2dShape s = conv2d_shape({8, 16, 14, 14}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  auto cs = conv2d_candidates(s, {});
  expect_distinct_with_heuristic_first(cs, conv2d_heuristic(s));
  EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Conv2dConfig& c) { return c.c_block == 8; }));
  EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Conv2dConfig& c) { return c.rows; }));
  for (const auto& c : cs) EXPECT_LE(c.wg, 256u);
  expect_distinct_with_heuristic_first(conv2d_grad_input_candidates(s, {}), conv2d_grad_input_heuristic(s));
  auto gw = conv2d_grad_weight_candidates(s, spire::kir::Type::F32, {});
  expect_distinct_with_heuristic_first(gw, conv2d_grad_weight_heuristic(s, spire::kir::Type::F32));
  EXPECT_GT(gw.size(), 4u);
  // Rows longer than 32 columns: no row candidates.
  const Conv2dShape wide = conv2d_shape({1, 2, 5, 40}, {4, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1);
  for (const auto& c : conv2d_candidates(wide, {})) EXPECT_FALSE(c.rows);
}

// Rows of several channels where the rows are many (LeNet's second convolution at batch 8192: 2 output channels of 14
// columns, 3 input channels for its input gradient), looping over the window's rows on GPUs, one channel per row at
// batch 64; on CPUs the most channels whose sums fit (4 x 14 = 56 of at most 64), unrolled, at any batch; rows of at
// most 64 sums among the candidates.
TEST(Candidates, Conv2dRowsOfSeveralChannels) {
  const Conv2dShape big = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  // Looped rows on GPUs, the forward asking for 768 resident invocations per core, the input gradient for none.
  EXPECT_EQ(conv2d_heuristic(big), (Conv2dConfig{true, 32, 2, false, 1, true, 24}));
  EXPECT_EQ(conv2d_grad_input_heuristic(big), (Conv2dConfig{true, 32, 3, false, 1, true, 0}));
  EXPECT_NE(conv2d_heuristic(big).config().text().find(",per_core=24"), std::string::npos);
  const auto fwd = conv2d_candidates(big, {});
  for (uint32_t per_core : {0u, 16u, 20u, 32u})
    EXPECT_NE(std::find(fwd.begin(), fwd.end(), Conv2dConfig{true, 32, 2, false, 1, true, per_core}), fwd.end()) << per_core;
  EXPECT_THROW(Conv2dConfig::from(Config::parse("rows=1,wg=32,c_block=2,row_loop=1,per_core=33")), std::invalid_argument);
  Limits cpu_limits;
  cpu_limits.cpu = true;
  EXPECT_EQ(conv2d_heuristic(big, cpu_limits), (Conv2dConfig{true, 32, 4}));
  EXPECT_EQ(conv2d_grad_input_heuristic(big, cpu_limits), (Conv2dConfig{true, 32, 3}));
  const Conv2dShape small64 = conv2d_shape({64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_heuristic(small64, cpu_limits), (Conv2dConfig{true, 32, 4}));
  EXPECT_EQ(conv2d_grad_input_heuristic(small64, cpu_limits), (Conv2dConfig{true, 32, 3}));
  EXPECT_EQ(Conv2dConfig::from(conv2d_heuristic(big).config()), conv2d_heuristic(big));
  EXPECT_NE(conv2d_heuristic(big).config().text().find("row_loop=1"), std::string::npos);
  const Conv2dShape small = conv2d_shape({64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_heuristic(small), (Conv2dConfig{true, 64, 1}));
  EXPECT_EQ(conv2d_grad_input_heuristic(small), (Conv2dConfig{true, 64, 1}));
  // The gradient of an image (resnet18's first layer, rows too wide for the row path): elements of all 3 channels;
  // of many channels, one.
  EXPECT_EQ(conv2d_grad_input_heuristic(conv2d_shape({64, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1)),
            (Conv2dConfig{false, 256, 3}));
  EXPECT_EQ(conv2d_grad_input_heuristic(conv2d_shape({1, 64, 56, 56}, {128, 64, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1)),
            (Conv2dConfig{false, 256, 1}));
  const auto cs = conv2d_candidates(big, {});
  EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Conv2dConfig& c) { return c.rows && c.c_block == 4; }));
  for (const auto& c : cs)
    if (c.rows) {
      EXPECT_LE(14 * c.c_block, 64u) << c.config().text();
    }
  // LeNet's first layer: elements of its 6 channels with the weights in workgroup memory on a GPU (16 per invocation
  // in 64 at batch 8192, one in 128 at batch 64, where 16 would leave 49 workgroups), rows on a CPU.
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_heuristic(first), (Conv2dConfig{false, 64, 6, true, 16}));
  EXPECT_EQ(Conv2dConfig::from(conv2d_heuristic(first).config()), conv2d_heuristic(first));
  const Conv2dShape first64 = conv2d_shape({64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_heuristic(first64), (Conv2dConfig{false, 128, 6, true, 1}));
  EXPECT_THROW(conv2d_kernel(first, spire::kir::Type::F32, Conv2dConfig{false, 128, 1, false, 8}), std::invalid_argument)
      << "several elements per invocation need shared_w";
  try {
    conv2d_kernel(big, spire::kir::Type::F32, Conv2dConfig{false, 64, 1, false, 1, true});
    ADD_FAILURE() << "a row loop without rows was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row_loop=1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs rows"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Conv2dConfig::from(Config{{"rows", 1}, {"wg", 32}, {"c_block", 2}, {"row_loop", 2}}), std::invalid_argument);
  Limits cpu;
  cpu.cpu = true;
  EXPECT_EQ(conv2d_heuristic(first, cpu), (Conv2dConfig{true, 32, 2}));
  // Elements of all 16 channels with the weights (9.6 KB) in workgroup memory; not in f64 (19.2 KB).
  EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Conv2dConfig& c) { return c.shared_w && c.c_block == 16; }));
  const auto f64 = conv2d_candidates(big, {}, spire::kir::Type::F64);
  EXPECT_TRUE(std::none_of(f64.begin(), f64.end(), [](const Conv2dConfig& c) { return c.shared_w; }));
}

// The weight gradient's candidates take 2 and 4 output channels per workgroup where the sums fit (LeNet's second
// convolution: 25 taps x 2 = 50), and the config text carries co_block only when it is more than 1. The heuristic
// takes 2 on GPUs for that convolution (measured on both backends), 1 on CPU devices and for LeNet's first (1 input
// channel: the tuner kept 1 on vulkan:0).
TEST(Candidates, Conv2dGradWeightChannelBlocks) {
  const Conv2dShape s = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  const auto gw = conv2d_grad_weight_candidates(s, spire::kir::Type::F32, {});
  GradWeightConfig two{5, 5, 32, 64, true, 2};
  two.per_core = 16;  // 512 invocations resident per core: 128 registers on cuda:0 (measured on an H200)
  EXPECT_EQ(gw.front(), two);
  EXPECT_NE(gw.front().config().text().find(",per_core=16"), std::string::npos) << gw.front().config().text();
  for (uint32_t per_core : {0u, 12u, 20u, 24u}) {
    GradWeightConfig c = two;
    c.per_core = per_core;
    EXPECT_NE(std::find(gw.begin(), gw.end(), c), gw.end()) << c.config().text();
  }
  // At batch 64 (96 workgroups) nothing asks for residency.
  const Conv2dShape b64 = conv2d_shape({64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_grad_weight_heuristic(b64, spire::kir::Type::F32).per_core, 0u);
  EXPECT_TRUE(std::any_of(gw.begin(), gw.end(), [](const GradWeightConfig& c) { return c.co_block == 1; }));
  for (const auto& c : gw) EXPECT_LE(c.block_rows * c.block_cols * c.co_block, 64u) << c.config().text();
  Limits cpu;
  cpu.cpu = true;
  // On a CPU two channels too, and no split where the pairs already make 16 workgroups (48 here); LeNet's first
  // convolution (3 pairs of channels) splits in 6, at batch 64 as at 8192.
  const GradWeightConfig on_cpu = conv2d_grad_weight_heuristic(s, spire::kir::Type::F32, cpu);
  EXPECT_EQ(on_cpu, (GradWeightConfig{5, 5, 32, 1, true, 2}));
  EXPECT_NE(on_cpu.config().text().find("co_block=2"), std::string::npos);
  for (int64_t n : {64, 8192}) {
    const Conv2dShape first_n = conv2d_shape({n, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
    EXPECT_EQ(conv2d_grad_weight_heuristic(first_n, spire::kir::Type::F32, cpu), (GradWeightConfig{5, 5, 32, 6, true, 2}))
        << n;
  }
  EXPECT_EQ(GradWeightConfig::from(gw.front().config()), gw.front());
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_grad_weight_heuristic(first, spire::kir::Type::F32).co_block, 1u);
}

// LeNet's first convolution at batch 8192 has 6 (cout, cin) pairs: the plain row mode's 64 splits make 384
// workgroups, so GPUs stage whole images through workgroup memory with more splits (measured on both backends of the
// H100); CPU devices, batch 64 (fewer splits than 64) and the second convolution (48 pairs) keep plain rows. (Where
// workgroup memory holds every weight's image, 23 KB, all_pairs takes it first, below; the staged rows follow it
// among the candidates.)
TEST(Heuristics, Conv2dGradWeightStagesImagesWhereFewWeightsLeaveAGpuIdle) {
  const Limits gpu{16 * 1024, 1024};
  Limits cpu = gpu;
  cpu.cpu = true;
  const auto f32 = spire::kir::Type::F32;
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  const GradWeightConfig staged = conv2d_grad_weight_heuristic(first, f32, gpu);
  EXPECT_EQ(conv2d_grad_weight_candidates(first, f32, Limits{48 * 1024, 1024})[1], staged);
  EXPECT_TRUE(staged.staged);
  EXPECT_TRUE(staged.row_mode);
  EXPECT_EQ(staged.wg, 64u);
  EXPECT_GT(staged.splits, 64u);
  EXPECT_LE(staged.splits, 512u);
  EXPECT_EQ(GradWeightConfig::from(staged.config()), staged);
  EXPECT_NE(staged.config().text().find("staged=1"), std::string::npos);
  const auto candidates = conv2d_grad_weight_candidates(first, f32, gpu);
  EXPECT_EQ(candidates.front(), staged);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(first, f32, cpu).staged);
  const Conv2dShape small = conv2d_shape({64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(small, f32, gpu).staged);
  const Conv2dShape second = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(second, f32, gpu).staged);
  // A staged config needs row mode and a workgroup holding an image's output rows.
  GradWeightConfig no_rows = staged;
  no_rows.row_mode = false;
  EXPECT_THROW(conv2d_grad_weight_kernel(first, f32, no_rows, gpu), std::invalid_argument);
  GradWeightConfig narrow = staged;
  narrow.wg = 16;
  EXPECT_THROW(conv2d_grad_weight_kernel(first, f32, narrow, gpu), std::invalid_argument);
}

// LeNet's second convolution at batch 8192 keeps every weight in one workgroup on GPUs (co_block 4: 120 invocations
// own sums, 512 splits of 16 images; measured on both backends of the H100); CPU devices, batch 64, 16 KiB of
// workgroup memory (the staged image takes 20 KB) keep their configs; the first convolution (30 owners at most)
// splits its rows (below).
TEST(Heuristics, Conv2dGradWeightKeepsEveryWeightInOneWorkgroupForManyImages) {
  Limits gpu{48 * 1024, 1024};
  gpu.ptx = true;
  Limits cpu = gpu;
  cpu.cpu = true;
  const auto f32 = spire::kir::Type::F32;
  const Conv2dShape second = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  GradWeightConfig want{5, 5, 128, 512, true, 4};
  want.all_pairs = true;
  EXPECT_EQ(conv2d_grad_weight_heuristic(second, f32, gpu), want);
  // Other compilers (NVIDIA's Vulkan one, measured) split each owner's rows in two (240 invocations) over half the
  // splits.
  GradWeightConfig halves = want;
  halves.row_split = 2;
  halves.wg = 256;
  halves.splits = 256;
  EXPECT_EQ(conv2d_grad_weight_heuristic(second, f32, Limits{48 * 1024, 1024}), halves);
  const auto on_vulkan = conv2d_grad_weight_candidates(second, f32, Limits{48 * 1024, 1024});
  EXPECT_NE(std::find(on_vulkan.begin(), on_vulkan.end(), want), on_vulkan.end());
  EXPECT_EQ(want.config().text(), "block_rows=5,block_cols=5,wg=128,splits=512,row_mode=1,co_block=4,all_pairs=1");
  EXPECT_EQ(GradWeightConfig::from(want.config()), want);
  const auto on_gpu = conv2d_grad_weight_candidates(second, f32, gpu);
  EXPECT_EQ(on_gpu.front(), want);
  // The rows the heuristic took before stay a candidate (tuning caches may hold them).
  GradWeightConfig rows{5, 5, 32, 64, true, 2};
  rows.per_core = 16;
  EXPECT_NE(std::find(on_gpu.begin(), on_gpu.end(), rows), on_gpu.end());
  EXPECT_FALSE(conv2d_grad_weight_heuristic(second, f32, cpu).all_pairs);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(second, f32, Limits{16 * 1024, 1024}).all_pairs);
  const Conv2dShape b64 = conv2d_shape({64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(b64, f32, gpu).all_pairs);
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_grad_weight_heuristic(first, f32, gpu).row_split, 14u);
  // Nor where the staged image is larger than measured (32 channels of 16x16: 74 KB), though it fits the device.
  const Conv2dShape wide = conv2d_shape({8192, 32, 16, 16}, {32, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_grad_weight_heuristic(wide, f32, Limits{227 * 1024, 1024}).all_pairs);
  // The candidates offer it at other splits and channel blocks, and on CPU devices too (the tuner decides there).
  const auto on_cpu = conv2d_grad_weight_candidates(second, f32, cpu);
  EXPECT_TRUE(std::any_of(on_cpu.begin(), on_cpu.end(), [](const GradWeightConfig& c) { return c.all_pairs && c.co_block == 2; }));
  // Refused by name: a workgroup smaller than its owners, a strided shape, more splits than images.
  GradWeightConfig narrow = want;
  narrow.wg = 64;
  EXPECT_THROW(conv2d_grad_weight_kernel(second, f32, narrow, gpu), std::invalid_argument);
  const Conv2dShape strided = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 1);
  EXPECT_THROW(conv2d_grad_weight_kernel(strided, f32, want, gpu), std::invalid_argument);
  const Conv2dShape few = conv2d_shape({100, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_THROW(conv2d_grad_weight_kernel(few, f32, want, gpu), std::invalid_argument);
}

// LeNet's second convolution's forward pass at batch 8192 stages whole images with every weight where ptxas compiles it
// (one channel's output row per invocation: 224 per image; measured faster than the rows on cuda:0, slower on vulkan:0),
// not on other backends, not at batch 64; the first convolution keeps its weights-in-workgroup-memory elements.
TEST(Heuristics, Conv2dStagesImagesThroughPtx) {
  Limits ptx{227 * 1024, 1024};
  ptx.ptx = true;
  const Limits vulkan{48 * 1024, 1024};
  const Conv2dShape second = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  Conv2dConfig want{true, 224, 1};
  want.images = true;
  EXPECT_EQ(conv2d_heuristic(second, ptx), want);
  EXPECT_EQ(want.config().text(), "rows=1,wg=224,c_block=1,images=1");
  EXPECT_EQ(Conv2dConfig::from(want.config()), want);
  const auto on_ptx = conv2d_candidates(second, ptx);
  EXPECT_EQ(on_ptx.front(), want);
  // The looped rows the heuristic took before stay a candidate (tuning caches may hold them).
  EXPECT_NE(std::find(on_ptx.begin(), on_ptx.end(), Conv2dConfig{true, 32, 2, false, 1, true, 24}), on_ptx.end());
  EXPECT_FALSE(conv2d_heuristic(second, vulkan).images);
  const Conv2dShape b64 = conv2d_shape({64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_heuristic(b64, ptx).images);
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_heuristic(first, ptx).rows);
  // Nor where the image and weights are larger than measured (32 channels of 16x16: 78 KB), though they fit.
  const Conv2dShape wide = conv2d_shape({8192, 32, 16, 16}, {32, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_FALSE(conv2d_heuristic(wide, ptx).images);
  // Other backends have it among their candidates, with the window's rows looped too.
  const auto on_vulkan = conv2d_candidates(second, vulkan);
  Conv2dConfig looped{true, 112, 2, false, 1, true};
  looped.images = true;
  EXPECT_NE(std::find(on_vulkan.begin(), on_vulkan.end(), looped), on_vulkan.end());
  EXPECT_EQ(Conv2dConfig::from(looped.config()), looped);
  // Refused by name: fewer invocations than an image's rows, strides, the input gradient.
  Conv2dConfig narrow = want;
  narrow.wg = 128;
  EXPECT_THROW(conv2d_kernel(second, spire::kir::Type::F32, narrow, ptx), std::invalid_argument);
  const Conv2dShape strided = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 1);
  EXPECT_THROW(conv2d_kernel(strided, spire::kir::Type::F32, want, ptx), std::invalid_argument);
  // The input gradient stages grad_y's images the same way (84 invocations per image at one channel), a candidate
  // wherever they fit; not for strides.
  const auto grad_input = conv2d_grad_input_candidates(second, vulkan);
  Conv2dConfig gi{true, 84, 1};
  gi.images = true;
  EXPECT_NE(std::find(grad_input.begin(), grad_input.end(), gi), grad_input.end());
  EXPECT_NO_THROW(conv2d_grad_input_kernel(second, spire::kir::Type::F32, gi, vulkan));
  EXPECT_THROW(conv2d_grad_input_kernel(second, spire::kir::Type::F32, gi, Limits{16 * 1024, 1024}), std::invalid_argument);
  EXPECT_THROW(conv2d_grad_input_kernel(strided, spire::kir::Type::F32, gi, vulkan), std::invalid_argument);
}

// LeNet's first convolution's weight gradient at batch 8192 keeps every weight in one workgroup too, its few owners'
// rows split among invocations (co_block 2: 15 owners x 14 row groups, 256 splits; measured on both backends of the
// H100); not on CPU devices, not at batch 64; through ptxas the second convolution (120 owners) splits no rows. The
// staged rows it took before stay a candidate; row_split is all_pairs' only and is refused by name elsewhere.
TEST(Heuristics, Conv2dGradWeightSplitsTheRowsOfFewOwners) {
  const Limits gpu{48 * 1024, 1024};
  Limits cpu = gpu;
  cpu.cpu = true;
  const auto f32 = spire::kir::Type::F32;
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  GradWeightConfig want{5, 5, 224, 256, true, 2};
  want.all_pairs = true;
  want.row_split = 14;
  EXPECT_EQ(conv2d_grad_weight_heuristic(first, f32, gpu), want);
  EXPECT_EQ(want.config().text(), "block_rows=5,block_cols=5,wg=224,splits=256,row_mode=1,co_block=2,all_pairs=1,row_split=14");
  EXPECT_EQ(GradWeightConfig::from(want.config()), want);
  const auto on_gpu = conv2d_grad_weight_candidates(first, f32, gpu);
  EXPECT_EQ(on_gpu.front(), want);
  GradWeightConfig staged{5, 5, 64, 220, true, 1, true};
  EXPECT_NE(std::find(on_gpu.begin(), on_gpu.end(), staged), on_gpu.end());
  EXPECT_FALSE(conv2d_grad_weight_heuristic(first, f32, cpu).all_pairs);
  const Conv2dShape b64 = conv2d_shape({64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(conv2d_grad_weight_heuristic(b64, f32, gpu).row_split, 1u);
  const Conv2dShape second = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  Limits ptx = gpu;
  ptx.ptx = true;
  EXPECT_EQ(conv2d_grad_weight_heuristic(second, f32, ptx).row_split, 1u);  // 120 owners: enough through ptxas
  // Refused by name: fewer invocations than owners x row groups, more row groups than output rows, row_split
  // without all_pairs.
  GradWeightConfig narrow = want;
  narrow.wg = 192;
  EXPECT_THROW(conv2d_grad_weight_kernel(first, f32, narrow, gpu), std::invalid_argument);
  GradWeightConfig many = want;
  many.row_split = 29;
  many.wg = 1024;
  EXPECT_THROW(conv2d_grad_weight_kernel(first, f32, many, gpu), std::invalid_argument);
  GradWeightConfig rows_only{5, 5, 64, 64, true};
  rows_only.row_split = 2;
  EXPECT_THROW(conv2d_grad_weight_kernel(first, f32, rows_only, gpu), std::invalid_argument);
  EXPECT_NO_THROW(conv2d_grad_weight_kernel(first, f32, want, gpu));
}

// LeNet's first convolution's forward pass at batch 8192 stages whole images too, in strips of elements of all six
// channels (measured on both backends of the H100: 2 rows per strip through ptxas, 4 elsewhere, about 384 invocations
// per workgroup; through ptxas asking for 4 workgroups per core); not on CPU devices, not at batch 64 (too few workgroups), not for the second convolution (16
// channels: rows).
TEST(Heuristics, Conv2dStagesSmallChannelImagesInStrips) {
  Limits ptx{227 * 1024, 1024};
  ptx.ptx = true;
  const Limits vulkan{48 * 1024, 1024};
  const Conv2dShape first = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  Conv2dConfig two{false, 392, 6, false, 2};  // 14 strips x 28 columns: one image, asking for 4 per core
  two.images = true;
  two.per_core = 4;
  Conv2dConfig four{false, 392, 6, false, 4};  // 7 strips x 28 columns: two images
  four.images = true;
  EXPECT_EQ(conv2d_heuristic(first, ptx), two);
  EXPECT_EQ(conv2d_heuristic(first, vulkan), four);
  EXPECT_EQ(four.config().text(), "rows=0,wg=392,c_block=6,pixels=4,images=1");
  EXPECT_EQ(Conv2dConfig::from(four.config()), four);
  EXPECT_EQ(two.config().text(), "rows=0,wg=392,c_block=6,pixels=2,per_core=4,images=1");
  // Through ptxas the strips of one image also ask for 3 and 4 workgroups per core; elsewhere (ignored) they do not.
  const auto on_ptx = conv2d_candidates(first, ptx);
  EXPECT_EQ(on_ptx.front(), two);
  Conv2dConfig two_three = two;
  two_three.per_core = 3;
  EXPECT_NE(std::find(on_ptx.begin(), on_ptx.end(), two_three), on_ptx.end());

  EXPECT_EQ(conv2d_candidates(first, vulkan).front(), four);
  // The weights-in-workgroup-memory elements it took before stay a candidate (tuning caches may hold them).
  const auto on_vulkan = conv2d_candidates(first, vulkan);
  EXPECT_NE(std::find(on_vulkan.begin(), on_vulkan.end(), Conv2dConfig{false, 64, 6, true, 16}), on_vulkan.end());
  EXPECT_EQ(std::count_if(on_vulkan.begin(), on_vulkan.end(),
                          [](const Conv2dConfig& c) { return c.per_core > 0 && c.images && !c.rows; }), 0);
  Limits cpu = vulkan;
  cpu.cpu = true;
  EXPECT_FALSE(conv2d_heuristic(first, cpu).images);
  const Conv2dShape b64 = conv2d_shape({64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_TRUE(conv2d_heuristic(b64, vulkan).shared_w);
  const Conv2dShape second = conv2d_shape({8192, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_TRUE(conv2d_heuristic(second, vulkan).rows);
  // Refused by name: fewer invocations than an image's strips, fewer channels than all, strides, the input gradient.
  Conv2dConfig narrow = four;
  narrow.wg = 128;
  EXPECT_THROW(conv2d_kernel(first, spire::kir::Type::F32, narrow, vulkan), std::invalid_argument);
  Conv2dConfig some = four;
  some.c_block = 3;
  EXPECT_THROW(conv2d_kernel(first, spire::kir::Type::F32, some, vulkan), std::invalid_argument);
  const Conv2dShape strided = conv2d_shape({8192, 1, 28, 28}, {6, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 1);
  EXPECT_THROW(conv2d_kernel(strided, spire::kir::Type::F32, four, vulkan), std::invalid_argument);
  EXPECT_THROW(conv2d_grad_input_kernel(first, spire::kir::Type::F32, four, vulkan), std::invalid_argument);
  EXPECT_NO_THROW(conv2d_kernel(first, spire::kir::Type::F32, four, vulkan));
}

// A shared_w config the shape cannot take is refused by name, not built: with rows, with fewer than all output
// channels, on the input gradient, and with weights past 16 KiB (16 channels of 6 x 5x5 in f64 take 19.2 KB).
TEST(Candidates, SharedWeightsRefusedWhereTheyDoNotFit) {
  const Conv2dShape s = conv2d_shape({2, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  using spire::kir::Type;
  EXPECT_NO_THROW(conv2d_kernel(s, Type::F32, Conv2dConfig{false, 128, 16, true}));
  EXPECT_THROW(conv2d_kernel(s, Type::F32, Conv2dConfig{true, 32, 16, true}), std::invalid_argument);
  EXPECT_THROW(conv2d_kernel(s, Type::F32, Conv2dConfig{false, 128, 8, true}), std::invalid_argument);
  EXPECT_THROW(conv2d_kernel(s, Type::F64, Conv2dConfig{false, 128, 16, true}), std::invalid_argument);
  EXPECT_THROW(conv2d_grad_input_kernel(s, Type::F32, Conv2dConfig{false, 128, 6, true}), std::invalid_argument);
}

TEST(Candidates, RowsAndCrossEntropy) {
  const SoftmaxShape s{4, 300, 1};
  auto cs = row_candidates(softmax_heuristic(s), s.axis, {});
  expect_distinct_with_heuristic_first(cs, softmax_heuristic(s));
  for (const auto& c : cs) EXPECT_LE(c.wg, 256u);
  const Limits gpu{64 * 1024, 1024};
  auto ce = cross_entropy_candidates(1000, gpu);
  EXPECT_EQ(ce.front(), cross_entropy_heuristic(1000, gpu));
  EXPECT_TRUE(std::find(ce.begin(), ce.end(), 256u) != ce.end());
  EXPECT_TRUE(std::find(ce.begin(), ce.end(), 1024u) != ce.end());
}

TEST(Heuristics, CrossEntropyTakesTheWidestWorkgroupOnGpus) {
  // One workgroup walks every row: on a GPU as wide as the device allows (up to 1024), on a CPU 256 at most.
  const Limits gpu{64 * 1024, 1024};
  Limits cpu = gpu;
  cpu.cpu = true;
  const Limits narrow{48 * 1024, 256};
  EXPECT_EQ(cross_entropy_heuristic(8192, gpu), 1024u);
  EXPECT_EQ(cross_entropy_heuristic(300, gpu), 512u);
  EXPECT_EQ(cross_entropy_heuristic(64, gpu), 64u);
  EXPECT_EQ(cross_entropy_heuristic(8192, cpu), 256u);
  EXPECT_EQ(cross_entropy_heuristic(8192, narrow), 256u);
  EXPECT_EQ(cross_entropy_heuristic(8192), 256u);
}

TEST(Heuristics, CrossEntropySplitsManyRowsOnGpus) {
  // From 2048 rows on a GPU, one row per invocation in workgroups of 256 and a second launch adding their sums.
  const Limits gpu{64 * 1024, 1024};
  Limits cpu = gpu;
  cpu.cpu = true;
  EXPECT_EQ(cross_entropy_splits(8192, gpu), 32u);
  EXPECT_EQ(cross_entropy_splits(2048, gpu), 8u);
  EXPECT_EQ(cross_entropy_splits(2047, gpu), 1u);
  EXPECT_EQ(cross_entropy_splits(8192, cpu), 1u);
  EXPECT_EQ(cross_entropy_splits(1 << 20, gpu), 1024u);
}

}  // namespace
