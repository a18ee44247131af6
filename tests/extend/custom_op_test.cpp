// Custom ops through every layer that needs no device: the op table, the text form, the evaluator, autograd,
// lowering (opaque to fusion; a GLSL kernel refused for CUDA by name; a kernel-builder one compiled to PTX)
// and --dump.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "autograd/grad.h"
#include "backends/ptx/ptx_backend.h"
#include "examples/builtin_kernels.h"
#include "examples/custom_ops/seed_ops.h"
#include "extend/custom_op.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"
#include "dump/dump.h"
#include "lowering/plan.h"
#include "tests/backends/ptx/ptxas_runner.h"
#include "tests/support/h100_like_target.h"

using namespace spire;
using graph::DType;
using graph::TensorType;

namespace {

// A lavapipe-like Vulkan target, described by data (no device needed to lower for it).
rt::DeviceInfo vulkan_target() {
  rt::DeviceInfo d = testing_support::h100_like_target("vulkan:7");
  d.backend = rt::Backend::Vulkan;
  d.compute_capability = 0;
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// A two-input op written with expressions, its kernel from the kernel builder (examples/kernels/one_element_each.cpp).
graph::OpKind fused_add_relu() {
  static const graph::OpKind kind = [] {
    ext::CustomOp op{.name = "t_add_relu", .inputs = {"a", "b"}};
    op.reference_expression = "maximum(a + b, 0)";
    op.gradient_expressions = {{"a", "relu_grad(grad, y)"}, {"b", "relu_grad(grad, y)"}};
    op.kernel = [](const lowering::CustomKernelRequest&) { return examples::add_relu_kernel(); };
    op.dtype = DType::F32;
    return ext::register_custom_op(std::move(op));
  }();
  return kind;
}

TEST(CustomOp, IsAnEntryOfTheOpTableOfCategoryCustom) {
  const graph::OpKind k = fused_add_relu();
  EXPECT_EQ(graph::op_from_name("t_add_relu"), k);
  EXPECT_TRUE(graph::is_user_op(k));
  EXPECT_EQ(graph::op_info(k).category, graph::OpCategory::Custom);
  EXPECT_EQ(graph::op_info(k).arity, 2);
  EXPECT_FALSE(graph::is_user_op(graph::OpKind::Relu));
}

TEST(CustomOp, ShapeComesFromTheReferenceAndTheKernelsLimitsAreEnforced) {
  fused_add_relu();
  graph::Graph g;
  auto a = g.input("a", DType::F32, {4, 5});
  auto b = g.input("b", DType::F32, {4, 5});
  EXPECT_EQ(g.type(g.op("t_add_relu", {a, b})), (TensorType{DType::F32, {4, 5}}));
  auto row = g.input("row", DType::F32, {5});
  EXPECT_THAT(error_of([&] { g.op("t_add_relu", {a, row}); }),
              testing::EndsWith("': its kernel reads every input at the result's index, so input 1 (f32[5]) must "
                                "have the result's shape [4,5] (broadcast it first)"));
  auto d = g.input("d", DType::F64, {4, 5});
  EXPECT_THAT(error_of([&] { g.op("t_add_relu", {d, d}); }),
              testing::EndsWith("': its kernel is written for f32; input 0 (f64[4,5]) is not"));
}

TEST(CustomOp, RegistrationRefusesTakenAndInvalidNamesAndIncompleteOps) {
  fused_add_relu();
  auto with = [](std::string name, std::function<void(ext::CustomOp&)> edit = {}) {
    ext::CustomOp op{.name = std::move(name)};
    op.reference_expression = "x";
    op.glsl = "#version 450\nlayout(local_size_x = 64) in;\nlayout(set = 0, binding = 1) buffer O { float y[]; };\nvoid main() { y[0] = 0.0; }\n";
    if (edit) edit(op);
    return error_of([&] { ext::register_custom_op(std::move(op)); });
  };
  EXPECT_EQ(with("relu"), "custom op 'relu': the name is taken by a built-in op");
  EXPECT_EQ(with("t_add_relu"), "custom op 't_add_relu': the name is taken by an earlier custom op");
  EXPECT_EQ(with("9lives"), "custom op name '9lives': use letters, digits and '_', not starting with a digit");
  EXPECT_EQ(with("t_noref", [](auto& op) { op.reference_expression.clear(); }),
            "custom op t_noref: give exactly one CPU reference, a C++ function or an expression");
  EXPECT_EQ(with("t_nokernel", [](auto& op) { op.glsl.clear(); }),
            "custom op t_nokernel: give exactly one kernel, a kernel-builder function or GLSL");
  EXPECT_EQ(with("t_badname", [](auto& op) { op.gradient_expressions = {{"x", "grad * z"}}; }),
            "custom op t_badname: its gradient of x `grad * z` reads 'z', which is not one of x, y, grad");
  EXPECT_EQ(with("t_binding", [](auto& op) {
              op.glsl = "#version 450\nlayout(local_size_x = 64) in;\nlayout(set = 0, binding = 5) buffer O { float y[]; };\n"
                        "void main() { y[0] = 0.0; }\n";
            }),
            "GLSL kernel kernel.comp: binding 5 is beyond the op's 2 buffers (its inputs at bindings 0..0, then the "
            "result at binding 1)");
  for (const char* n : {"t_noref", "t_nokernel", "t_badname", "t_binding"}) EXPECT_FALSE(graph::op_from_name(n)) << n;
}

TEST(CustomOp, RoundTripsThroughTheTextForm) {
  fused_add_relu();
  graph::Graph g;
  auto a = g.input("a", DType::F32, {3});
  auto b = g.input("b", DType::F32, {3});
  g.output("y", g.op("t_add_relu", {a, b}));
  const std::string text = graph::print(g);
  EXPECT_NE(text.find("t_add_relu_"), std::string::npos);
  EXPECT_NE(text.find(" = t_add_relu(a, b) : f32[3]"), std::string::npos) << text;
  EXPECT_EQ(graph::print(graph::parse(text)), text);
}

TEST(CustomOp, TheEvaluatorRunsItsReferenceAndAutogradItsGradient) {
  fused_add_relu();
  graph::Graph g;
  auto a = g.input("a", DType::F32, {4});
  auto b = g.input("b", DType::F32, {4});
  auto y = g.op("t_add_relu", {a, b});
  auto loss = g.sum(g.mul(y, g.input("w", DType::F32, {4})));
  auto grads = autograd::grad(g, loss, {a, b});
  g.output("y", y);
  g.output("da", grads[0]);
  g.output("db", grads[1]);
  auto out = graph::evaluate(g,
                             {{"a", graph::Tensor::from(DType::F32, {4}, {-2, 1, 0.5, 3})},
                              {"b", graph::Tensor::from(DType::F32, {4}, {1, -2, 0.25, -1})},
                              {"w", graph::Tensor::from(DType::F32, {4}, {10, 20, 30, 40})}},
                             DType::F64);
  EXPECT_EQ(out.at("y").data, (std::vector<double>{0, 0, 0.75, 2}));
  EXPECT_EQ(out.at("da").data, (std::vector<double>{0, 0, 30, 40}));
  EXPECT_EQ(out.at("db").data, (std::vector<double>{0, 0, 30, 40}));
}

TEST(CustomOp, ACppVjpAndReferenceWork) {
  const std::string name = examples::register_seed_relu_builder();
  graph::Graph g;
  auto x = g.input("x", DType::F32, {3});
  auto y = g.op(name, {x});
  auto grads = autograd::grad(g, g.sum(g.mul(y, y)), {x});
  g.output("y", y);
  g.output("dx", grads[0]);
  auto out = graph::evaluate(g, {{"x", graph::Tensor::from(DType::F32, {3}, {-1, 2, 0.5})}}, DType::F64);
  EXPECT_EQ(out.at("y").data, (std::vector<double>{0, 2, 0.5}));
  EXPECT_EQ(out.at("dx").data, (std::vector<double>{0, 4, 1}));  // d(y^2)/dx = 2y where x > 0
}

graph::Graph bias_then(const std::string& op) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 300});
  auto b = g.input("b", DType::F32, {4, 300});
  auto s = g.add(x, b);
  g.output("y", g.op(op, {g.exp(s)}));
  return g;
}

