// compute_in_f32 (passes/compute_in_f32.h): ops on f16/bf16 compute in f32 between one cast up per half value
// and one cast down per half result, element moves stay in half, casts between halves go through f32, and the
// rewritten graph computes what the original does (float64 evaluator).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ir/graph/evaluator.h"
#include "passes/compute_in_f32.h"
#include "lowering/fuse.h"
#include "tests/support/random_tensor.h"

namespace compute_in_f32_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;

namespace {

const graph::Node& node(const Graph& g, const std::string& name) {
  auto v = g.find(name);
  if (!v) throw std::runtime_error("no value named " + name);
  return g.node(*v);
}

// uniform(-1, 1) values from a fixed seed, rounded to the half dtype they are stored in.
graph::Tensor random_half(DType dt, const graph::Shape& shape, uint32_t seed) {
  return testing_support::uniform_tensor(shape, seed, dt).round_to_dtype();
}

Graph half_mlp() {
  Graph g;
  auto x = g.input("x", DType::BF16, {4, 8});
  auto w = g.parameter("w", DType::BF16, {8, 3});
  auto h = g.name(g.matmul(x, w), "h");
  auto a = g.name(g.relu(h), "a");
  auto r = g.name(g.reshape(a, {12}), "r");
  auto s = g.name(g.add(h, a), "s");  // h is read twice: still one cast up
  auto f = g.name(g.cast(s, DType::F16), "f");
  g.output("r", r);
  g.output("f", f);
  return g;
}

TEST(ComputeInF32, HalfOpsRunInF32BetweenCasts) {
  const Graph g = passes::compute_in_f32(half_mlp());
  // matmul: bf16 inputs cast up, the product in f32, cast down under the original name.
  EXPECT_EQ(node(g, "h.f32").op, OpKind::Matmul);
  EXPECT_EQ(node(g, "h.f32").type.dtype, DType::F32);
  EXPECT_EQ(node(g, "x.to_f32").op, OpKind::Cast);
  EXPECT_EQ(node(g, "h").op, OpKind::Cast);
  EXPECT_EQ(node(g, "h").type.dtype, DType::BF16);
  EXPECT_EQ(node(g, "a").type.dtype, DType::BF16);
  // reshape copies 16-bit words: no casts around it.
  EXPECT_EQ(node(g, "r").op, OpKind::Reshape);
  EXPECT_EQ(node(g, "r").type.dtype, DType::BF16);
  EXPECT_EQ(g.node(node(g, "r").inputs[0]).name, "a");
  // bf16 -> f16 goes through f32.
  const graph::Node& f = node(g, "f");
  EXPECT_EQ(f.op, OpKind::Cast);
  EXPECT_EQ(g.type(f.inputs[0]).dtype, DType::F32);
  int casts_of_h_up = 0;
  for (const graph::Node& n : g.nodes())
    casts_of_h_up += n.op == OpKind::Cast && !n.inputs.empty() && g.node(n.inputs[0]).name == "h" &&
                     n.type.dtype == DType::F32;
  EXPECT_EQ(casts_of_h_up, 1);
  // The half graph computes only through f32 ops now: nothing but casts and moves touch a half dtype.
  for (const graph::Node& n : g.nodes()) {
    if (graph::is_leaf(n.op) || n.op == OpKind::Cast || n.op == OpKind::Reshape) continue;
    EXPECT_FALSE(graph::is_half(n.type.dtype)) << n.name;
    for (graph::Value in : n.inputs) EXPECT_FALSE(graph::is_half(g.type(in).dtype)) << n.name;
  }
}

// Ops that copy elements chosen by indices keep a half dtype when all their data is of it: a decoder's half cache
// written in place by write_at, its keys cut from a half projection by slices, a half table gathered.
TEST(ComputeInF32, CopiesOfHalfValuesStayHalf) {
  Graph g0;
  auto cache = g0.state("cache", DType::BF16, {1, 2, 4, 3});
  auto row = g0.input("row", DType::BF16, {1, 2, 1, 3});
  auto slot = g0.input("slot", DType::I64, {1});
  g0.state_update(cache, g0.name(g0.op("write_at", {cache, row, slot}, {{"axis", int64_t(2)}}), "written"));
  auto x = g0.input("x", DType::BF16, {1, 12});
  auto part = g0.name(g0.op("slice", {x}, {{"starts", std::vector<int64_t>{0, 4}}, {"steps", std::vector<int64_t>{1, 1}},
                                            {"shape", graph::Shape{1, 4}}}), "part");
  g0.output("joined", g0.name(g0.op("concat", {part, x}, {{"axis", int64_t(1)}}), "joined"));
  auto table = g0.parameter("table", DType::BF16, {5, 3});
  g0.output("rows", g0.name(g0.op("gather", {table, g0.input("ids", DType::I64, {2})}, {{"axis", int64_t(0)}}), "rows"));
  const Graph g = passes::compute_in_f32(g0);
  for (const char* name : {"written", "part", "joined", "rows"}) {
    const graph::Node& n = node(g, name);
    EXPECT_NE(n.op, OpKind::Cast) << name;
    EXPECT_EQ(n.type.dtype, DType::BF16) << name;
    for (graph::Value in : n.inputs) EXPECT_NE(g.node(in).op, OpKind::Cast) << name << " reads a cast";
  }
}

// A cast to the type its input already has (what half storage makes of a cast to f32 of a value it stored in half)
// is no op at all: its readers read the input.
TEST(ComputeInF32, ACastToItsOwnTypeIsDropped) {
  Graph g0;
  auto x = g0.input("x", DType::BF16, {6});
  g0.output("y", g0.name(g0.relu(g0.cast(x, DType::BF16)), "y"));
  const Graph g = passes::compute_in_f32(g0);
  for (const graph::Node& n : g.nodes()) {
    if (n.op == OpKind::Cast) {
      EXPECT_NE(g.type(n.inputs[0]).dtype, n.type.dtype) << n.name;
    }
  }
  graph::Tensor xt(DType::BF16, {6});
  for (int64_t i = 0; i < 6; ++i) xt[i] = double(i) / 4 - 0.75;
  EXPECT_EQ(graph::evaluate(g, {{"x", xt}}, DType::F64).at("y").data,
            graph::evaluate(g0, {{"x", xt}}, DType::F64).at("y").data);
}

// A transpose of a half weight feeding a matmul: the cast moves before the transpose, so the matmul reads an f32
// transpose in place (no transpose kernel, fuse.h) and the half transpose is left unread.
TEST(ComputeInF32, CastsMoveBeforeElementMoves) {
  Graph g0;
  auto x = g0.input("x", DType::BF16, {4, 8});
  auto w = g0.parameter("w", DType::BF16, {3, 8});
  auto wt = g0.name(g0.permute(w, {1, 0}), "wt");
  g0.output("y", g0.name(g0.matmul(x, wt), "y"));
  const Graph g = passes::compute_in_f32(g0);
  const graph::Node& mm = node(g, "y.f32");
  ASSERT_EQ(mm.op, OpKind::Matmul);
  const graph::Node& b = g.node(mm.inputs[1]);
  EXPECT_EQ(b.op, OpKind::Permute);
  EXPECT_EQ(b.type.dtype, DType::F32);
  EXPECT_EQ(g.node(b.inputs[0]).op, OpKind::Cast);
  EXPECT_EQ(g.node(g.node(b.inputs[0]).inputs[0]).name, "w");
}

// ... and the product reads x and w as stored, in bf16 and transposed: the casts up and the transpose get no
// launch (fuse.h, in_place_operand).
TEST(ComputeInF32, MatmulsReadHalfOperandsInPlace) {
  Graph g0;
  auto x = g0.input("x", DType::BF16, {4, 8});
  auto w = g0.parameter("w", DType::BF16, {3, 8});
  g0.output("y", g0.name(g0.matmul(x, g0.permute(w, {1, 0})), "y"));
  const Graph g = passes::compute_in_f32(g0);
  const graph::Node& mm = node(g, "y.f32");
  const lowering::InPlaceOperand a = lowering::in_place_operand(g, mm.inputs[0]);
  const lowering::InPlaceOperand b = lowering::in_place_operand(g, mm.inputs[1]);
  EXPECT_EQ(g.node(a.source).name, "x");
  EXPECT_FALSE(a.transposed);
  EXPECT_EQ(a.half, DType::BF16);
  EXPECT_EQ(g.node(b.source).name, "w");
  EXPECT_TRUE(b.transposed);
  EXPECT_EQ(b.half, DType::BF16);
  const std::vector<bool> fused = lowering::fuse_pointwise(g);
  EXPECT_TRUE(fused[size_t(mm.inputs[0].id)]) << "the cast up of x has a launch";
  EXPECT_TRUE(fused[size_t(mm.inputs[1].id)]) << "the transpose of w has a launch";
  // A cast up that is also an output is stored: not read in place.
  Graph g1 = g;
  g1.output("x32", mm.inputs[0]);
  EXPECT_FALSE(lowering::in_place_operand(g1, mm.inputs[0]).half.has_value());
}

// A product reading a reshape of a half value (a classifier's pooled features flattened for its fully connected
// layer) casts up after the reshape, an alias of the same words: the product reads them in place, and the cast up gets
// no launch. The rewritten graph computes the same.
TEST(ComputeInF32, ProductsReadReshapedHalfOperandsInPlace) {
  Graph g0;
  auto p = g0.input("p", DType::F16, {2, 8, 1, 1});
  auto w = g0.parameter("w", DType::F16, {8, 3});
  g0.output("y", g0.name(g0.matmul(g0.flatten(p, 1), w), "y"));
  const Graph g = passes::compute_in_f32(g0);
  const graph::Node& mm = node(g, "y.f32");
  ASSERT_EQ(mm.op, OpKind::Matmul);
  const lowering::InPlaceOperand a = lowering::in_place_operand(g, mm.inputs[0]);
  EXPECT_EQ(a.half, DType::F16);
  EXPECT_EQ(g.node(a.source).op, OpKind::Flatten);
  EXPECT_EQ(g.type(a.source).dtype, DType::F16);
  EXPECT_TRUE(lowering::fuse_pointwise(g)[size_t(mm.inputs[0].id)]) << "the cast up of the features has a launch";
  graph::Tensor pt(DType::F16, {2, 8, 1, 1}), wt(DType::F16, {8, 3});
  for (int64_t i = 0; i < pt.numel(); ++i) pt[i] = double(i % 7) / 4 - 0.75;
  for (int64_t i = 0; i < wt.numel(); ++i) wt[i] = double(i % 5) / 8 - 0.25;
  const std::map<std::string, graph::Tensor> in{{"p", pt}, {"w", wt}};
  EXPECT_EQ(graph::evaluate(g, in, DType::F64).at("y").data, graph::evaluate(g0, in, DType::F64).at("y").data);
}

// A decoder's query under a half policy: its projection [1, 32] in bf16, seen as [1, 1, 4, 8] and as [1, 4, 1, 8] (a
// permute of size-1 dimensions only), read in f32 by the rotary embedding's product with cos. The cast up goes after
// those aliases, into the product's tree, which reads the half words in place: no launch of its own (below the aliases
// it would be one, the tree reading its f32 copy through them). Where two pointwise ops read the alias (cos and sin of
// one table) or a heavy op does (an argmax after the head's reshape), the cast stays below it: one cast for all, and a
// product's epilogue there.
TEST(ComputeInF32, OnePointwiseReaderOfAComputedValuesAliasCastsAfterIt) {
  Graph g0;
  auto x = g0.input("x", DType::BF16, {1, 32});
  auto q = g0.matmul(x, g0.parameter("w", DType::BF16, {32, 32}));
  auto heads = g0.name(g0.permute(g0.reshape(q, {1, 1, 4, 8}), {0, 2, 1, 3}), "heads");
  g0.output("y", g0.name(g0.mul(heads, g0.input("cos", DType::BF16, {1, 1, 1, 8})), "y"));
  auto table = g0.name(g0.reshape(g0.add(x, x), {1, 1, 4, 8}), "table");
  g0.output("c", g0.op("cos", {table}));
  g0.output("s", g0.op("sin", {table}));
  g0.output("i", g0.op("argmax", {g0.name(g0.reshape(q, {32}), "flat")},
                       {{"axis", int64_t(0)}, {"keepdim", false}, {"select_last_index", false}}));
  const Graph g = passes::compute_in_f32(g0);
  const graph::Node& up = node(g, "heads.to_f32");
  ASSERT_EQ(up.op, OpKind::Cast);
  EXPECT_EQ(g.node(up.inputs[0]).name, "heads");
  EXPECT_EQ(g.type(up.inputs[0]).dtype, DType::BF16);
  const std::vector<bool> fused = lowering::fuse_pointwise(g);
  EXPECT_TRUE(fused[size_t(g.find("heads.to_f32")->id)]) << "the query's cast up has a launch";
  EXPECT_EQ(node(g, "table.to_f32").op, OpKind::Reshape) << "the table's two readers cast it up once, below the alias";
  EXPECT_EQ(node(g, "flat.to_f32").op, OpKind::Reshape) << "the argmax reads the product's epilogue";
  const std::map<std::string, graph::Tensor> in{{"x", random_half(DType::BF16, {1, 32}, 1)},
                                                {"w", random_half(DType::BF16, {32, 32}, 2)},
                                                {"cos", random_half(DType::BF16, {1, 1, 1, 8}, 3)}};
  const auto want = graph::evaluate(g0, in, DType::F64), got = graph::evaluate(g, in, DType::F64);
  for (const char* out : {"y", "c", "s", "i"}) EXPECT_EQ(got.at(out).data, want.at(out).data) << out;
}

// A residual block's input, read by a convolution and by the block's add: the convolution reads it through a cast up of
// its own, which fusion absorbs (the convolution reads x as stored), and the add through the cast every other reader
// shares; so does a matmul beside a pointwise reader. With one cast for all, the convolution would read an f32 copy.
TEST(ComputeInF32, ProductsReadHalfOperandsInPlaceWhateverElseReadsThem) {
  Graph g0;
  auto x = g0.input("x", DType::F16, {2, 8, 6, 6});
  auto w = g0.parameter("w", DType::F16, {8, 8, 3, 3});
  auto c = g0.name(g0.conv2d(x, w, {.padding = {1, 1}}), "c");
  g0.output("y", g0.name(g0.relu(g0.add(c, x)), "y"));
  auto m = g0.input("m", DType::BF16, {4, 4});
  g0.output("z", g0.name(g0.add(g0.matmul(m, m), m), "z"));
  const Graph g = passes::compute_in_f32(g0);
  const std::vector<bool> fused = lowering::fuse_pointwise(g);
  for (const std::string product : {"c.f32", "z"}) {
    graph::Value v = *g.find(product);
    while (g.node(v).op != OpKind::Conv2d && g.node(v).op != OpKind::Matmul) v = g.node(v).inputs[0];
    for (graph::Value in : g.node(v).inputs) {
      const lowering::InPlaceOperand op = lowering::in_place_operand(g, in);
      EXPECT_TRUE(op.half.has_value()) << product << " reads an f32 copy of " << g.node(op.source).name;
      EXPECT_TRUE(fused[size_t(in.id)]) << "the cast up of " << g.node(op.source).name << " has a launch";
    }
  }
  int casts_of_x_up = 0;
  for (const graph::Node& n : g.nodes())
    casts_of_x_up += n.op == OpKind::Cast && !n.inputs.empty() && g.node(n.inputs[0]).name == "x";
  EXPECT_EQ(casts_of_x_up, 2);  // the convolution's own, and the add's
  const std::map<std::string, graph::Tensor> in{{"x", random_half(DType::F16, {2, 8, 6, 6}, 1)},
                                                {"w", random_half(DType::F16, {8, 8, 3, 3}, 2)},
                                                {"m", random_half(DType::BF16, {4, 4}, 3)}};
  const auto want = graph::evaluate(g0, in, DType::F64), got = graph::evaluate(g, in, DType::F64);
  for (const char* out : {"y", "z"}) EXPECT_EQ(got.at(out).data, want.at(out).data) << out;
}

// A linear layer in bf16: the product's kernel computes the bias add and the rounding to bf16 as it stores
// (an epilogue whose root is bf16, fuse.h), and the bias is cast up before the product runs.
TEST(ComputeInF32, MatmulStoresItsHalfEpilogue) {
  Graph g0;
  auto x = g0.input("x", DType::BF16, {4, 8});
  auto w = g0.parameter("w", DType::BF16, {8, 3});
  auto b = g0.parameter("b", DType::BF16, {3});
  g0.output("y", g0.name(g0.relu(g0.add(g0.matmul(x, w), b)), "y"));
  const Graph g = passes::compute_in_f32(g0);
  const lowering::Fusion f = lowering::plan_fusion(g);
  graph::Value mm;
  for (graph::Value v : g.values())
    if (g.node(v).op == OpKind::Matmul) mm = v;
  ASSERT_TRUE(mm.valid());
  ASSERT_TRUE(g.find("b.to_f32").has_value());
  EXPECT_LT(g.find("b.to_f32")->id, mm.id) << "the bias is cast up after the product";
  ASSERT_GE(f.epilogue[size_t(mm.id)], 0) << "the product stores no epilogue";
  EXPECT_EQ(g.node(graph::Value{f.epilogue[size_t(mm.id)]}).name, "y");
  EXPECT_EQ(g.type(graph::Value{f.epilogue[size_t(mm.id)]}).dtype, DType::BF16);
}

TEST(ComputeInF32, ComputesWhatTheOriginalDoes) {
  const Graph original = half_mlp();
  const Graph rewritten = passes::compute_in_f32(original);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, graph::Tensor> in;
  for (const char* name : {"x", "w"}) {
    const graph::TensorType& t = original.type(*original.find(name));
    graph::Tensor x(t.dtype, t.shape);
    for (double& v : x.data) v = u(rng);
    in[name] = x.round_to_dtype();
  }
  const auto want = graph::evaluate(original, in, DType::F64), got = graph::evaluate(rewritten, in, DType::F64);
  // The float64 evaluator keeps the original's intermediate values exact, while the rewritten graph rounds each
  // to bf16 at its cast down: a few bf16 units apart (2^-8 each), not more.
  for (const char* name : {"r", "f"}) {
    const graph::Tensor &a = got.at(name), &b = want.at(name);
    EXPECT_EQ(a.dtype, b.dtype) << name;
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    for (size_t i = 0; i < a.data.size(); ++i) EXPECT_NEAR(a.data[i], b.data[i], 0x1p-5) << name << " " << i;
  }
}

TEST(ComputeInF32, GraphsWithoutHalfValuesAreUnchanged) {
  Graph g;
  auto x = g.input("x", DType::F32, {3});
  g.output("y", g.relu(x));
  EXPECT_EQ(passes::compute_in_f32(g).size(), g.size());
}

}  // namespace
}  // namespace compute_in_f32_test
