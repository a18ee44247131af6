// evaluate() itself: feeding and checking leaves, constants, outputs and state updates, integer pass-through,
// values read by several nodes, the compute precision, and the error messages.
#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace driver_test {  // named, not anonymous: test executables build as unity batches

// Runs `f`, expects a GraphError, and returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const GraphError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no GraphError was thrown";
  return "";
}

Graph add_graph() {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 3});
  Value b = g.parameter("fc.bias", DType::F32, {3});
  g.output("y", g.add(x, b));
  return g;
}

TEST(EvalDriver, MissingInputNamesTheLeaf) {
  Graph g = add_graph();
  std::string msg = error_of([&] { evaluate(g, {{"x", Tensor(DType::F32, {2, 3})}}); });
  EXPECT_NE(msg.find("missing parameter 'fc.bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[3]"), std::string::npos) << msg;
}

TEST(EvalDriver, WrongShapeNamesExpectedAndGot) {
  Graph g = add_graph();
  std::string msg = error_of([&] {
    evaluate(g, {{"x", Tensor(DType::F32, {3, 2})}, {"fc.bias", Tensor(DType::F32, {3})}});
  });
  EXPECT_NE(msg.find("input 'x' expects f32[2,3], got f32[3,2]"), std::string::npos) << msg;
}

TEST(EvalDriver, WrongDtypeNamesExpectedAndGot) {
  Graph g = add_graph();
  std::string msg = error_of([&] {
    evaluate(g, {{"x", Tensor(DType::F32, {2, 3})}, {"fc.bias", Tensor(DType::F64, {3})}});
  });
  EXPECT_NE(msg.find("parameter 'fc.bias' expects f32[3], got f64[3]"), std::string::npos) << msg;
}

TEST(EvalDriver, InconsistentTensorStorageIsRefused) {
  Graph g = add_graph();
  Tensor bad(DType::F32, {3});
  bad.data.pop_back();
  std::string msg = error_of([&] { evaluate(g, {{"x", Tensor(DType::F32, {2, 3})}, {"fc.bias", bad}}); });
  EXPECT_NE(msg.find("holds 2 values"), std::string::npos) << msg;
}

TEST(EvalDriver, UnusedLeavesMustStillBeFed) {
  Graph g;
  Value x = g.input("x", DType::F64, {1});
  g.input("unused", DType::F64, {1});
  g.output("y", g.neg(x));
  std::string msg = error_of([&] { evaluate(g, {{"x", f64({1}, {1})}}); });
  EXPECT_NE(msg.find("'unused'"), std::string::npos) << msg;
}

TEST(EvalDriver, ExtraEntriesAreIgnored) {
  Graph g;
  g.output("y", g.neg(g.input("x", DType::F64, {1})));
  expect_values(eval_output(g, {{"x", f64({1}, {2})}, {"something_else", f64({}, {0})}}), {1}, {-2});
}

TEST(EvalDriver, ComputePrecisionMustBeFloat) {
  Graph g = add_graph();
  EXPECT_THROW(evaluate(g, {}, DType::I32), GraphError);
}

TEST(EvalDriver, ConstantsBroadcastTheirFillValue) {
  Graph g;
  Value x = g.input("x", DType::F64, {2});
  g.output("y", g.mul(g.add(x, 1.5), g.constant(-2, DType::F64, {2})));
  expect_values(eval_output(g, {{"x", f64({2}, {1, 2})}}), {2}, {-5, -7});
}

TEST(EvalDriver, IntegerInputsPassThroughExactly) {
  Graph g;
  Value labels = g.input("labels", DType::I64, {3});
  g.output("labels_out", labels);
  Tensor got = eval_output(g, {{"labels", Tensor::from(DType::I64, {3}, {9, 0, 4503599627370497.0})}}, "labels_out",
                           DType::F32);
  EXPECT_EQ(got.dtype, DType::I64);
  expect_values(got, {3}, {9, 0, 4503599627370497.0}, 0);
}

TEST(EvalDriver, SgdMomentumStepAsStateUpdates) {
  // The optimizer step is ordinary ops plus state updates: v' = 0.9 v + g; w' = w - 0.1 v'.
  Graph g;
  Value w = g.parameter("w", DType::F64, {2});
  Value v = g.state("w.momentum", DType::F64, {2});
  Value grad = g.input("grad", DType::F64, {2});
  Value v_new = g.add(g.mul(v, 0.9), grad);
  Value w_new = g.sub(w, g.mul(v_new, 0.1));
  g.state_update(v, v_new);
  g.state_update(w, w_new);
  g.output("w_norm2", g.sum(g.mul(w_new, w_new)));
  auto out = evaluate(g, {{"w", f64({2}, {1, -2})}, {"w.momentum", f64({2}, {10, 0})}, {"grad", f64({2}, {1, 4})}});
  ASSERT_EQ(out.size(), 3u);
  expect_values(out["w.momentum"], {2}, {10, 4}, 1e-15);  // 0.9*10 + 1, 0 + 4
  expect_values(out["w"], {2}, {0, -2.4}, 1e-15);          // 1 - 1.0, -2 - 0.4
  expect_values(out["w_norm2"], {}, {5.76}, 1e-14);
}