TEST(CustomOp, FusionTreatsItAsAnOpaqueKernel) {
  const std::string relu = examples::register_seed_relu_glsl();
  lowering::Plan plan = lowering::lower(bias_then(relu), vulkan_target());
  // add and exp fuse into one pointwise kernel; the custom op is a launch of its own, its kernel the GLSL module.
  ASSERT_EQ(plan.launches.size(), 2u) << lowering::plan_text(plan);
  const kir::Kernel& k = plan.kernels[size_t(plan.launches[1].kernel)];
  EXPECT_TRUE(k.prebuilt());
  EXPECT_EQ(k.workgroup_size[0], 256u);                    // read from the module
  EXPECT_EQ(plan.launches[1].groups, (4u * 300 + 1023) / 1024);  // elements_per_workgroup: 1024
}

TEST(CustomOp, AGlslKernelIsRefusedForCudaNamingTheDevicesThatRunIt) {
  const std::string relu = examples::register_seed_relu_glsl();
  EXPECT_THAT(error_of([&] { lowering::lower(bias_then(relu), testing_support::h100_like_target("cuda:0")); }),
            testing::EndsWith("') has only a GLSL kernel (GLSL examples/custom_ops/seed_relu.comp), "
            "which runs on Vulkan devices; cuda:0 cannot run it. Use a vulkan:N device (`spire devices` lists them), "
            "or give the op a kernel-builder kernel"));
}

