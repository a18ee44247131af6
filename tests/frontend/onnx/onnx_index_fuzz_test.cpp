// Random index inputs of the ops whose indices choose what is read: TopK's k, GatherND's indices (with and without
// batch_dims), Compress's condition, the recurrent ops' sequence_lens, Pad's edge/reflect pads, GridSample's grid and
// RoiAlign's regions. Each either imports
// and computes what a direct computation here says (on the float64 evaluator), or is refused with a message: never a
// read out of bounds (this binary also runs under ASan + UBSan in tools/run-tests.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>

#include <fmt/format.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/graph/evaluator.h"
#include "tests/frontend/onnx/onnx_test_util.h"

namespace spire {
namespace {

namespace fs = std::filesystem;
using graph::DType;
using graph::Tensor;

class OnnxIndexFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_onnx_index_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Imports `g` with `known` inputs known at import; evaluates it on the float64 evaluator with `feeds` (by ONNX name)
  // and returns output 0, or returns the error (import or evaluation) in `error`.
  std::optional<Tensor> run(const onnx::GraphProto& g, const std::map<std::string, Tensor>& known,
                            const std::map<std::string, Tensor>& feeds, std::string* error, int64_t opset = 13) {
    const fs::path p = dir_ / "m.onnx";
    onnx_test::write_model(onnx_test::model(g, opset), p);
    onnx_import::ImportOptions o;
    o.known_inputs = known;
    try {
      const auto m = onnx_import::import_model(p, o);
      std::map<std::string, Tensor> in;
      for (const auto& [n, t] : m.weights) in[n] = t;
      for (const auto& b : m.inputs) in[b.graph_name] = feeds.at(b.onnx_name);
      return graph::evaluate(m.graph, in).at(m.outputs.at(0).graph_name);
    } catch (const std::exception& e) {
      *error = e.what();
      return std::nullopt;
    }
  }

  fs::path dir_;
  std::mt19937 rng_{2026};
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  Tensor random_floats(graph::Shape shape) {
    Tensor t(DType::F32, shape);
    for (double& v : t.data) v = double(float(std::uniform_real_distribution<double>(-4, 4)(rng_)));
    return t;
  }
};

// A graph output of a type and rank whose dims are left symbolic (the importer's and ONNX's inference give them).
onnx::ValueInfoProto output_of(const std::string& name, int elem, int rank) {
  std::vector<std::string> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(name + "_dim" + std::to_string(d));
  return onnx_test::value_info(name, elem, dims);
}

onnx::TensorProto tensor_of(const std::string& name, const Tensor& t) {
  return t.dtype == DType::F32 ? onnx_test::float_tensor(name, t.shape, std::vector<float>(t.data.begin(), t.data.end()))
                               : onnx_test::int64_tensor(name, t.shape, std::vector<int64_t>(t.data.begin(), t.data.end()));
}

// k from -3 to 14 over rows of 10: 1..10 import and give the k largest in order with their positions; the rest are
// refused with both numbers.
TEST_F(OnnxIndexFuzz, TopKsKIsCheckedAndTheResultIsTheKLargest) {
  int imported = 0, refused = 0;
  for (int iter = 0; iter < 40; ++iter) {
    const int64_t k = uniform(-3, 14);
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"3", "10"});
    *g.add_input() = onnx_test::value_info("k", onnx::TensorProto::INT64, {"1"});
    *g.add_output() = output_of("v", onnx::TensorProto::FLOAT, 2);
    *g.add_output() = output_of("i", onnx::TensorProto::INT64, 2);
    *g.add_node() = onnx_test::node("TopK", {"x", "k"}, {"v", "i"}, "topk");
    Tensor x = random_floats({3, 10});
    x.data[3] = x.data[7];  // a tie: the lower index comes first
    const Tensor kt = Tensor::from(DType::I64, {1}, {double(k)});
    std::string error;
    const auto v = run(g, {{"k", kt}}, {{"x", x}, {"k", kt}}, &error);
    if (!v) {
      ++refused;
      EXPECT_TRUE(k < 1 || k > 10) << k << ": " << error;
      EXPECT_NE(error.find(fmt::format("k = {}", k)), std::string::npos) << error;
      continue;
    }
    ++imported;
    ASSERT_EQ(v->shape, (graph::Shape{3, k}));
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<int64_t> order(10);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return x.data[size_t(r * 10 + a)] > x.data[size_t(r * 10 + b)]; });
      for (int64_t j = 0; j < k; ++j) EXPECT_EQ(v->data[size_t(r * k + j)], x.data[size_t(r * 10 + order[size_t(j)])]);
    }
  }
  EXPECT_GT(imported, 0);
  EXPECT_GT(refused, 0);
}

