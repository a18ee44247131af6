// diff/cut without a device: which nodes a cut keeps, which values become its inputs and with what values (the
// reference's, by hand here), its outputs, and the files save_cut writes reading back as the same graph and feeds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "diff/cut.h"
#include "io/tensor_file.h"
#include "ir/graph/text_form.h"

namespace spire::diff {
namespace {

using graph::DType;
using graph::Tensor;

// x, w -> a = exp(x) -> b = tanh(a) -> c = add(b, a) -> d = mul(c, w); k = 2 a constant read by e = mul(a, k).
struct Model {
  graph::Graph g;
  std::map<std::string, Tensor> feeds;
  Capture reference;
  Model() {
    const auto x = g.input("x", DType::F32, {3});
    const auto w = g.parameter("w", DType::F32, {3});
    const auto a = g.name(g.exp(x), "a");
    const auto b = g.name(g.tanh(a), "b");
    const auto c = g.name(g.add(b, a), "c");
    g.output("d", g.name(g.mul(c, w), "d"));
    g.output("e", g.name(g.mul(a, g.name(g.constant(2, DType::F32), "k")), "e"));
    feeds = {{"x", Tensor::from(DType::F32, {3}, {0, 1, 2})}, {"w", Tensor::from(DType::F32, {3}, {3, 4, 5})}};
    // Made-up reference values: the cut must feed these, whatever they are.
    for (const char* name : {"a", "b", "c", "d", "e"})
      reference.values[name] = Tensor::from(DType::F32, {3}, {double(name[0]), 0.5, -1});
  }
  std::vector<graph::Value> values(std::initializer_list<const char*> names) const {
    std::vector<graph::Value> out;
    for (const char* n : names) out.push_back(g.at(n));
    return out;
  }
};

TEST(DiffCut, FeedsBoundaryValuesFromTheReferenceAndKeepsLeaves) {
  const Model m;
  const Cut cut = cut_graph(m.g, m.values({"c", "b", "d"}), m.feeds, m.reference);  // any order
  EXPECT_EQ(graph::print(cut.graph),
            "a = input() : f32[3]\n"
            "b = tanh(a) : f32[3]\n"
            "c = add(b, a) : f32[3]\n"
            "w = parameter() : f32[3]\n"
            "d = mul(c, w) : f32[3]\n"
            "output d = d\n");
  EXPECT_EQ(cut.boundary, std::vector<std::string>{"a"});
  ASSERT_EQ(cut.feeds.size(), 2u);
  EXPECT_EQ(cut.feeds.at("a").data, m.reference.values.at("a").data);
  EXPECT_EQ(cut.feeds.at("w").data, m.feeds.at("w").data);
}

TEST(DiffCut, EveryValueNoOtherNodeOfTheCutReadsIsAnOutput) {
  const Model m;
  const Cut cut = cut_graph(m.g, m.values({"a", "b", "e"}), m.feeds, m.reference);
  std::vector<std::string> outputs;
  for (const auto& o : cut.graph.outputs()) outputs.push_back(o.name);
  EXPECT_EQ(outputs, (std::vector<std::string>{"b", "e"}));
  EXPECT_TRUE(cut.boundary.empty());
  EXPECT_EQ(cut.graph.node(cut.graph.at("k")).op, graph::OpKind::Constant);  // a constant stays one
  EXPECT_EQ(cut.feeds.count("x"), 1u);
}

TEST(DiffCut, AncestorsAreTheValuesAValueIsComputedFrom) {
  const Model m;
  std::vector<std::string> names;
  for (graph::Value v : ancestors_and_self(m.g, m.g.at("d"))) names.push_back(m.g.node(v).name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "d"}));  // topological order, no leaves
}

TEST(DiffCut, SavedFilesReadBackAsTheCut) {
  const Model m;
  const Cut cut = cut_graph(m.g, m.values({"c", "d"}), m.feeds, m.reference);
  const auto dir = std::filesystem::temp_directory_path() / ("spire_diff_cut_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const CutFiles files = CutFiles::beside(dir / "small.graph");
  EXPECT_EQ(files.weights, dir / "small.safetensors");
  EXPECT_EQ(files.inputs, dir / "small.inputs.safetensors");
  save_cut(cut, files);
  std::ifstream in(files.graph);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(graph::print(graph::parse(text.str())), graph::print(cut.graph));
  const auto weights = io::load_tensors(files.weights);
  const auto inputs = io::load_tensors(files.inputs);
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(weights.at("w").data, m.feeds.at("w").data);
  ASSERT_EQ(inputs.size(), 2u);  // the boundary values b and a
  EXPECT_EQ(inputs.at("b").data, m.reference.values.at("b").data);
  EXPECT_EQ(inputs.at("a").data, m.reference.values.at("a").data);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spire::diff