TEST(EvalDriver, AdamFirstStepAsStateUpdates) {
  // Adam at step 1 from zero moments: m = (1 - b1) g, v = (1 - b2) g^2, and after bias correction
  // m_hat = g, v_hat = g^2, so w' = w - lr g / (|g| + eps).
  const double b1 = 0.9, b2 = 0.999, lr = 0.1, eps = 1e-8;
  Graph g;
  Value w = g.parameter("w", DType::F64, {2});
  Value m = g.state("w.m", DType::F64, {2});
  Value v = g.state("w.v", DType::F64, {2});
  Value grad = g.input("grad", DType::F64, {2});
  Value m_new = g.add(g.mul(m, b1), g.mul(grad, 1 - b1));
  Value v_new = g.add(g.mul(v, b2), g.mul(g.mul(grad, grad), 1 - b2));
  Value m_hat = g.div(m_new, 1 - b1);
  Value v_hat = g.div(v_new, 1 - b2);
  g.state_update(m, m_new);
  g.state_update(v, v_new);
  g.state_update(w, g.sub(w, g.mul(g.div(m_hat, g.add(g.sqrt(v_hat), eps)), lr)));
  auto out = evaluate(g, {{"w", f64({2}, {1, -1})}, {"w.m", f64({2}, {0, 0})}, {"w.v", f64({2}, {0, 0})},
                          {"grad", f64({2}, {0.5, -2})}});
  expect_values(out["w.m"], {2}, {0.05, -0.2}, 1e-15);
  expect_values(out["w.v"], {2}, {0.00025, 0.004}, 1e-15);
  expect_values(out["w"], {2}, {1 - lr * 0.5 / (0.5 + eps), -1 + lr * 2 / (2 + eps)}, 1e-12);
}

TEST(EvalDriver, AValueReadByManyNodesSurvivesUntilItsLastUse) {
  // h feeds three nodes spread through the graph; intermediates are freed after their last reader only.
  Graph g;
  Value x = g.input("x", DType::F64, {2});
  Value h = g.exp(x);
  Value a = g.mul(h, h);
  Value b = g.add(a, g.neg(x));
  Value c = g.add(b, h);
  g.output("c", c);
  g.output("h", h);
  auto out = evaluate(g, {{"x", f64({2}, {0, std::log(2.0)})}});
  expect_values(out["c"], {2}, {2, 6 - std::log(2.0)}, 1e-15);  // e^2x - x + e^x
  expect_values(out["h"], {2}, {1, 2}, 1e-15);
}

TEST(EvalDriver, OutputsRoundToTheirDtype) {
  // An f32 graph in F64 compute: the result is computed in double and rounded to float once, at the end.
  Graph g;
  Value x = g.input("x", DType::F32, {1});
  g.output("y", g.div(x, g.scalar(3.0, DType::F32)));
  Tensor y = eval_output(g, {{"x", Tensor::from(DType::F32, {1}, {1})}});
  EXPECT_EQ(y.data[0], double(float(1.0 / 3.0)));
}

TEST(EvalDriver, F32ComputeRoundsEveryOp) {
  // (1 + 2^-30) - 1: in F64 compute the small term survives the add; in F32 compute 1 + 2^-30 rounds to 1.
  Graph g;
  Value x = g.input("x", DType::F64, {1});
  g.output("y", g.sub(g.add(x, std::ldexp(1.0, -30)), x));
  Tensor in = f64({1}, {1});
  EXPECT_EQ(eval_output(g, {{"x", in}}, "y", DType::F64).data[0], std::ldexp(1.0, -30));
  EXPECT_EQ(eval_output(g, {{"x", in}}, "y", DType::F32).data[0], 0.0);
}

TEST(EvalDriver, F32ComputeRoundsInputsOfDtypeF64) {
  Graph g;
  Value x = g.input("x", DType::F64, {1});
  g.output("y", g.neg(x));
  EXPECT_EQ(eval_output(g, {{"x", f64({1}, {0.1})}}, "y", DType::F32).data[0], -double(0.1f));
}

}  // namespace driver_test
}  // namespace spire::graph::test