// Index tuples drawn inside their axes, or from -7 to 7, for data [3, 4, 2] (batch_dims 0 or 1): tuples inside the axes (negative ones
// counting from the end) give the element or row a direct lookup gives; any index outside its axis makes the
// evaluator refuse the gather, naming the index, instead of reading a neighbouring element or past the data.
TEST_F(OnnxIndexFuzz, GatherNDIndicesOutsideTheirAxisAreRefusedNeverRead) {
  const graph::Shape data_shape = {3, 4, 2};
  int good = 0, bad = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t batch_dims = iter % 2;
    const int64_t tuple = 2;  // indexes axes [batch_dims, batch_dims + 2)
    const graph::Shape index_shape = batch_dims ? graph::Shape{3, 2, tuple} : graph::Shape{5, tuple};
    Tensor indices(DType::I64, index_shape);
    bool inside = true;
    for (size_t e = 0; e < indices.data.size(); ++e) {
      const int64_t axis_len = data_shape[size_t(batch_dims) + e % tuple];
      const int64_t v = iter % 4 < 2 ? uniform(-axis_len, axis_len - 1) : uniform(-7, 7);  // half all inside
      inside = inside && v >= -axis_len && v < axis_len;
      indices.data[e] = double(v);
    }
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("data", onnx::TensorProto::FLOAT, {"3", "4", "2"});
    std::vector<std::string> dims;
    for (int64_t d : index_shape) dims.push_back(std::to_string(d));
    *g.add_input() = onnx_test::value_info("indices", onnx::TensorProto::INT64, dims);
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 2);
    auto n = onnx_test::node("GatherND", {"data", "indices"}, {"y"}, "gnd");
    onnx_test::add_int_attr(n, "batch_dims", batch_dims);
    *g.add_node() = n;
    const Tensor data = random_floats(data_shape);
    std::string error;
    // The indices are a run-time input (not known at import): the device-side form must guard them.
    const auto y = run(g, {}, {{"data", data}, {"indices", indices}}, &error);
    if (!inside) {
      ++bad;
      EXPECT_FALSE(y.has_value()) << "an index outside its axis was read";
      EXPECT_NE(error.find("outside an axis"), std::string::npos) << error;
      continue;
    }
    ++good;
    ASSERT_TRUE(y.has_value()) << error;
    const int64_t tuples = indices.numel() / tuple, per_batch = batch_dims ? 2 : tuples;
    const int64_t rest = batch_dims ? 1 : 2;  // elements per looked-up slice
    for (int64_t q = 0; q < tuples; ++q) {
      const int64_t b = batch_dims ? q / per_batch : 0;
      int64_t at[3] = {b, 0, 0};
      for (int64_t j = 0; j < tuple; ++j) {
        const int64_t len = data_shape[size_t(batch_dims + j)];
        int64_t v = int64_t(indices.data[size_t(q * tuple + j)]);
        at[batch_dims + j] = v < 0 ? v + len : v;
      }
      for (int64_t r = 0; r < rest; ++r) {
        const int64_t flat = batch_dims ? (at[0] * 4 + at[1]) * 2 + at[2] : (at[0] * 4 + at[1]) * 2 + r;
        EXPECT_EQ(y->data[size_t(q * rest + r)], data.data[size_t(flat)]) << q << "," << r;
      }
    }
  }
  EXPECT_GT(good, 0);
  EXPECT_GT(bad, 0);
}

