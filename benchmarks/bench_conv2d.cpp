// Convolution speed on each device, as spire's users get it: every distinct convolution of resnet18 (224x224
// input) at batch 1 and 64, forward (conv2d) and both gradients (conv2d_grad_input: dgrad, conv2d_grad_weight:
// wgrad, the ops autograd emits for conv2d), each a graph of one op lowered, compiled and run by the executor
// with the tuning cache's config (else the template's heuristic). Each row is checked first (sampled elements
// against float64; nonzero exit if any is off), then timed with the device's timestamps (median of --runs
// after warm-up). tools/gpu/speed_table.py puts the CSV beside PyTorch's (benchmarks/torch_matmul_conv.py).
//
//   spire_bench_conv2d [--device D|all] [--runs 50] [--small] [--layers conv1,...] [--batches 1,64]
//                      [--passes fwd,dgrad,wgrad] [--csv FILE] [--peak-tflops T] [--tuning-cache FILE] [--tune]
//                      [--dtype f32|f16|bf16]
// With --dtype f16 or bf16 the input, the weights and the result are of that dtype (f32 sums): the forward pass then
// runs on tensor cores where the device has them (kernels/conv2d_mma_kernel.h); only it by default.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/sliding_window.h"
#include "benchmarks/support/bench_dtype.h"
#include "benchmarks/support/bench_flags.h"
#include "benchmarks/support/dot_check.h"
#include "benchmarks/support/kernel_table.h"
#include "benchmarks/support/result_table.h"
#include "benchmarks/support/timed_graph.h"
#include "ir/graph/graph.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tuning/tuning_cache.h"

using namespace spire;

