// The importer in process: shape-subgraph folding, symbolic batch binding, errors, external data.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "frontend/onnx/model_signature.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"
#include "tests/frontend/onnx/onnx_test_util.h"

namespace spire {
namespace {

namespace fs = std::filesystem;
using graph::DType;
using graph::Tensor;
using onnx_import::ImportError;
using onnx_import::import_model;

class OnnxImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spire_onnx_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& n) const { return dir_ / n; }
  fs::path dir_;
};

// The error's message, or "" when the import succeeds.
std::string import_error(const fs::path& p, const onnx_import::ImportOptions& o = {}) {
  try {
    import_model(p, o);
  } catch (const ImportError& e) {
    return e.what();
  }
  return "";
}

TEST_F(OnnxImport, FoldsTheShapeSubgraphAndBindsTheBatch) {
  onnx_test::write_model(onnx_test::small_mlp(), path("m.onnx"));
  onnx_import::ImportOptions o;
  o.input_shapes["x"] = {2, 4};
  auto m = import_model(path("m.onnx"), o);
  const std::string text = graph::print(m.graph);
  // Shape/Gather/Unsqueeze/Concat left nothing behind: one reshape to the folded [2,3].
  EXPECT_EQ(text.find("gather"), std::string::npos) << text;
  EXPECT_NE(text.find("{shape=[2,3]}"), std::string::npos) << text;
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (graph::Shape{2, 4}));
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].onnx_name, "y");
  EXPECT_EQ(m.weights.size(), 2u);  // W and B; the int64 shape constants were folded away

  std::map<std::string, Tensor> feeds;
  for (auto& [n, t] : m.weights) feeds[n] = t;
  feeds[m.inputs[0].graph_name] = Tensor::from(DType::F32, {2, 4}, {1, 2, 3, 4, -1, 0, 2, 1});
  const auto r = graph::evaluate(m.graph, feeds);
  const Tensor& y = r.at(m.outputs[0].graph_name);
  // Hand computation: y[i][j] = relu(sum_k x[i][k] W[j][k] + b[j]), W[j][k] = (4j + k - 6) / 8.
  const double x[2][4] = {{1, 2, 3, 4}, {-1, 0, 2, 1}}, b[3] = {0.5, -0.25, 1.0};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = b[j];
      for (int k = 0; k < 4; ++k) s += x[i][k] * (4 * j + k - 6) / 8.0;
      EXPECT_NEAR(y.at({i, j}), std::max(0.0, s), 1e-6) << i << "," << j;
    }
}

TEST_F(OnnxImport, SymbolicBatchWithoutAShapeIsRefusedByName) {
  onnx_test::write_model(onnx_test::small_mlp(), path("m.onnx"));
  const std::string e = import_error(path("m.onnx"));
  EXPECT_NE(e.find("input 'x' has a symbolic dimension 0 ('batch')"), std::string::npos) << e;
}

TEST_F(OnnxImport, AWrongFixedDimensionIsRefused) {
  onnx_test::write_model(onnx_test::small_mlp(), path("m.onnx"));
  onnx_import::ImportOptions o;
  o.input_shapes["x"] = {2, 5};
  const std::string e = import_error(path("m.onnx"), o);
  EXPECT_NE(e.find("input 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("[2,5]"), std::string::npos) << e;
}

TEST_F(OnnxImport, UnsupportedOpNamesOpNodeAndOpset) {
  onnx::GraphProto g;
  *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"3", "3"});
  *g.add_output() = onnx_test::value_info("y", onnx::TensorProto::FLOAT, {"3", "3"});
  *g.add_node() = onnx_test::node("RandomNormalLike", {"x"}, {"y"}, "my_random");
  onnx_test::write_model(onnx_test::model(g, 15), path("m.onnx"));
  const std::string e = import_error(path("m.onnx"));
  EXPECT_NE(e.find("node 'my_random' (RandomNormalLike, opset 15): unsupported op"), std::string::npos) << e;
}