// Conditions of 0 to 8 entries for an axis of 5: up to 5 select the true rows (a longer one is refused).
TEST_F(OnnxIndexFuzz, CompressConditionsLongerThanTheAxisAreRefused) {
  for (int iter = 0; iter < 30; ++iter) {
    const int64_t len = uniform(0, 8);
    Tensor cond(DType::Bool, {len});
    for (double& v : cond.data) v = double(uniform(0, 1));
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"5", "2"});
    *g.add_input() = onnx_test::value_info("c", onnx::TensorProto::BOOL, {std::to_string(len)});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 2);
    auto n = onnx_test::node("Compress", {"x", "c"}, {"y"}, "compress");
    onnx_test::add_int_attr(n, "axis", 0);
    *g.add_node() = n;
    const Tensor x = random_floats({5, 2});
    std::string error;
    const auto y = run(g, {{"c", cond}}, {{"x", x}, {"c", cond}}, &error);
    if (len > 5) {
      EXPECT_FALSE(y.has_value());
      EXPECT_NE(error.find("condition"), std::string::npos) << error;
      continue;
    }
    ASSERT_TRUE(y.has_value()) << error;
    std::vector<double> want;
    for (int64_t r = 0; r < len; ++r)
      if (cond.data[size_t(r)] != 0) want.insert(want.end(), {x.data[size_t(2 * r)], x.data[size_t(2 * r + 1)]});
    EXPECT_EQ(y->data, want);
  }
}

// sequence_lens from -1 to 5 for 3 steps: lengths outside [1, 3] are refused; the others import and run.
TEST_F(OnnxIndexFuzz, RecurrentSequenceLengthsOutsideTheSequenceAreRefused) {
  for (int iter = 0; iter < 20; ++iter) {
    const std::vector<int64_t> lens = {uniform(-1, 5), uniform(-1, 5)};
    const bool fits = std::all_of(lens.begin(), lens.end(), [](int64_t n) { return n >= 1 && n <= 3; });
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"3", "2", "4"});
    *g.add_input() = onnx_test::value_info("lens", onnx::TensorProto::INT32, {"2"});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 4);
    *g.add_initializer() = tensor_of("W", random_floats({1, 5, 4}));
    *g.add_initializer() = tensor_of("R", random_floats({1, 5, 5}));
    auto n = onnx_test::node("RNN", {"x", "W", "R", "", "lens"}, {"y"}, "rnn");
    onnx_test::add_int_attr(n, "hidden_size", 5);
    *g.add_node() = n;
    const Tensor lt = Tensor::from(DType::I32, {2}, {double(lens[0]), double(lens[1])});
    std::string error;
    const auto y = run(g, {{"lens", lt}}, {{"x", random_floats({3, 2, 4})}, {"lens", lt}}, &error);
    EXPECT_EQ(y.has_value(), fits) << lens[0] << "," << lens[1] << ": " << error;
    if (!fits) {
      EXPECT_NE(error.find("sequence length"), std::string::npos) << error;
    } else if (y) {  // past its length an element's output is zero
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t b = 0; b < 2; ++b) {
          if (t < lens[size_t(b)]) continue;
          for (int64_t h = 0; h < 5; ++h) EXPECT_EQ(y->data[size_t((t * 2 + b) * 5 + h)], 0.0) << t << "," << b;
        }
    }
  }
}

