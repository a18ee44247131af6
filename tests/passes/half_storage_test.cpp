// passes/half_storage.h: the bf16/f16 policies' rewrite (store_in_half) keeps the graph's interface in f32, stores
// the other f32 values in half, keeps torch.autocast's f32 ops and the optimizer's update in f32, and lets the nodes
// reading a kept value read it unrounded. (The diff form, leaves declared half, is tests/diff/diff_test.cpp's; what the
// rewrite computes on devices, against float64, is tests/lowering/precision_policy_test.cpp's.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"
#include "ir/graph/verify.h"
#include "passes/half_storage.h"

namespace spire::passes {
namespace half_storage_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;

// x -> h = relu(matmul(x, w)) -> p = softmax(h) -> y; loss = mean(p * p); w <- w - 0.5 * dloss/dw (a hand-written
// SGD step as the trainer appends one: the new value is pointwise on the parameter and its gradient).
struct Model {
  graph::Graph g;
  Model() {
    auto x = g.input("x", DType::F32, {4, 8});
    auto w = g.parameter("w", DType::F32, {8, 5});
    auto mm = g.name(g.matmul(x, w), "mm");
    auto h = g.name(g.relu(mm), "h");
    auto p = g.name(g.op("softmax", {h}, {{"axis", int64_t(1)}}), "p");
    g.output("y", p);
    auto sq = g.name(g.mul(p, p), "sq");
    auto loss = g.name(g.mean(sq, {0, 1}), "loss");
    g.output("loss", loss);
    // d loss / d w by hand would need autograd; a stand-in gradient of w's type keeps the test on the pass alone.
    auto grad = g.name(g.matmul(g.permute(x, {1, 0}), g.name(g.mul(mm, g.constant(0.01, DType::F32, {4, 5})), "gy")),
                       "grad_w");
    auto step = g.name(g.mul(grad, g.constant(0.5, DType::F32, {8, 5})), "step");
    auto updated = g.name(g.sub(w, step), "w_new");
    g.state_update(w, updated);
  }
};

TEST(StoreInHalf, KeepsTheInterfaceInF32AndStoresTheRestInHalf) {
  Model m;
  const graph::Graph h = store_in_half(m.g, DType::BF16);
  EXPECT_EQ(graph::verify(h), "");
  EXPECT_EQ(h.type(h.at("x")).dtype, DType::F32);  // fed f32 by the caller
  EXPECT_EQ(h.type(h.at("w")).dtype, DType::F32);  // an f32 master copy
  EXPECT_EQ(h.type(h.at("mm")).dtype, DType::BF16);
  EXPECT_EQ(h.type(h.at("h")).dtype, DType::BF16);
  EXPECT_EQ(h.type(h.at("gy")).dtype, DType::BF16);
  EXPECT_EQ(h.type(h.at("grad_w")).dtype, DType::BF16);
  // torch.autocast's f32 ops, and the update: f32.
  EXPECT_EQ(h.type(h.at("p")).dtype, DType::F32);
  EXPECT_EQ(h.type(h.at("loss")).dtype, DType::F32);
  EXPECT_EQ(h.type(h.at("step")).dtype, DType::F32);
  EXPECT_EQ(h.type(h.at("w_new")).dtype, DType::F32);
  // A constant stays f32 for the f32 ops; the half mul reads it through a cast.
  const graph::Node& gy = h.node(h.at("gy"));
  EXPECT_EQ(h.type(gy.inputs[1]).dtype, DType::BF16);
  EXPECT_EQ(h.node(gy.inputs[1]).op, graph::OpKind::Cast);
  EXPECT_EQ(h.type(h.node(gy.inputs[1]).inputs[0]).dtype, DType::F32);
  // The matmul reads x and w through casts to half.
  const graph::Node& mm = h.node(h.at("mm"));
  ASSERT_EQ(mm.inputs.size(), 2u);
  for (graph::Value in : mm.inputs) {
    EXPECT_EQ(h.node(in).op, graph::OpKind::Cast);
    EXPECT_EQ(h.type(in).dtype, DType::BF16);
  }
  // Outputs and the update keep their names and f32.
  ASSERT_EQ(h.outputs().size(), 2u);
  for (const auto& o : h.outputs()) EXPECT_EQ(h.type(o.value).dtype, DType::F32) << o.name;
  ASSERT_EQ(h.state_updates().size(), 1u);
  EXPECT_EQ(h.node(h.state_updates()[0].target).name, "w");
  EXPECT_EQ(h.node(h.state_updates()[0].value).name, "w_new");
}

// The ops kept in f32 are their entries' (OpInfo::autocast_f32): torch.autocast's f32 list as far as spire has its ops
// (its softmax, log_softmax, the losses, sum, mean, exp, log, pow, sqrt, reciprocal, softplus, layer_norm and rms_norm).
TEST(StoreInHalf, TheOpsKeptInF32AreAutocastsF32List) {
  const std::set<std::string> want = {"softmax", "log_softmax", "cross_entropy", "cross_entropy_grad", "sum",
                                      "mean",    "sum_to",      "exp",           "log",                "pow",
                                      "sqrt",    "reciprocal",  "softplus",      "layer_norm",         "rms_norm"};
  std::set<std::string> marked;
  for (const graph::OpInfo& op : graph::op_table())
    if (op.autocast_f32) marked.insert(std::string(op.name));
  EXPECT_EQ(marked, want);
  // And the rewrite keeps each: exp of a half value is computed and stored in f32.
  graph::Graph g;
  auto e = g.name(g.exp(g.relu(g.input("x", DType::F32, {3}))), "e");
  g.output("y", g.mul(e, e));
  const graph::Graph h = store_in_half(g, DType::BF16);
  EXPECT_EQ(h.type(h.at("e")).dtype, DType::F32);
}

TEST(StoreInHalf, ANodeReadingAKeptValueComputesInF32AndRoundsOnlyItsResult) {
  // sq = mul(p, p) reads the kept softmax: it computes in f32 on p (not on p rounded) and stores its result in half.
  Model m;
  const graph::Graph h = store_in_half(m.g, DType::F16);
  const graph::Node& sq = h.node(h.at("sq"));
  ASSERT_EQ(sq.op, graph::OpKind::Cast);
  EXPECT_EQ(h.type(h.at("sq")).dtype, DType::F16);
  const graph::Node& wide = h.node(sq.inputs[0]);
  EXPECT_EQ(wide.op, graph::OpKind::Mul);
  EXPECT_EQ(h.type(sq.inputs[0]).dtype, DType::F32);
  for (graph::Value in : wide.inputs) EXPECT_EQ(h.node(in).name, "p");
}

TEST(StoreInHalf, AProductReadingAKeptValueReadsItsWeightRoundedToHalf) {
  // y = matmul(layer_norm(x), w): the norm is kept in f32, so the product computes in f32 on it (unrounded), but reads
  // its weight as autocast's products do, rounded to half (w's half copy cast back up), not w's f32 master copy.
  graph::Graph g;
  auto x = g.input("x", DType::F32, {1, 8});
  auto w = g.parameter("w", DType::F32, {8, 5});
  auto scale = g.parameter("scale", DType::F32, {8});
  auto bias = g.parameter("bias", DType::F32, {8});
  auto norm = g.name(g.op("layer_norm", {x, scale, bias}, {{"epsilon", 1e-5}}), "norm");
  g.output("y", g.name(g.matmul(norm, w), "y_mm"));
  const graph::Graph h = store_in_half(g, DType::BF16);
  EXPECT_EQ(graph::verify(h), "");
  EXPECT_EQ(h.type(h.at("norm")).dtype, DType::F32);
  const graph::Node& mm = h.node(h.node(h.at("y_mm")).inputs[0]);  // y_mm: the f32 product's result cast to half
  ASSERT_EQ(mm.op, graph::OpKind::Matmul);
  EXPECT_EQ(h.node(mm.inputs[0]).name, "norm") << "the kept value, unrounded";
  const graph::Node& up = h.node(mm.inputs[1]);
  ASSERT_EQ(up.op, graph::OpKind::Cast);
  EXPECT_EQ(h.type(mm.inputs[1]).dtype, DType::F32);
  // w itself, stored in half: nothing else reads it (parameters_in_half).
  const graph::Node& half_w = h.node(up.inputs[0]);
  EXPECT_EQ(half_w.op, graph::OpKind::Parameter);
  EXPECT_EQ(half_w.name, "w");
  EXPECT_EQ(half_w.type.dtype, DType::BF16);
  // The norm's own parameters (not a product's) stay unrounded.
  const graph::Node& n = h.node(h.at("norm"));
  EXPECT_EQ(h.node(n.inputs[1]).name, "scale");
  EXPECT_EQ(h.node(n.inputs[2]).name, "bias");
}

// Under the policies a parameter only half readers read is declared half (the device keeps no f32 copy of it); one an
// update writes, one an f32 op reads and one that is an output stay f32, as without the option.
TEST(StoreInHalf, AParameterOnlyHalfReadersReadIsStoredInHalf) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 8});
  auto w = g.parameter("w", DType::F32, {8, 8});            // read by the product only
  auto both = g.parameter("both", DType::F32, {8});         // read by a half op and by an f32 one (exp)
  auto shown = g.parameter("shown", DType::F32, {8});       // read by a half op and an output itself
  auto trained = g.parameter("trained", DType::F32, {8});   // read by a half op and updated
  auto mm = g.name(g.matmul(x, w), "mm");
  auto a = g.name(g.add(g.add(mm, both), g.add(shown, trained)), "a");
  g.output("y", a);
  g.output("e", g.exp(both));
  g.output("shown_out", shown);
  g.state_update(trained, g.name(g.mul(trained, g.constant(0.5, DType::F32, {8})), "decayed"));
  const graph::Graph h = store_in_half(g, DType::F16);
  EXPECT_EQ(graph::verify(h), "");
  EXPECT_EQ(h.type(h.at("w")).dtype, DType::F16);
  EXPECT_EQ(h.node(h.node(h.at("mm")).inputs[1]).name, "w") << "the product reads the half parameter, no cast";
  for (const char* f32 : {"x", "both", "shown", "trained"}) EXPECT_EQ(h.type(h.at(f32)).dtype, DType::F32) << f32;
  // Without the option (as `spire diff` calls to_half) w keeps its f32 leaf and a cast.
  const graph::Graph kept = to_half(g, DType::F16, {.keep_f32 = autocast_f32_nodes(g), .keep_interface = true});
  EXPECT_EQ(kept.type(kept.at("w")).dtype, DType::F32);
}

}  // namespace half_storage_test
}  // namespace spire::passes
