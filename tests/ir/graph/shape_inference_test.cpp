// Shape rules: result types of every op family, and errors that name the op, the input and the shapes.
#include <functional>

#include <gtest/gtest.h>

#include "ir/graph/graph.h"
#include "tests/support/named_ops.h"

namespace spire::graph {
namespace {

const DType F = DType::F32;

// Runs `build`, expects a GraphError whose message contains every one of `parts`.
void expect_error(const std::function<void()>& build, std::initializer_list<std::string> parts) {
  try {
    build();
    ADD_FAILURE() << "expected a GraphError";
  } catch (const GraphError& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(ShapeInference, ElementwiseBroadcasts) {
  Graph g;
  Value a = g.input("a", F, {8, 1, 6, 1});
  Value b = g.input("b", F, {7, 1, 5});
  EXPECT_EQ(g.type(g.add(a, b)).shape, (Shape{8, 7, 6, 5}));
  EXPECT_EQ(g.type(g.mul(a, 2.0)).shape, (Shape{8, 1, 6, 1}));
  EXPECT_EQ(g.type(g.compare(a, b, CompareMode::Le)), (TensorType{DType::Bool, {8, 7, 6, 5}}));
  Value c = g.compare(a, b, CompareMode::Lt);
  EXPECT_EQ(g.type(g.where(c, a, g.scalar(0, F))).shape, (Shape{8, 7, 6, 5}));
  EXPECT_EQ(g.type(g.gelu(a)), g.type(a));
  EXPECT_EQ(g.type(g.cast(a, DType::I32)), (TensorType{DType::I32, {8, 1, 6, 1}}));
}

TEST(ShapeInference, ElementwiseErrorsNameOpInputAndShapes) {
  Graph g;
  Value a = g.input("a", F, {2, 3});
  Value b = g.input("b", F, {4});
  Value i = g.input("i", DType::I64, {2, 3});
  expect_error([&] { g.add(a, b); }, {"add", "cannot broadcast", "input 0 (f32[2,3])", "input 1 (f32[4])"});
  expect_error([&] { g.mul(a, i); }, {"mul", "different dtypes", "i64[2,3]"});
  expect_error([&] { g.exp(i); }, {"exp", "input 0 (i64[2,3])", "float"});
  expect_error([&] { g.div(i, i); }, {"div", "float"});
  expect_error([&] { g.where(a, a, a); }, {"where", "condition", "bool"});
  expect_error([&] { g.add_node(OpKind::Compare, {a, a}, {{"mode", std::string("lte")}}); }, {"compare", "lte"});
  expect_error([&] { g.add_node(OpKind::Add, {a}, {}); }, {"add takes 2 input(s), got 1"});
  expect_error([&] { g.add_node(OpKind::Neg, {a}, {{"axis", int64_t(1)}}); }, {"neg", "unknown attribute 'axis'"});
  expect_error([&] { g.add_node(OpKind::Add, {a, Value{99}}, {}); }, {"add", "input 1", "not a value"});
}

TEST(ShapeInference, Reductions) {
  Graph g;
  Value x = g.input("x", F, {2, 3, 4});
  EXPECT_EQ(g.type(g.sum(x, {1})).shape, (Shape{2, 4}));
  EXPECT_EQ(g.type(g.mean(x, {-1, 0}, true)).shape, (Shape{1, 3, 1}));
  EXPECT_EQ(g.type(g.max(x, {2})).shape, (Shape{2, 3}));
  EXPECT_EQ(g.type(g.sum(x)).shape, (Shape{}));
  EXPECT_EQ(g.node(g.mean(x, {2, 0})).attrs.get_ints("axes"), (std::vector<int64_t>{0, 2}));  // normalized
  expect_error([&] { g.sum(x, {3}); }, {"sum", "axis 3", "rank 3"});
  expect_error([&] { g.sum(x, {1, -2}); }, {"sum", "repeated axis"});
  expect_error([&] { g.add_node(OpKind::Sum, {x}, {{"axes", std::vector<int64_t>{2, 0}}, {"keepdim", false}}); },
               {"sum", "sorted"});
  expect_error([&] { g.mean(g.input("i", DType::I32, {3}), {0}); }, {"mean", "float"});
}

TEST(ShapeInference, Layout) {
  Graph g;
  Value x = g.input("x", F, {2, 3, 4, 5});
  EXPECT_EQ(g.type(g.reshape(x, {6, -1})).shape, (Shape{6, 20}));
  EXPECT_EQ(g.type(g.flatten(x)).shape, (Shape{2, 60}));
  EXPECT_EQ(g.type(g.flatten(x, 1, 2)).shape, (Shape{2, 12, 5}));
  EXPECT_EQ(g.type(g.permute(x, {3, 0, 2, 1})).shape, (Shape{5, 2, 4, 3}));
  EXPECT_EQ(g.type(g.transpose(x)).shape, (Shape{2, 3, 5, 4}));
  EXPECT_EQ(g.type(g.broadcast_to(g.input("b", F, {3, 1, 5}), {2, 3, 4, 5})).shape, (Shape{2, 3, 4, 5}));
  EXPECT_EQ(g.type(g.sum_to(x, {3, 1, 5})).shape, (Shape{3, 1, 5}));
  expect_error([&] { g.reshape(x, {7, 17}); }, {"reshape", "input 0 (f32[2,3,4,5])", "120 elements", "[7,17]"});
  expect_error([&] { g.permute(x, {0, 1, 1, 2}); }, {"permute", "not a permutation"});
  expect_error([&] { g.broadcast_to(x, {2, 3, 4}); }, {"broadcast_to", "f32[2,3,4,5]", "[2,3,4]"});
  expect_error([&] { g.sum_to(x, {2, 5}); }, {"sum_to", "[2,5]"});
  expect_error([&] { g.flatten(x, 3, 1); }, {"flatten", "start_dim=3", "end_dim=1"});
}

TEST(ShapeInference, Matmul) {
  Graph g;
  Value a = g.input("a", F, {4, 5});
  Value b = g.input("b", F, {5, 6});
  Value ba = g.input("ba", F, {7, 1, 4, 5});
  Value bb = g.input("bb", F, {3, 5, 6});
  EXPECT_EQ(g.type(g.matmul(a, b)).shape, (Shape{4, 6}));
  EXPECT_EQ(g.type(g.matmul(ba, bb)).shape, (Shape{7, 3, 4, 6}));
  EXPECT_EQ(g.type(g.matmul(ba, b)).shape, (Shape{7, 1, 4, 6}));
  expect_error([&] { g.matmul(a, a); }, {"matmul", "inner dimensions", "input 0 (f32[4,5])", "input 1 (f32[4,5])"});
  expect_error([&] { g.matmul(a, g.input("v", F, {5})); }, {"matmul", "rank >= 2"});
}

TEST(ShapeInference, Conv2dAndPooling) {
  Graph g;
  Value x = g.input("x", F, {8, 1, 28, 28});
  Value w = g.parameter("w", F, {6, 1, 5, 5});
  EXPECT_EQ(g.type(g.conv2d(x, w, {.padding = {2, 2}})).shape, (Shape{8, 6, 28, 28}));
  EXPECT_EQ(g.type(g.conv2d(x, w)).shape, (Shape{8, 6, 24, 24}));
  EXPECT_EQ(g.type(g.conv2d(x, w, {.stride = {2, 3}, .dilation = {2, 1}})).shape, (Shape{8, 6, 10, 8}));
  Value xg = g.input("xg", F, {2, 4, 9, 9});
  Value wg = g.parameter("wg", F, {6, 2, 3, 3});
  EXPECT_EQ(g.type(g.conv2d(xg, wg, {.groups = 2})).shape, (Shape{2, 6, 7, 7}));
  EXPECT_EQ(g.type(g.max_pool2d(x, {.kernel = {2, 2}})).shape, (Shape{8, 1, 14, 14}));
  EXPECT_EQ(g.type(g.avg_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}})).shape,
            (Shape{8, 1, 14, 14}));