// Edge and reflect pads from -3 to 9 on a row of 4: every row read is inside the input (numpy's reflect and edge).
TEST_F(OnnxIndexFuzz, EdgeAndReflectPadsReadOnlyInsideTheInput) {
  for (int iter = 0; iter < 30; ++iter) {
    const bool reflect = iter % 2;
    const int64_t before = uniform(-3, 9), after = uniform(-3, 9);
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"1", "4"});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 2);
    *g.add_initializer() = onnx_test::int64_tensor("pads", {4}, {0, before, 0, after});
    auto n = onnx_test::node("Pad", {"x", "pads"}, {"y"}, "pad");
    auto* a = n.add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(reflect ? "reflect" : "edge");
    *g.add_node() = n;
    const Tensor x = Tensor::from(DType::F32, {1, 4}, {10, 11, 12, 13});
    std::string error;
    const auto y = run(g, {}, {{"x", x}}, &error);
    if (4 + before + after < 0) {
      EXPECT_FALSE(y.has_value());
      continue;
    }
    ASSERT_TRUE(y.has_value()) << before << "," << after << ": " << error;
    ASSERT_EQ(y->numel(), 4 + before + after);
    for (int64_t o = 0; o < y->numel(); ++o) {
      int64_t s = o - before;
      if (!reflect) {
        s = std::clamp<int64_t>(s, 0, 3);
      } else {
        while (s < 0 || s > 3) s = s < 0 ? -s : 6 - s;  // mirror about the ends until inside
      }
      EXPECT_EQ(y->data[size_t(o)], 10.0 + double(s)) << (reflect ? "reflect " : "edge ") << before << "," << after;
    }
  }
}

// GridSample's grid is data: points far outside the input, at infinities and NaN, in every padding mode, read only
// inside it (the evaluator refuses a gather index outside its axis, so any unguarded neighbour fails the import's run
// here); points outside read zeros with zeros padding, and every result stays within the input's range (bilinear,
// nearest) or within what the cubic convolution's weights can make of it (bicubic: each axis's weights sum to 1, their
// negative ones to at least -0.1875, so 2-D sums of values in [0, 24] stay in [-0.445, 1.445] x 24).
TEST_F(OnnxIndexFuzz, GridSamplePointsAnywhereReadOnlyInsideTheInput) {
  const double wild[] = {-3, -1.2, -1, -0.4, 0, 0.7, 1, 1.5, 40, -1e30, 1e30, INFINITY, -INFINITY, NAN};
  for (int iter = 0; iter < 18; ++iter) {
    const char* padding = iter % 3 == 0 ? "zeros" : iter % 3 == 1 ? "border" : "reflection";
    const char* mode = (iter / 3) % 3 == 0 ? "bilinear" : (iter / 3) % 3 == 1 ? "nearest" : "bicubic";
    const bool cubic = (iter / 3) % 3 == 2;
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"1", "2", "3", "4"});
    *g.add_input() = onnx_test::value_info("grid", onnx::TensorProto::FLOAT, {"1", "5", "5", "2"});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 4);
    auto n = onnx_test::node("GridSample", {"x", "grid"}, {"y"}, "sample");
    for (auto [name, value] : {std::pair{"padding_mode", padding}, {"mode", mode}}) {
      auto* a = n.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(value);
    }
    onnx_test::add_int_attr(n, "align_corners", iter % 4 < 2);
    *g.add_node() = n;
    Tensor grid(DType::F32, {1, 5, 5, 2});
    for (double& v : grid.data) v = wild[uniform(0, int64_t(std::size(wild)) - 1)];
    const Tensor x = Tensor::from(DType::F32, {1, 2, 3, 4}, [] {
      std::vector<double> v(24);
      for (size_t i = 0; i < v.size(); ++i) v[i] = double(i + 1);  // 1..24: every read of the input is positive
      return v;
    }());
    std::string error;
    const auto y = run(g, {}, {{"x", x}, {"grid", grid}}, &error, 16);
    ASSERT_TRUE(y.has_value()) << padding << " " << mode << ": " << error;
    for (size_t i = 0; i < y->data.size(); ++i) {
      const double v = y->data[i];
      if (std::isnan(v)) continue;  // a NaN point's weights are NaN in bilinear and bicubic modes, as in PyTorch
      EXPECT_GE(v, cubic ? -0.445 * 24 : 0.0) << mode << " " << i;
      EXPECT_LE(v, (cubic ? 1.445 : 1.0) * 24 + 1e-9) << mode << " " << i;
    }
  }
}

