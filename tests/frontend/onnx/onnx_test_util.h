// Small ONNX models built in C++ with the protobuf classes, for tests that must not need Python.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace spire::onnx_test {

inline onnx::ValueInfoProto value_info(const std::string& name, int elem, const std::vector<std::string>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
  return v;
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

inline onnx::NodeProto node(const std::string& op, const std::vector<std::string>& in,
                            const std::vector<std::string>& out, const std::string& name = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name.empty() ? op + "_" + out.at(0) : name);
  for (const auto& s : in) n.add_input(s);
  for (const auto& s : out) n.add_output(s);
  return n;
}

inline void add_int_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline onnx::ModelProto model(const onnx::GraphProto& g, int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("spire-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = g;
  if (m.graph().name().empty()) m.mutable_graph()->set_name("test");
  return m;
}

// y = reshape(relu(x W^T + b), [batch, 3]) where the target shape comes from a Shape -> Gather ->
// Unsqueeze -> Concat chain (as PyTorch exports x.view(x.size(0), -1)); x: [batch, 4] with batch symbolic.
inline onnx::ModelProto small_mlp() {
  onnx::GraphProto g;
  g.set_name("small_mlp");
  *g.add_input() = value_info("x", onnx::TensorProto::FLOAT, {"batch", "4"});
  *g.add_output() = value_info("y", onnx::TensorProto::FLOAT, {"batch", "3"});
  std::vector<float> w(12), b = {0.5f, -0.25f, 1.0f};
  for (int i = 0; i < 12; ++i) w[size_t(i)] = float(i - 6) * 0.125f;
  *g.add_initializer() = float_tensor("W", {3, 4}, w);
  *g.add_initializer() = float_tensor("B", {3}, b);
  *g.add_initializer() = int64_tensor("zero", {}, {0});
  *g.add_initializer() = int64_tensor("zeroaxis", {1}, {0});
  *g.add_initializer() = int64_tensor("minus1", {1}, {-1});
  auto gemm = node("Gemm", {"x", "W", "B"}, {"h"});
  add_int_attr(gemm, "transB", 1);
  *g.add_node() = gemm;
  *g.add_node() = node("Relu", {"h"}, {"r"});
  *g.add_node() = node("Shape", {"r"}, {"s"});
  auto gather = node("Gather", {"s", "zero"}, {"n"});
  add_int_attr(gather, "axis", 0);
  *g.add_node() = gather;
  *g.add_node() = node("Unsqueeze", {"n", "zeroaxis"}, {"n1"});
  auto concat = node("Concat", {"n1", "minus1"}, {"shape"});
  add_int_attr(concat, "axis", 0);
  *g.add_node() = concat;
  *g.add_node() = node("Reshape", {"r", "shape"}, {"y"});
  return model(g);
}

inline void write_model(const onnx::ModelProto& m, const std::filesystem::path& p) {
  std::ofstream out(p, std::ios::binary);
  m.SerializeToOstream(&out);
}

}  // namespace spire::onnx_test
