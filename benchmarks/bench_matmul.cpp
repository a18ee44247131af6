// Matmul speed on each device, as spire's users get it: a graph of one matmul lowered, compiled and run by
// the executor with the tuning cache's config (else the template's heuristic), next to the device's peak (fp32, or
// for f16/bf16 on a device with tensor cores the dense tensor-core rate). Shapes: large squares, resnet18's
// classifier, and the projections of a d_model 768 transformer at 512 tokens. Each row is checked first (sampled elements against float64; nonzero exit if any is off),
// then timed with the device's timestamps (median of --runs after warm-up). tools/gpu/speed_table.py puts
// the CSV beside PyTorch's (benchmarks/torch_matmul_conv.py).
//
//   spire_bench_matmul [--device D|all] [--runs 50] [--warmup-ms 500] [--small] [--shapes 1024,512x768x2304,...]
//                      [--csv FILE] [--peak-tflops T] [--tuning-cache FILE] [--tune] [--dtype f32|f16|bf16]
// With --dtype f16 or bf16, a and b and y are of that dtype; the product accumulates in f32 (the graph's half ops
// compute in f32, passes/compute_in_f32.h), so the time includes the casts up and down.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "benchmarks/support/bench_dtype.h"
#include "benchmarks/support/bench_flags.h"
#include "benchmarks/support/dot_check.h"
#include "benchmarks/support/kernel_table.h"
#include "benchmarks/support/result_table.h"
#include "benchmarks/support/timed_graph.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tuning/tuning_cache.h"

using namespace spire;