// Opset 20's names for the modes ("linear", "cubic") give what opset 16's ("bilinear", "bicubic") give.
TEST_F(OnnxIndexFuzz, GridSampleTakesOpset20sModeNames) {
  Tensor grid(DType::F32, {1, 5, 5, 2});
  for (double& v : grid.data) v = double(uniform(-120, 120)) / 100;
  const Tensor x = Tensor::from(DType::F32, {1, 2, 3, 4}, std::vector<double>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8,
                                                                              9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4});
  auto sample = [&](const char* mode, int64_t opset) {
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"1", "2", "3", "4"});
    *g.add_input() = onnx_test::value_info("grid", onnx::TensorProto::FLOAT, {"1", "5", "5", "2"});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 4);
    auto n = onnx_test::node("GridSample", {"x", "grid"}, {"y"}, "sample");
    auto* a = n.add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
    *g.add_node() = n;
    std::string error;
    const auto y = run(g, {}, {{"x", x}, {"grid", grid}}, &error, opset);
    EXPECT_TRUE(y.has_value()) << mode << ": " << error;
    return y.value_or(Tensor(DType::F32, {0}));
  };
  EXPECT_EQ(sample("linear", 20).data, sample("bilinear", 16).data);
  EXPECT_EQ(sample("cubic", 20).data, sample("bicubic", 16).data);
  EXPECT_NE(sample("cubic", 20).data, sample("linear", 20).data);
}

// RoiAlign's regions and image indices are data: regions far outside the image, at infinities and NaN, and image
// indices outside the batch read only inside the input (the evaluator refuses an unguarded gather); every result is
// within the input's range.
TEST_F(OnnxIndexFuzz, RoiAlignRegionsAnywhereReadOnlyInsideTheInput) {
  const double wild[] = {-30, -2, -1, -0.5, 0, 0.5, 2, 3.7, 5, 9, 1e30, -1e30, INFINITY, NAN};
  for (int iter = 0; iter < 12; ++iter) {
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"2", "2", "4", "5"});
    *g.add_input() = onnx_test::value_info("rois", onnx::TensorProto::FLOAT, {"6", "4"});
    *g.add_input() = onnx_test::value_info("at", onnx::TensorProto::INT64, {"6"});
    *g.add_output() = output_of("y", onnx::TensorProto::FLOAT, 4);
    auto n = onnx_test::node("RoiAlign", {"x", "rois", "at"}, {"y"}, "roi");
    onnx_test::add_int_attr(n, "output_height", 2);
    onnx_test::add_int_attr(n, "output_width", 3);
    onnx_test::add_int_attr(n, "sampling_ratio", 2);
    auto* a = n.add_attribute();
    a->set_name("coordinate_transformation_mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(iter % 2 ? "half_pixel" : "output_half_pixel");
    *g.add_node() = n;
    Tensor rois(DType::F32, {6, 4}), at(DType::I64, {6});
    for (double& v : rois.data) v = wild[uniform(0, int64_t(std::size(wild)) - 1)];
    for (double& v : at.data) v = double(uniform(-2, 3));  // the batch holds images 0 and 1
    Tensor x(DType::F32, {2, 2, 4, 5});
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = double(i + 1);  // 1..80
    std::string error;
    const auto y = run(g, {}, {{"x", x}, {"rois", rois}, {"at", at}}, &error, 16);
    ASSERT_TRUE(y.has_value()) << error;
    for (size_t i = 0; i < y->data.size(); ++i) {
      const double v = y->data[i];
      if (std::isnan(v)) continue;  // a NaN corner's weights are NaN
      EXPECT_GE(v, 0.0) << i;
      EXPECT_LE(v, 80.0 + 1e-9) << i;
    }
  }
}

}  // namespace
}  // namespace spire