TEST_F(OnnxImport, RuntimeConcatImportsToTheConcatOp) {
  onnx::GraphProto g;
  *g.add_input() = onnx_test::value_info("a", onnx::TensorProto::FLOAT, {"2", "3"});
  *g.add_input() = onnx_test::value_info("b", onnx::TensorProto::FLOAT, {"2", "3"});
  *g.add_output() = onnx_test::value_info("y", onnx::TensorProto::FLOAT, {"4", "3"});
  auto n = onnx_test::node("Concat", {"a", "b"}, {"y"}, "cat");
  onnx_test::add_int_attr(n, "axis", 0);
  *g.add_node() = n;
  onnx_test::write_model(onnx_test::model(g), path("m.onnx"));
  auto m = import_model(path("m.onnx"));
  EXPECT_NE(graph::print(m.graph).find("concat(a, b) {axis=0}"), std::string::npos) << graph::print(m.graph);
  std::map<std::string, Tensor> feeds{{"a", Tensor::from(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                                      {"b", Tensor::from(DType::F32, {2, 3}, {7, 8, 9, 10, 11, 12})}};
  const Tensor y = graph::evaluate(m.graph, feeds).at(m.outputs[0].graph_name);
  EXPECT_EQ(y.shape, (graph::Shape{4, 3}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y.data[size_t(i)], i + 1) << i;  // rows of a, then rows of b
}

TEST_F(OnnxImport, GarbageAndTruncatedFilesAreRefused) {
  std::ofstream(path("g.onnx")) << "definitely not a protobuf \xff\xff\xff\xff";
  EXPECT_NE(import_error(path("g.onnx")).find("not an ONNX model"), std::string::npos);
  std::string bytes;
  onnx_test::small_mlp().SerializeToString(&bytes);
  std::ofstream(path("t.onnx"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(import_error(path("t.onnx")), "");
  EXPECT_NE(import_error(path("missing.onnx")).find("no such file"), std::string::npos);
  std::ofstream(path("empty.onnx")).close();
  EXPECT_NE(import_error(path("empty.onnx")).find("not an ONNX model"), std::string::npos);
}

// W moved into an external data file beside the model.
onnx::ModelProto external_mlp(const std::string& location, uint64_t offset) {
  auto m = onnx_test::small_mlp();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", "48");
  return m;
}

TEST_F(OnnxImport, ExternalDataIsReadAndChecked) {
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[size_t(i)] = float(i - 6) * 0.125f;
  {
    std::ofstream f(path("w.bin"), std::ios::binary);
    f << std::string(16, '\0');
    f.write(reinterpret_cast<const char*>(w.data()), 48);
  }
  onnx_import::ImportOptions o;
  o.input_shapes["x"] = {1, 4};
  onnx_test::write_model(external_mlp("w.bin", 16), path("m.onnx"));
  auto m = import_model(path("m.onnx"), o);
  ASSERT_EQ(m.weights[0].first, "W");
  EXPECT_EQ(m.weights[0].second.data[11], 0.625);

  onnx_test::write_model(external_mlp("w.bin", 32), path("far.onnx"));
  std::string e = import_error(path("far.onnx"), o);
  EXPECT_NE(e.find("exceeds the size"), std::string::npos) << e;

  onnx_test::write_model(external_mlp("absent.bin", 0), path("absent.onnx"));
  e = import_error(path("absent.onnx"), o);
  EXPECT_NE(e.find("absent.bin"), std::string::npos) << e;

  onnx_test::write_model(external_mlp("../w.bin", 0), path("outside.onnx"));
  EXPECT_NE(import_error(path("outside.onnx"), o), "");
}

// A weight of external data larger than the piece the importer reads and decodes at a time (4 MiB): every element,
// at both sides of the pieces' boundaries, is the file's. Its raw-data twin in the model file itself reads the same.
TEST_F(OnnxImport, ALargeWeightReadsWholeFromExternalAndRawData) {
  const int64_t rows = 1100, cols = 1000;  // 4.4 MB of f32
  std::vector<float> w(size_t(rows * cols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int64_t(i % 4099) - 2049) * 0.25f;
  {
    std::ofstream f(path("big.bin"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.data()), std::streamsize(w.size() * 4));
  }
  for (const bool external : {true, false}) {
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"1", std::to_string(rows)});
    *g.add_output() = onnx_test::value_info("y", onnx::TensorProto::FLOAT, {"1", std::to_string(cols)});
    onnx::TensorProto* t = g.add_initializer();
    t->set_name("W");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(rows);
    t->add_dims(cols);
    if (external) {
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* e = t->add_external_data();
      e->set_key("location");
      e->set_value("big.bin");
    } else {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
    }
    *g.add_node() = onnx_test::node("MatMul", {"x", "W"}, {"y"});
    onnx_test::write_model(onnx_test::model(g), path("big.onnx"));
    const auto m = import_model(path("big.onnx"), {});
    ASSERT_EQ(m.weights.size(), 1u) << external;
    const graph::Tensor& got = m.weights[0].second;
    ASSERT_EQ(got.data.size(), w.size()) << external;
    size_t wrong = 0;
    for (size_t i = 0; i < w.size(); ++i) wrong += got.data[i] != double(w[i]);
    EXPECT_EQ(wrong, 0u) << external;
  }
}

// read_signature streams the model's fields: the graph's inputs (but initializers listed among them, as older
// exporters list them), its outputs with their declared dims, whatever sits around them; malformed files refused.
TEST_F(OnnxImport, TheSignatureIsTheGraphsInputsAndOutputs) {
  onnx::ModelProto m = onnx_test::small_mlp();
  *m.mutable_graph()->add_input() = onnx_test::value_info("W", onnx::TensorProto::FLOAT, {"3", "4"});
  m.set_doc_string(std::string(1000, 'd'));  // a field beside the graph, skipped
  onnx_test::write_model(m, path("sig.onnx"));
  const onnx_import::ModelSignature sig = onnx_import::read_signature(path("sig.onnx"));
  ASSERT_EQ(sig.inputs.size(), 1u);
  EXPECT_EQ(sig.inputs[0].name, "x");
  EXPECT_EQ(sig.inputs[0].elem_type, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(sig.inputs[0].has_shape);
  ASSERT_EQ(sig.inputs[0].dims.size(), 2u);
  EXPECT_EQ(sig.inputs[0].dims[0].value, -1);
  EXPECT_EQ(sig.inputs[0].dims[0].symbol, "batch");
  EXPECT_EQ(sig.inputs[0].dims[1].value, 4);
  ASSERT_EQ(sig.outputs.size(), 1u);
  EXPECT_EQ(sig.outputs[0].name, "y");
  EXPECT_EQ(sig.input("W"), nullptr);
  EXPECT_NE(sig.output("y"), nullptr);

  auto refusal = [&](const std::string& file) {
    try {
      onnx_import::read_signature(path(file));
    } catch (const onnx_import::ImportError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::ofstream(path("g.onnx")) << "definitely not a protobuf \xff\xff\xff\xff";
  EXPECT_NE(refusal("g.onnx").find("not an ONNX model"), std::string::npos);
  std::string bytes;
  m.SerializeToString(&bytes);
  std::ofstream(path("t.onnx"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(refusal("t.onnx").find("not an ONNX model"), std::string::npos);
  std::ofstream(path("empty.onnx")).close();
  EXPECT_NE(refusal("empty.onnx").find("not an ONNX model"), std::string::npos);
  EXPECT_NE(refusal("missing.onnx").find("no such file"), std::string::npos);
}

// ImportOptions::progress: the bytes of initializers read so far, from 0 to all of them, after each initializer. The
// small MLP's: W 3x4 and B 3 in f32 (48 + 12), three int64 tensors of one element (8 each).
TEST_F(OnnxImport, ProgressCountsTheInitializersBytes) {
  onnx_test::write_model(onnx_test::small_mlp(), path("p.onnx"));
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  onnx_import::ImportOptions o;
  o.input_shapes["x"] = {1, 4};
  o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  import_model(path("p.onnx"), o);
  ASSERT_EQ(calls.size(), 6u);  // the start, and one per initializer
  EXPECT_EQ(calls.front(), (std::pair<uint64_t, uint64_t>{0, 84}));
  EXPECT_EQ(calls[1], (std::pair<uint64_t, uint64_t>{48, 84}));
  EXPECT_EQ(calls.back(), (std::pair<uint64_t, uint64_t>{84, 84}));
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i].first, calls[i - 1].first);
}

// Einsum against a direct sum over every assignment of the labels (computed here, independent of the importer's
// diagonals, early sums and matmuls): products, batches, diagonals, outer products, three operands, implicit outputs
// and ellipses.
TEST_F(OnnxImport, EinsumMatchesADirectSumOverTheLabels) {
  struct Case {
    std::string equation;
    std::vector<graph::Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},        {"bij,bkj->bik", {{2, 3, 4}, {2, 5, 4}}},
      {"ii->i", {{4, 4}}},                    {"iij->j", {{3, 3, 2}}},
      {"i,j->ij", {{3}, {4}}},                {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"ij,jk", {{2, 3}, {3, 2}}},            {"ij->", {{3, 4}}},
      {"...ij,...jk->...ik", {{2, 2, 3}, {2, 3, 2}}}, {"bi,bi->b", {{3, 5}, {3, 5}}},
  };
  uint32_t seed = 1;
  for (const Case& k : cases) {
    onnx::GraphProto g;
    std::vector<std::string> names;
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < k.shapes.size(); ++i) {
      const std::string n = "x" + std::to_string(i);
      std::vector<std::string> dims;
      for (int64_t d : k.shapes[i]) dims.push_back(std::to_string(d));
      *g.add_input() = onnx_test::value_info(n, onnx::TensorProto::FLOAT, dims);
      Tensor t(DType::F32, k.shapes[i]);
      for (double& v : t.data) v = double((seed = seed * 1103515245u + 12345u) % 17u) / 4.0 - 2.0;  // exact in f32
      feeds[n] = t;
      names.push_back(n);
    }
    // The output's labels: after "->", or the labels named once, sorted (no ellipsis in the implicit cases here).
    const size_t arrow = k.equation.find("->");
    const std::string lhs = k.equation.substr(0, arrow);
    std::string out;
    if (arrow != std::string::npos) {
      out = k.equation.substr(arrow + 2);
    } else {
      for (char ch = 'a'; ch <= 'z'; ++ch)
        if (std::count(lhs.begin(), lhs.end(), ch) == 1) out += ch;
    }
    // Expand the ellipsis (the same leading dims everywhere here) into the labels 'A', 'B', ...
    auto expand = [&](std::string term, size_t rank) {
      const size_t dots = term.find("...");
      if (dots == std::string::npos) return term;
      const size_t letters = term.size() - 3;
      std::string span;
      for (size_t j = 0; j + letters < rank; ++j) span += char('A' + j);
      return term.replace(dots, 3, span);
    };
    std::vector<std::string> terms;
    for (size_t at = 0, i = 0;; ++i) {
      const size_t comma = lhs.find(',', at);
      terms.push_back(expand(lhs.substr(at, comma - at), k.shapes[i].size()));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    out = expand(out, k.shapes[0].size());
    std::map<char, int64_t> size;
    for (size_t i = 0; i < terms.size(); ++i)
      for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = k.shapes[i][d];
    std::vector<char> labels;
    for (const auto& [l, n] : size) labels.push_back(l);
    graph::Shape out_shape;
    for (char l : out) out_shape.push_back(size[l]);
    Tensor want(DType::F64, out_shape);
    std::map<char, int64_t> at;
    for (char l : labels) at[l] = 0;
    for (;;) {
      double product = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t flat = 0;
        for (size_t d = 0; d < terms[i].size(); ++d) flat = flat * k.shapes[i][d] + at[terms[i][d]];
        product *= feeds[names[i]].data[size_t(flat)];
      }
      int64_t o = 0;
      for (char l : out) o = o * size[l] + at[l];
      want.data[size_t(o)] += product;
      size_t j = labels.size();
      while (j > 0 && ++at[labels[j - 1]] == size[labels[j - 1]]) at[labels[--j]] = 0;
      if (j == 0) break;
    }
    *g.add_output() = onnx_test::value_info("y", onnx::TensorProto::FLOAT, [&] {
      std::vector<std::string> dims;
      for (int64_t d : out_shape) dims.push_back(std::to_string(d));
      return dims;
    }());
    auto n = onnx_test::node("Einsum", names, {"y"}, "einsum");
    auto* a = n.add_attribute();
    a->set_name("equation");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(k.equation);
    *g.add_node() = n;
    onnx_test::write_model(onnx_test::model(g, 13), path("m.onnx"));
    const auto m = import_model(path("m.onnx"));
    std::map<std::string, Tensor> in(m.weights.begin(), m.weights.end());
    for (const auto& b : m.inputs) in[b.graph_name] = feeds.at(b.onnx_name);
    const Tensor y = graph::evaluate(m.graph, in).at(m.outputs[0].graph_name);
    ASSERT_EQ(y.shape, out_shape) << k.equation;
    for (size_t i = 0; i < want.data.size(); ++i) EXPECT_NEAR(y.data[i], want.data[i], 1e-9) << k.equation << " " << i;
  }
}

// Softmax and LogSoftmax come by the rule for the graph's ops along one axis (ops_along_one_axis.cpp), in both of
// ONNX's conventions: from opset 13 along `axis`; before, over everything from `axis` on, the input seen as 2-D.
// The expected rows are worked out here from the definition, on x [2, 3, 4].
TEST_F(OnnxImport, SoftmaxFamilyFollowsBothOpsetConventions) {
  struct Case {
    std::string op;
    int64_t opset, axis;
    int64_t row;  // elements normalized together, consecutive in memory for these axes (the last, or 1 before 13)
    int64_t stride;
  };
  const std::vector<Case> cases = {{"Softmax", 13, 2, 4, 1},   {"LogSoftmax", 13, 2, 4, 1},
                                   {"Softmax", 11, 1, 12, 1},  {"LogSoftmax", 11, 1, 12, 1},
                                   {"Softmax", 13, 1, 3, 4}};
  Tensor x(DType::F32, {2, 3, 4});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = double(int(i * 7 % 11) - 5) / 4.0;
  for (const Case& k : cases) {
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"2", "3", "4"});
    *g.add_output() = onnx_test::value_info("y", onnx::TensorProto::FLOAT, {"2", "3", "4"});
    auto n = onnx_test::node(k.op, {"x"}, {"y"});
    onnx_test::add_int_attr(n, "axis", k.axis);
    *g.add_node() = n;
    onnx_test::write_model(onnx_test::model(g, k.opset), path("m.onnx"));
    const auto m = import_model(path("m.onnx"));
    const Tensor y = graph::evaluate(m.graph, {{m.inputs[0].graph_name, x}}).at(m.outputs[0].graph_name);
    const std::string label = k.op + " opset " + std::to_string(k.opset) + " axis " + std::to_string(k.axis);
    ASSERT_EQ(y.shape, x.shape) << label;
    // Each group: `row` elements `stride` apart, starting where no earlier group covers.
    for (int64_t start = 0; start < 24; ++start) {
      if ((start / k.stride) % k.row != 0) continue;  // not the first element of its group
      double sum = 0;
      for (int64_t j = 0; j < k.row; ++j) sum += std::exp(x.data[size_t(start + j * k.stride)]);
      for (int64_t j = 0; j < k.row; ++j) {
        const size_t at = size_t(start + j * k.stride);
        const double p = std::exp(x.data[at]) / sum;
        EXPECT_NEAR(y.data[at], k.op == "Softmax" ? p : std::log(p), 1e-6) << label << " element " << at;
      }
    }
  }
}

// Opset 8's Scan: a batch axis first on every input and output, each batch element scanned on its own. Two batch
// elements, a state s [2] and two scan inputs x, w [batch, 3, 2], w read backwards (directions = [0, 1]):
// s_t = s_{t-1} + x_t * w_{2-t}, the scan output each step's s. Worked out here by loops; sequence_lens of the whole
// length imports, a shorter one is refused.
TEST_F(OnnxImport, ScanAtOpset8ScansEachBatchElement) {
  onnx::GraphProto body;
  body.set_name("body");
  *body.add_input() = onnx_test::value_info("s_in", onnx::TensorProto::FLOAT, {"2"});
  *body.add_input() = onnx_test::value_info("x_t", onnx::TensorProto::FLOAT, {"2"});
  *body.add_input() = onnx_test::value_info("w_t", onnx::TensorProto::FLOAT, {"2"});
  *body.add_node() = onnx_test::node("Mul", {"x_t", "w_t"}, {"p"});
  *body.add_node() = onnx_test::node("Add", {"s_in", "p"}, {"s_out"});
  *body.add_node() = onnx_test::node("Identity", {"s_out"}, {"each"});
  *body.add_output() = onnx_test::value_info("s_out", onnx::TensorProto::FLOAT, {"2"});
  *body.add_output() = onnx_test::value_info("each", onnx::TensorProto::FLOAT, {"2"});
  auto build = [&](const std::vector<int64_t>& lens) {
    onnx::GraphProto g;
    *g.add_input() = onnx_test::value_info("s0", onnx::TensorProto::FLOAT, {"2", "2"});
    *g.add_input() = onnx_test::value_info("x", onnx::TensorProto::FLOAT, {"2", "3", "2"});
    *g.add_input() = onnx_test::value_info("w", onnx::TensorProto::FLOAT, {"2", "3", "2"});
    if (!lens.empty()) *g.add_initializer() = onnx_test::int64_tensor("lens", {2}, lens);
    auto scan = onnx_test::node("Scan", {lens.empty() ? "" : "lens", "s0", "x", "w"}, {"s", "ys"}, "scan");
    onnx_test::add_int_attr(scan, "num_scan_inputs", 2);
    auto* d = scan.add_attribute();
    d->set_name("directions");
    d->set_type(onnx::AttributeProto::INTS);
    d->add_ints(0);
    d->add_ints(1);
    auto* a = scan.add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = body;
    *g.add_node() = scan;
    *g.add_output() = onnx_test::value_info("s", onnx::TensorProto::FLOAT, {"2", "2"});
    *g.add_output() = onnx_test::value_info("ys", onnx::TensorProto::FLOAT, {"2", "3", "2"});
    return g;
  };
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, graph::Shape>>{
           {"s0", {2, 2}}, {"x", {2, 3, 2}}, {"w", {2, 3, 2}}}) {
    Tensor t(DType::F32, shape);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = double(int(i * 7 + name[0]) % 11) / 2.0 - 2.5;
    feeds[name] = t;
  }
  Tensor want_s(DType::F64, {2, 2}), want_ys(DType::F64, {2, 3, 2});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 2; ++j) {
      double s = feeds["s0"].data[size_t(b * 2 + j)];
      for (int64_t t = 0; t < 3; ++t) {
        s += feeds["x"].data[size_t((b * 3 + t) * 2 + j)] * feeds["w"].data[size_t((b * 3 + (2 - t)) * 2 + j)];
        want_ys.data[size_t((b * 3 + t) * 2 + j)] = s;
      }
      want_s.data[size_t(b * 2 + j)] = s;
    }
  for (const std::vector<int64_t>& lens : {std::vector<int64_t>{}, std::vector<int64_t>{3, 3}}) {
    onnx_test::write_model(onnx_test::model(build(lens), 8), path("scan8.onnx"));
    const auto m = import_model(path("scan8.onnx"));
    std::map<std::string, Tensor> in(m.weights.begin(), m.weights.end());
    for (const auto& b : m.inputs) in[b.graph_name] = feeds.at(b.onnx_name);
    const auto out = graph::evaluate(m.graph, in);
    const Tensor& s = out.at(m.outputs[0].graph_name);
    const Tensor& ys = out.at(m.outputs[1].graph_name);
    ASSERT_EQ(s.shape, want_s.shape);
    ASSERT_EQ(ys.shape, want_ys.shape);
    for (size_t i = 0; i < want_s.data.size(); ++i) EXPECT_NEAR(s.data[i], want_s.data[i], 1e-6) << i;
    for (size_t i = 0; i < want_ys.data.size(); ++i) EXPECT_NEAR(ys.data[i], want_ys.data[i], 1e-6) << i;
  }
  onnx_test::write_model(onnx_test::model(build({3, 2}), 8), path("scan8_short.onnx"));
  EXPECT_NE(import_error(path("scan8_short.onnx")).find("sequence_lens 2 of batch element 1 is shorter"), std::string::npos)
      << import_error(path("scan8_short.onnx"));
}

}  // namespace
}  // namespace spire