TEST(CustomOp, AKernelBuilderKernelLowersToPtxThatAssembles) {
  const std::string relu = examples::register_seed_relu_builder();
  lowering::Plan plan = lowering::lower(bias_then(relu), testing_support::h100_like_target("cuda:0"));
  ASSERT_EQ(plan.launches.size(), 2u);
  const kir::Kernel& k = plan.kernels[size_t(plan.launches[1].kernel)];
  EXPECT_EQ(k.name, "relu");
  const std::string ptx = ptx::compile(k, ptx::Target{90});
  EXPECT_NE(ptx.find(".entry relu"), std::string::npos);
  auto ptxas = ptx::testing::find_ptxas();
  if (!ptxas) GTEST_SKIP() << "ptxas not found: PTX generated but not assembled";
  auto r = ptx::testing::assemble(*ptxas, ptx, 90);
  EXPECT_TRUE(r.ok) << r.log;
}

TEST(CustomOp, AKernelBuilderKernelBreakingTheContractIsNamed) {
  static const graph::OpKind k = [] {
    ext::CustomOp op{.name = "t_wrong_kernel"};
    op.reference_expression = "x";
    op.kernel = [](const lowering::CustomKernelRequest&) { return examples::add_relu_kernel(); };  // 3 buffers
    return ext::register_custom_op(std::move(op));
  }();
  graph::Graph g;
  g.output("y", g.add_node(k, {g.input("x", DType::F32, {8})}, {}));
  EXPECT_THAT(error_of([&] { lowering::lower(g, vulkan_target()); }),
              testing::EndsWith("'): its kernel 'add_relu' from a C++ kernel-builder function declares 3 buffers; it "
                                "must declare 2 (the 1 inputs, then the result)"));
}

TEST(CustomOp, DumpWritesItsSpirvAndSaysWhyThereIsNoPtx) {
  const std::string relu = examples::register_seed_relu_glsl();
  const auto dir = std::filesystem::temp_directory_path() / "spire_custom_dump";
  std::filesystem::remove_all(dir);
  auto report = dump::dump_pipeline(dir, bias_then(relu), nullptr, {.target = vulkan_target()});
  bool spv = false, refused = false;
  for (const auto& f : report.files)
    if (f.filename().string().find("seed_relu") != std::string::npos && f.extension() == ".spv") spv = true;
  for (const auto& e : report.errors)
    if (e.find("seed_relu") != std::string::npos && e.find("exists only as a SPIR-V module") != std::string::npos) refused = true;
  EXPECT_TRUE(spv) << dump::dump_summary(report, dir);
  EXPECT_TRUE(refused) << dump::dump_summary(report, dir);
  std::filesystem::remove_all(dir);
}

}  // namespace