namespace {

const char* kUsage =
    "usage: spire_bench_conv2d [--device D|all] [--runs 50] [--warmup 3] [--warmup-ms 500] [--small] [--layers LIST]\n"
    "                          [--batches 1,64] [--passes fwd,dgrad,wgrad] [--csv FILE] [--peak-tflops T]\n"
    "                          [--tuning-cache FILE] [--tune] [--dtype f32|f16|bf16]\n"
    "  --warmup, --warmup-ms: untimed runs before the timed ones, at least this many and this long (1 and 0 with\n"
    "                         --small), so that the GPU's clocks have risen from idle\n"
    "  --layers: resnet18 layer names (conv1, layer1.0.conv1, layer2.0.conv1, ...); default: all 11 distinct\n"
    "  --small:  batch 1, only conv1 (7x7) and layer2's three convolutions (28x28 outputs), for a CPU driver\n"
    "  --dtype:  the dtype of the input, weights and result (default f32; f16 and bf16 sum in f32 and time the\n"
    "            forward pass unless --passes says otherwise)\n";

// One square convolution of resnet18 (no bias, groups 1, dilation 1), named after the first torchvision
// module that has it; the others of its stage repeat it exactly.
struct ConvLayer {
  std::string name;
  int64_t cin, cout, k, stride, pad, in_hw;
  int64_t out_hw() const { return sliding_window_positions(in_hw, k, stride, pad); }
  std::string geometry() const {
    return fmt::format("{}x{}{} {}->{} @{}", k, k, stride > 1 ? fmt::format("/{}", stride) : "", cin, cout, in_hw);
  }
};

std::vector<ConvLayer> resnet18_layers() {
  return {
      {"conv1", 3, 64, 7, 2, 3, 224},
      {"layer1.0.conv1", 64, 64, 3, 1, 1, 56},
      {"layer2.0.conv1", 64, 128, 3, 2, 1, 56},
      {"layer2.0.conv2", 128, 128, 3, 1, 1, 28},
      {"layer2.0.downsample", 64, 128, 1, 2, 0, 56},
      {"layer3.0.conv1", 128, 256, 3, 2, 1, 28},
      {"layer3.0.conv2", 256, 256, 3, 1, 1, 14},
      {"layer3.0.downsample", 128, 256, 1, 2, 0, 28},
      {"layer4.0.conv1", 256, 512, 3, 2, 1, 14},
      {"layer4.0.conv2", 512, 512, 3, 1, 1, 7},
      {"layer4.0.downsample", 256, 512, 1, 2, 0, 14},
  };
}

enum class Pass { Forward, GradInput, GradWeight };
const char* pass_name(Pass p) { return p == Pass::Forward ? "fwd" : p == Pass::GradInput ? "dgrad" : "wgrad"; }

// Tensors in NCHW / [Cout, Cin, k, k], row-major.
struct Problem {
  ConvLayer l;
  int64_t n;
  int64_t x_index(int64_t b, int64_t c, int64_t h, int64_t w) const {
    return ((b * l.cin + c) * l.in_hw + h) * l.in_hw + w;
  }
  int64_t y_index(int64_t b, int64_t c, int64_t h, int64_t w) const {
    return ((b * l.cout + c) * l.out_hw() + h) * l.out_hw() + w;
  }
  int64_t w_index(int64_t co, int64_t ci, int64_t r, int64_t s) const {
    return ((co * l.cin + ci) * l.k + r) * l.k + s;
  }
  graph::Shape x_shape() const { return {n, l.cin, l.in_hw, l.in_hw}; }
  graph::Shape y_shape() const { return {n, l.cout, l.out_hw(), l.out_hw()}; }
  graph::Shape w_shape() const { return {l.cout, l.cin, l.k, l.k}; }
  // Every pass does the forward's multiply-adds, as the graph's op costs count them.
  double flops() const { return 2.0 * double(n * l.cout * l.out_hw() * l.out_hw()) * double(l.cin * l.k * l.k); }
};

// The graph of one pass: inputs "x", "w" or "gy" (the two the pass reads), output "y", all of type `t`.
graph::Graph pass_graph(const Problem& p, Pass pass, graph::DType t) {
  graph::Graph g;
  graph::Conv2dOptions opt{.stride = {p.l.stride, p.l.stride}, .padding = {p.l.pad, p.l.pad}};
  if (pass == Pass::Forward) {
    auto x = g.input("x", t, p.x_shape());
    g.output("y", g.conv2d(x, g.input("w", t, p.w_shape()), opt));
  } else if (pass == Pass::GradInput) {
    auto gy = g.input("gy", t, p.y_shape());
    g.output("y", g.conv2d_grad_input(gy, g.input("w", t, p.w_shape()), opt, p.x_shape()));
  } else {
    auto gy = g.input("gy", t, p.y_shape());
    g.output("y", g.conv2d_grad_weight(gy, g.input("x", t, p.x_shape()), opt, p.w_shape()));
  }
  return g;
}

// float64 reference of one element of the pass's result at flat index `at` (the result's own layout).
// x: the input, w: the weights, gy: the upstream gradient, each present where the pass reads it.
bench::DotReference reference(const Problem& p, Pass pass, int64_t at, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& gy) {
  const ConvLayer& l = p.l;
  const int64_t H = l.in_hw, O = l.out_hw();
  bench::DotReference ref;
  auto in_range = [](int64_t v, int64_t n) { return v >= 0 && v < n; };
  if (pass == Pass::Forward) {  // y[b, co, oh, ow] = sum x[b, ci, oh*S-P+r, ow*S-P+s] w[co, ci, r, s]
    int64_t ow = at % O, oh = at / O % O, co = at / (O * O) % l.cout, b = at / (O * O * l.cout);
    for (int64_t ci = 0; ci < l.cin; ++ci)
      for (int64_t r = 0; r < l.k; ++r)
        for (int64_t s = 0; s < l.k; ++s) {
          int64_t h = oh * l.stride - l.pad + r, v = ow * l.stride - l.pad + s;
          if (in_range(h, H) && in_range(v, H))
            ref.add(x[size_t(p.x_index(b, ci, h, v))], w[size_t(p.w_index(co, ci, r, s))]);
        }
  } else if (pass == Pass::GradInput) {  // gx[b, ci, h, v]: every output whose window covers (h, v)
    int64_t v = at % H, h = at / H % H, ci = at / (H * H) % l.cin, b = at / (H * H * l.cin);
    for (int64_t co = 0; co < l.cout; ++co)
      for (int64_t r = 0; r < l.k; ++r)
        for (int64_t s = 0; s < l.k; ++s) {
          int64_t hh = h + l.pad - r, vv = v + l.pad - s;
          if (hh % l.stride || vv % l.stride) continue;
          int64_t oh = hh / l.stride, ow = vv / l.stride;
          if (hh >= 0 && vv >= 0 && oh < O && ow < O)
            ref.add(gy[size_t(p.y_index(b, co, oh, ow))], w[size_t(p.w_index(co, ci, r, s))]);
        }
  } else {  // gw[co, ci, r, s] = sum over b, oh, ow of gy[b, co, oh, ow] x[b, ci, oh*S-P+r, ow*S-P+s]
    int64_t s = at % l.k, r = at / l.k % l.k, ci = at / (l.k * l.k) % l.cin, co = at / (l.k * l.k * l.cin);
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t oh = 0; oh < O; ++oh)
        for (int64_t ow = 0; ow < O; ++ow) {
          int64_t h = oh * l.stride - l.pad + r, v = ow * l.stride - l.pad + s;
          if (in_range(h, H) && in_range(v, H))
            ref.add(gy[size_t(p.y_index(b, co, oh, ow))], x[size_t(p.x_index(b, ci, h, v))]);
        }
  }
  return ref;
}

