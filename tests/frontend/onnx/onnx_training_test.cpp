// Train what you imported: an imported model (eval mode) gets a loss appended to its graph text, `spire graph
// grad --parameters` differentiates it, and every parameter's gradient on every device present is checked
// against the float64 evaluator's (`spire graph eval` without --device).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "io/tensor_file.h"
#include "runtime/device.h"
#include "tests/support/spire_cli.h"

namespace spire {
namespace {

namespace fs = std::filesystem;

class TrainImported : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("spire_train_imported_{}_{}", ::getpid(), GetParam());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_P(TrainImported, EveryParameterGradientMatchesFloat64OnEveryDevice) {
  const std::string name = GetParam();
  auto r = spire(fmt::format("import {} -o {}", model(name + ".onnx"), path("m.graph")));
  ASSERT_EQ(r.exit_code, 0) << r.out;

  // loss = sum(y * loss_weight): every output element weighted by a fixed random number, so no gradient
  // can cancel by symmetry.
  const auto torch_out = io::load_tensors(model(name + ".torch.safetensors"));
  const graph::Tensor& y = torch_out.at("y");
  std::vector<std::string> axes;
  for (int64_t d = 0; d < y.rank(); ++d) axes.push_back(std::to_string(d));
  const std::string type = y.type().to_string();
  std::ofstream(path("loss.graph")) << read(path("m.graph"))
                                    << fmt::format("loss_weight = input() : {}\n", type)
                                    << fmt::format("weighted = mul(y, loss_weight) : {}\n", type)
                                    << fmt::format("loss = sum(weighted) {{axes=[{}], keepdim=false}} : f32[]\n",
                                                   fmt::join(axes, ","))
                                    << "output loss = loss\n";
  r = spire(fmt::format("graph grad {} --loss loss --parameters -o {}", path("loss.graph"), path("grad.graph")));
  ASSERT_EQ(r.exit_code, 0) << r.out;

  auto feed = io::load_tensors(path("m.safetensors"));
  for (auto& [n, t] : io::load_tensors(model(name + ".in.safetensors"))) feed[n] = t;
  graph::Tensor w(graph::DType::F32, y.shape);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : w.data) v = u(rng);
  feed["loss_weight"] = w.round_to_dtype();
  io::save_tensors(path("feed.safetensors"), feed);

  r = spire(fmt::format("graph eval {} --inputs {} --outputs {}", path("grad.graph"), path("feed.safetensors"),
                        path("ref.safetensors")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto want = io::load_tensors(path("ref.safetensors"));
  int grads = 0, weights = 0;
  for (const auto& [n, t] : want) grads += n.rfind("grad.", 0) == 0;
  for (const auto& [n, t] : io::load_tensors(path("m.safetensors"))) weights += graph::is_float(t.dtype);
  EXPECT_EQ(grads, weights) << "one gradient per float weight of the model";
  EXPECT_GT(grads, 8);

  for (const auto& device : rt::list_devices()) {
    const std::string out = path("dev.safetensors");
    r = spire(fmt::format("graph eval {} --inputs {} --outputs {} --device {}", path("grad.graph"),
                          path("feed.safetensors"), out, device.id));
    ASSERT_EQ(r.exit_code, 0) << device.id << ": " << r.out;
    const auto got = io::load_tensors(out);
    double worst = 0;
    std::string worst_name;
    for (const auto& [n, ref] : want) {
      if (n.rfind("grad.", 0) != 0) continue;
      const graph::Tensor& g = got.at(n);
      ASSERT_EQ(g.shape, ref.shape) << n;
      // Max-norm relative error of the whole gradient tensor (the op harness's measure).
      double diff = 0, scale = 0;
      for (size_t i = 0; i < ref.data.size(); ++i) {
        ASSERT_TRUE(std::isfinite(g.data[i])) << n << " element " << i << " on " << device.id;
        diff = std::max(diff, std::abs(g.data[i] - ref.data[i]));
        scale = std::max(scale, std::abs(ref.data[i]));
      }
      const double err = diff / std::max(scale, 1e-30);
      if (err > worst) worst = err, worst_name = n;
      EXPECT_LE(err, 1e-4) << n << " on " << device.id;
    }
    std::printf("%s on %s: %d parameter gradients, worst max-norm relative error %.3g (%s)\n", name.c_str(),
                device.id.c_str(), grads, worst, worst_name.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TrainImported, ::testing::Values("resnet18_small", "encoder13"));

}  // namespace
}  // namespace spire
