#include "frontend/onnx/model_signature.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
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

// The model is read as a stream of protobuf fields, not parsed whole: of the graph only its inputs, its outputs and
// its initializers' names are read, and every other field (the initializers' data above all: a decoder's hundreds of
// megabytes) is skipped by seeking past it. ONNX's field numbers (onnx.proto): ModelProto.graph 7; GraphProto.initializer
// 5, input 11, output 12; TensorProto.name 8.
ModelSignature read_signature(const std::filesystem::path& path) {
  using google::protobuf::io::CodedInputStream;
  using WireFormat = google::protobuf::internal::WireFormatLite;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ImportError(fmt::format("{}: no such file", path.string()));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw ImportError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  google::protobuf::io::FileInputStream file(fd);
  CodedInputStream in(&file);
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  auto length_delimited = [](uint32_t tag) { return WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED; };
  // Runs `body` inside the limit of the length-delimited field at the stream's position; false where it does not parse.
  auto within = [&](auto body) {
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return false;
    const CodedInputStream::Limit limit = in.PushLimit(int(length));
    const bool ok = body() && in.ConsumedEntireMessage();
    in.PopLimit(limit);
    return ok;
  };
  std::vector<onnx::ValueInfoProto> inputs, outputs;
  std::set<std::string> initializers;
  auto graph_fields = [&] {
    while (const uint32_t tag = in.ReadTag()) {
      const int field = WireFormat::GetTagFieldNumber(tag);
      bool ok = true;
      if ((field == 11 || field == 12) && length_delimited(tag)) {
        onnx::ValueInfoProto& v = (field == 11 ? inputs : outputs).emplace_back();
        ok = within([&] { return v.MergePartialFromCodedStream(&in); });
      } else if (field == 5 && length_delimited(tag)) {
        ok = within([&] {
          std::string name;
          while (const uint32_t t = in.ReadTag()) {
            const bool is_name = WireFormat::GetTagFieldNumber(t) == 8 && length_delimited(t);
            if (!(is_name ? WireFormat::ReadString(&in, &name) : WireFormat::SkipField(&in, t))) return false;
          }
          initializers.insert(name);
          return true;
        });
      } else {
        ok = WireFormat::SkipField(&in, tag);
      }
      if (!ok) return false;
    }
    return true;
  };
  bool has_graph = false, ok = true;
  while (ok) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    if (WireFormat::GetTagFieldNumber(tag) == 7 && length_delimited(tag)) {
      has_graph = true;
      ok = within(graph_fields);
    } else {
      ok = WireFormat::SkipField(&in, tag);
    }
  }
  if (!ok || !has_graph || !in.ConsumedEntireMessage())
    throw ImportError(fmt::format("{}: not an ONNX model (the file does not parse as an ONNX ModelProto)", path.string()));
  ModelSignature sig;
  for (const auto& v : inputs)
    if (!initializers.count(v.name())) sig.inputs.push_back(declared(v));
  for (const auto& v : outputs) sig.outputs.push_back(declared(v));
  return sig;
}

}  // namespace spire::onnx_import