// The largest error (dot_check.h) over the first, the last and 30 random elements of the result; infinity
// if any element is not finite (unwritten elements keep the executor's NaN poison).
double max_error(const Problem& p, Pass pass, const std::vector<float>& result, const std::vector<float>& x,
                 const std::vector<float>& w, const std::vector<float>& gy) {
  if (!std::all_of(result.begin(), result.end(), [](float v) { return std::isfinite(v); }))
    return std::numeric_limits<double>::infinity();
  std::vector<int64_t> at = {0, int64_t(result.size()) - 1};
  std::mt19937 rng(11);
  for (int i = 0; i < 30; ++i) at.push_back(int64_t(rng() % result.size()));
  double worst = 0;
  for (int64_t i : at) worst = std::max(worst, reference(p, pass, i, x, w, gy).error(result[size_t(i)]));
  return worst;
}

template <class T>
bool chosen(const std::vector<T>& wanted, const T& v) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), v) != wanted.end();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> layers, passes;
  std::vector<int64_t> batches;
  graph::DType dtype = graph::DType::F32;
  bench::BenchFlags flags = bench::parse_bench_flags(argc, argv, kUsage, [&](const std::string& f, const auto& value) {
    if (f == "--layers")
      layers = bench::split_list(value());
    else if (f == "--passes")
      passes = bench::split_list(value());
    else if (f == "--dtype")
      dtype = bench::parse_dtype(value());
    else if (f == "--batches")
      for (const std::string& b : bench::split_list(value())) batches.push_back(std::stoll(b));
    else
      return false;
    return true;
  });
  if (flags.small) {
    if (batches.empty()) batches = {1};
    if (layers.empty()) layers = {"conv1", "layer2.0.conv1", "layer2.0.conv2", "layer2.0.downsample"};
  }
  if (batches.empty()) batches = {1, 64};
  if (dtype != graph::DType::F32 && passes.empty()) passes = {"fwd"};
  const double max_relative_error = bench::max_relative_error(dtype);
  bench::ResultTable table(bench::kernel_table_columns({{"layer", "layer", 19, true},
                                                        {"geometry", "geometry", 19, true},
                                                        {"batch", "batch", 5},
                                                        {"pass", "pass", 5, true}},
                                                       "config"));
  int failures = 0;
  try {
    const std::string cache = bench::announce_kernel_bench(flags, dtype, "resnet18 convolutions");
    bench::for_each_bench_device(flags, dtype, table, [&](rt::Device& dev, std::optional<double> peak) {
      const rt::DeviceInfo& info = dev.info();
      const std::string& id = info.id;
      for (const ConvLayer& l : resnet18_layers()) {
        if (!chosen(layers, l.name)) continue;
        for (int64_t n : batches) {
          Problem p{l, n};
          // Each tensor from its own fixed seed; a pass reads two of them.
          std::vector<float> x = bench::rounded(bench::random_values(size_t(graph::num_elements(p.x_shape())), 1), dtype);
          std::vector<float> w = bench::rounded(bench::random_values(size_t(graph::num_elements(p.w_shape())), 2), dtype);
          std::vector<float> gy = bench::rounded(bench::random_values(size_t(graph::num_elements(p.y_shape())), 3), dtype);
          for (Pass pass : {Pass::Forward, Pass::GradInput, Pass::GradWeight}) {
            if (!chosen(passes, std::string(pass_name(pass)))) continue;
            std::vector<bench::GraphInput> in;
            if (pass != Pass::GradWeight) in.push_back({"w", w});
            if (pass != Pass::GradInput) in.push_back({"x", x});
            if (pass != Pass::Forward) in.push_back({"gy", gy});
            bench::TimedGraph t =
                bench::time_graph(dev, pass_graph(p, pass, dtype), in, {cache, flags.tune}, flags.runs, flags.warmup,
                                  flags.warmup_ms);
            const double err = max_error(p, pass, t.output, x, w, gy);
            if (!bench::add_kernel_row(table, {id, info.name,
                                               {l.name, l.geometry(), fmt::format("{}", n), pass_name(pass)}, &t,
                                               p.flops(), peak, err, max_relative_error})) {
              ++failures;
              fmt::print(stderr, "spire_bench_conv2d: {} {} batch {} {}: max relative error {:.3g} exceeds {:.0e}\n",
                         id, l.name, n, pass_name(pass), err, max_relative_error);
            }
          }
        }
      }
    });
    if (!flags.csv.empty()) table.write_csv(flags.csv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "spire_bench_conv2d: error: {}\n", e.what());
    return 1;
  }
  if (failures) {
    fmt::print(stderr, "spire_bench_conv2d: {} result(s) wrong (see FAIL rows)\n", failures);
    return 1;
  }
  return 0;
}