  expect_error([&] { g.conv2d(xg, w); }, {"conv2d", "input 1 (f32[6,1,5,5])", "input 0 (f32[2,4,9,9])", "channels"});
  expect_error([&] { g.conv2d(xg, wg, {.groups = 3}); }, {"conv2d", "not divisible by groups=3"});
  expect_error([&] { g.conv2d(g.input("small", F, {1, 1, 3, 3}), w); }, {"conv2d", "does not fit input size 3"});
  expect_error([&] { g.conv2d(x, w, {.stride = {0, 1}}); }, {"conv2d", "stride", ">= 1"});
  expect_error([&] { g.conv2d(g.input("r3", F, {1, 28, 28}), w); }, {"conv2d", "input 0 (f32[1,28,28])", "rank 4"});
  expect_error([&] { g.max_pool2d(x, {.kernel = {2, 2}, .padding = {2, 2}}); }, {"max_pool2d", "at most half"});
}

TEST(ShapeInference, SoftmaxAndCrossEntropy) {
  Graph g;
  Value logits = g.input("logits", F, {8, 10});
  Value labels = g.input("labels", DType::I64, {8});
  EXPECT_EQ(g.type(softmax(g, logits, -1)), g.type(logits));
  EXPECT_EQ(g.node(log_softmax(g, logits, -1)).attrs.get_int("axis"), 1);
  EXPECT_EQ(g.type(cross_entropy(g, logits, labels)), (TensorType{F, {}}));
  EXPECT_EQ(g.type(cross_entropy(g, logits, g.input("l32", DType::I32, {8}))), (TensorType{F, {}}));
  expect_error([&] { cross_entropy(g, logits, g.input("bad", DType::I64, {7})); },
               {"cross_entropy", "input 1 (i64[7])", "[8]"});
  expect_error([&] { cross_entropy(g, logits, g.input("fl", F, {8})); }, {"cross_entropy", "labels", "i32 or i64"});
  expect_error([&] { softmax(g, logits, 2); }, {"softmax", "axis 2"});
}

TEST(ShapeInference, NormsAndWriteAt) {
  Graph g;
  Value x = g.input("x", F, {2, 5, 8});
  Value v8 = g.input("v8", F, {8});
  EXPECT_EQ(g.type(g.op("layer_norm", {x, v8, v8}, {{"epsilon", 1e-5}})), g.type(x));
  EXPECT_EQ(g.type(g.op("rms_norm", {x, v8}, {{"epsilon", 1e-5}})), g.type(x));
  expect_error([&] { g.op("layer_norm", {x, g.input("v5", F, {5}), v8}, {{"epsilon", 1e-5}}); },
               {"layer_norm", "input 1 (f32[5])", "vector of x's last axis", "8"});
  Value slot = g.input("slot", DType::I64, {1});
  EXPECT_EQ(g.type(g.op("write_at", {x, g.input("row", F, {2, 1, 8}), slot}, {{"axis", int64_t(1)}})), g.type(x));
  expect_error([&] { g.op("write_at", {x, g.input("wide", F, {2, 2, 8}), slot}, {{"axis", int64_t(1)}}); },
               {"write_at", "input 1 (f32[2,2,8])", "[2,1,8]"});
  expect_error([&] { g.op("write_at", {x, g.input("row2", F, {2, 1, 8}), g.input("two", DType::I64, {2})},
                          {{"axis", int64_t(1)}}); },
               {"write_at", "one index"});
}

TEST(ShapeInference, BackwardOps) {
  Graph g;
  Value x = g.input("x", F, {2, 3, 8, 8});
  Value w = g.parameter("w", F, {4, 3, 3, 3});
  Conv2dOptions opt{.padding = {1, 1}};
  Value y = g.conv2d(x, w, opt);
  EXPECT_EQ(g.type(g.conv2d_grad_input(y, w, opt, {2, 3, 8, 8})).shape, (Shape{2, 3, 8, 8}));
  EXPECT_EQ(g.type(g.conv2d_grad_weight(y, x, opt, {4, 3, 3, 3})).shape, (Shape{4, 3, 3, 3}));
  // Stride 2 over 8 or 9 pixels gives the same output size: input_shape disambiguates.
  Conv2dOptions s2{.stride = {2, 2}, .padding = {1, 1}};
  Value y2 = g.conv2d(x, w, s2);
  EXPECT_EQ(g.type(g.conv2d_grad_input(y2, w, s2, {2, 3, 7, 7})).shape, (Shape{2, 3, 7, 7}));
  expect_error([&] { g.conv2d_grad_input(y2, w, s2, {2, 3, 12, 12}); }, {"conv2d_grad_input", "f32[2,4,4,4]", "[2,4,6,6]"});
  Value p = g.max_pool2d(x, {.kernel = {2, 2}});
  EXPECT_EQ(g.type(g.max_pool2d_grad(p, x, {.kernel = {2, 2}})), g.type(x));
  EXPECT_EQ(g.type(g.avg_pool2d_grad(p, {.kernel = {2, 2}}, {2, 3, 8, 8})), g.type(x));
  expect_error([&] { g.max_pool2d_grad(x, x, {.kernel = {2, 2}}); }, {"max_pool2d_grad", "input 0 (f32[2,3,8,8])"});
  expect_error([&] { g.relu_grad(p, x); }, {"relu_grad", "input 0 (f32[2,3,4,4])"});
  Value logits = g.input("logits", F, {8, 10});
  Value labels = g.input("labels", DType::I64, {8});
  EXPECT_EQ(g.type(cross_entropy_grad(g, g.scalar(1, F), logits, labels)), g.type(logits));
  expect_error([&] { cross_entropy_grad(g, logits, logits, labels); }, {"cross_entropy_grad", "scalar"});
}

TEST(ShapeInference, LeavesAndConstants) {
  Graph g;
  Value c = g.constant(1.5, DType::F64, {2, 2});
  EXPECT_EQ(g.type(c), (TensorType{DType::F64, {2, 2}}));
  EXPECT_DOUBLE_EQ(g.node(c).attrs.get_float("value"), 1.5);
  expect_error([&] { g.input("neg", F, {2, -1}); }, {"negative dimension"});
  expect_error([&] { g.add_leaf(OpKind::Constant, "", {F, {}}); }, {"constant", "missing attribute 'value'"});
}

}  // namespace
}  // namespace spire::graph
