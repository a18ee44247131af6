#include "frontend/onnx/model_signature.h"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "frontend/onnx/onnx_import.h"

namespace spire::onnx_import {
namespace {

DeclaredValue declared(const onnx::ValueInfoProto& v) {
  DeclaredValue d;
  d.name = v.name();
  if (!v.type().has_tensor_type()) return d;
  const auto& tt = v.type().tensor_type();
  d.elem_type = tt.elem_type();
  d.has_shape = tt.has_shape();
  for (const auto& dim : tt.shape().dim())
    d.dims.push_back(dim.has_dim_value() ? DeclaredDim{dim.dim_value(), {}} : DeclaredDim{-1, dim.dim_param()});
  return d;
}

const DeclaredValue* find(const std::vector<DeclaredValue>& vs, const std::string& name) {
  for (const auto& v : vs)
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace

const DeclaredValue* ModelSignature::input(const std::string& name) const { return find(inputs, name); }
const DeclaredValue* ModelSignature::output(const std::string& name) const { return find(outputs, name); }

ModelSignature read_signature(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError(fmt::format("{}: no such file", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  onnx::ModelProto m;
  if (!m.ParseFromString(s.str()) || !m.has_graph())
    throw ImportError(fmt::format("{}: not an ONNX model (the file does not parse as an ONNX ModelProto)", path.string()));
  std::set<std::string> initializers;
  for (const auto& init : m.graph().initializer()) initializers.insert(init.name());
  ModelSignature sig;
  for (const auto& v : m.graph().input())
    if (!initializers.count(v.name())) sig.inputs.push_back(declared(v));
  for (const auto& v : m.graph().output()) sig.outputs.push_back(declared(v));
  return sig;
}

}  // namespace spire::onnx_import