namespace {

const char* kUsage =
    "usage: spire_bench_matmul [--device D|all] [--runs 50] [--warmup 3] [--warmup-ms 500] [--small] [--shapes LIST]\n"
    "                          [--csv FILE] [--peak-tflops T] [--tuning-cache FILE] [--tune] [--dtype f32|f16|bf16]\n"
    "                          [--b-transposed] [--b-parameter] [--launches]\n"
    "  --warmup, --warmup-ms: untimed runs before the timed ones, at least this many and this long (1 and 0 with\n"
    "                         --small), so that the GPU's clocks have risen from idle\n"
    "  --shapes: comma-separated MxKxN or N (N x N x N); default: 1024..8192 squares, resnet18 fc, transformer\n"
    "  --dtype:  the dtype of a, b and y (default f32); f16 and bf16 accumulate in f32\n"
    "  --small:  every dimension divided by 16 (at least 1), for a CPU Vulkan driver\n"
    "  --b-parameter: b a parameter of the graph (a layer's weight), so launches that read only it (a packing of it)\n"
    "                 run in the first step alone\n"
    "  --launches: each launch's median device time too, under its row\n"
    "  --b-transposed: b given as [N, K] and transposed in the graph (a Linear layer's weight), which the lowering\n"
    "                  reads in place\n";

struct MatmulCase {
  std::string model;  // where the shape comes from
  int64_t m, k, n;
};

std::vector<MatmulCase> default_cases() {
  return {
      {"square", 1024, 1024, 1024},
      {"square", 2048, 2048, 2048},
      {"square", 4096, 4096, 4096},
      {"square", 8192, 8192, 8192},
      {"resnet18 fc b1", 1, 512, 1000},
      {"resnet18 fc b64", 64, 512, 1000},
      // d_model 768, 512 tokens, MLP 4x wide: the four matmuls of a transformer layer besides attention's
      {"d768 qkv proj", 512, 768, 2304},
      {"d768 attn out", 512, 768, 768},
      {"d768 mlp up", 512, 768, 3072},
      {"d768 mlp down", 512, 3072, 768},
  };
}

std::vector<MatmulCase> parse_cases(const std::string& list) {
  std::vector<MatmulCase> out;
  for (const std::string& item : bench::split_list(list)) {
    std::vector<std::string> d = bench::split_list(item, 'x');
    if (d.size() == 1)
      out.push_back({"given", std::stoll(d[0]), std::stoll(d[0]), std::stoll(d[0])});
    else if (d.size() == 3)
      out.push_back({"given", std::stoll(d[0]), std::stoll(d[1]), std::stoll(d[2])});
    else
      throw std::invalid_argument("--shapes: '" + item + "' is neither MxKxN nor N");
  }
  return out;
}

// The largest error (dot_check.h) over the four corners and 60 random elements of y = a b, a [M,K], b [K,N];
// infinity if any element of y is not finite (unwritten elements keep the executor's NaN poison).
double max_error(const MatmulCase& c, const std::vector<float>& a, const std::vector<float>& b,
                 const std::vector<float>& y, bool b_transposed) {
  if (!std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }))
    return std::numeric_limits<double>::infinity();
  std::vector<std::pair<int64_t, int64_t>> at = {{0, 0}, {0, c.n - 1}, {c.m - 1, 0}, {c.m - 1, c.n - 1}};
  std::mt19937 rng(7);
  for (int i = 0; i < 60; ++i) at.push_back({int64_t(rng() % uint64_t(c.m)), int64_t(rng() % uint64_t(c.n))});
  double worst = 0;
  for (auto [i, j] : at) {
    bench::DotReference ref;
    for (int64_t k = 0; k < c.k; ++k) ref.add(a[size_t(i * c.k + k)], b[size_t(b_transposed ? j * c.k + k : k * c.n + j)]);
    worst = std::max(worst, ref.error(y[size_t(i * c.n + j)]));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes;
  graph::DType dtype = graph::DType::F32;
  bool b_transposed = false, b_parameter = false, launches = false;
  bench::BenchFlags flags = bench::parse_bench_flags(argc, argv, kUsage, [&](const std::string& f, const auto& value) {
    if (f == "--shapes") {
      shapes = value();
      return true;
    }
    if (f == "--b-transposed") {
      b_transposed = true;
      return true;
    }
    if (f == "--b-parameter") {
      b_parameter = true;
      return true;
    }
    if (f == "--launches") {
      launches = true;
      return true;
    }
    if (f == "--dtype") {
      dtype = bench::parse_dtype(value());
      return true;
    }
    return false;
  });
  const double max_relative_error = bench::max_relative_error(dtype);
  bench::ResultTable table(bench::kernel_table_columns({{"shape MxKxN", "shape", 16, true},
                                                        {"model", "model", 16, true}},
                                                       "config (tiling)"));
  int failures = 0;
  try {
    std::vector<MatmulCase> cases = shapes.empty() ? default_cases() : parse_cases(shapes);
    if (flags.small)
      for (MatmulCase& c : cases)
        c = {c.model, std::max<int64_t>(1, c.m / 16), std::max<int64_t>(1, c.k / 16), std::max<int64_t>(1, c.n / 16)};
    const std::string cache = bench::announce_kernel_bench(flags, dtype, "matmul");
    bench::for_each_bench_device(flags, dtype, table, [&](rt::Device& dev, std::optional<double> peak) {
      const rt::DeviceInfo& info = dev.info();
      const std::string& id = info.id;
      for (const MatmulCase& c : cases) {
        graph::Graph g;
        auto a = g.input("a", dtype, {c.m, c.k});
        const graph::Shape b_shape = b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.k, c.n};
        auto b = b_parameter ? g.parameter("b", dtype, b_shape) : g.input("b", dtype, b_shape);
        g.output("y", g.matmul(a, b_transposed ? g.transpose(b) : b));
        std::vector<bench::GraphInput> in = {{"a", bench::rounded(bench::random_values(size_t(c.m * c.k), 1), dtype)},
                                             {"b", bench::rounded(bench::random_values(size_t(c.k * c.n), 2), dtype)}};
        bench::TimedGraph t =
            bench::time_graph(dev, g, in, {cache, flags.tune}, flags.runs, flags.warmup, flags.warmup_ms, launches);
        const double err = max_error(c, in[0].data, in[1].data, t.output, b_transposed);
        const double flops = 2.0 * double(c.m) * double(c.k) * double(c.n);
        if (!bench::add_kernel_row(table, {id, info.name, {fmt::format("{}x{}x{}", c.m, c.k, c.n), c.model}, &t, flops,
                                           peak, err, max_relative_error})) {
          ++failures;
          fmt::print(stderr, "spire_bench_matmul: {} {}x{}x{}: max relative error {:.3g} exceeds {:.0e}\n", id, c.m,
                     c.k, c.n, err, max_relative_error);
        }
        for (const lowering::LaunchTime& l : t.launches) fmt::print("    launch {:.4f} ms  {}\n", l.ms, l.kernel);
      }
    });
    if (!flags.csv.empty()) table.write_csv(flags.csv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "spire_bench_matmul: error: {}\n", e.what());
    return 1;
  }
  if (failures) {
    fmt::print(stderr, "spire_bench_matmul: {} result(s) wrong (see FAIL rows)\n", failures);
    return 1;
  }
  return 0;
}
