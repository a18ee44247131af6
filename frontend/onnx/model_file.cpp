#include "frontend/onnx/model_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <onnx/checker.h>

#include "frontend/onnx/onnx_import.h"

// Exported by libonnx (onnx/checker.cc) but not declared in its header: the body of check_model(path) without the
// file's second read. The path form loads the model itself, then calls this with a context that knows the folder.
namespace onnx::checker {
void check_model(const ModelProto& model, CheckerContext& ctx);
}

namespace spire::onnx_import {

void parse_file(const std::filesystem::path& path, google::protobuf::MessageLite& message, const std::string& not_parsed) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ImportError(fmt::format("{}: no such file", path.string()));
  // (protobuf takes an int size: a message is at most 2 GiB, as ONNX says; larger weights go to external data)
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw ImportError(fmt::format("{}: cannot read: {}", path.string(), ec.message()));
  if (size == 0 || size > uintmax_t(std::numeric_limits<int>::max()))
    throw ImportError(fmt::format("{}: {}", path.string(), not_parsed));
  // Read into room left uninitialized (a vector or string would write its hundreds of megabytes with zeros first).
  std::unique_ptr<char[]> bytes(new char[size_t(size)]);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f || std::fread(bytes.get(), 1, size_t(size), f.get()) != size_t(size))
    throw ImportError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
  if (!message.ParseFromArray(bytes.get(), int(size))) throw ImportError(fmt::format("{}: {}", path.string(), not_parsed));
}

void check_model_read_from(const onnx::ModelProto& model, const std::filesystem::path& path) {
  // The folder as check_model(path) works it out: the path up to its last separator, kept.
  const std::string p = path.string();
  const size_t slash = p.find_last_of("\\/");
  onnx::checker::CheckerContext ctx;
  ctx.set_model_dir(slash == std::string::npos ? std::string() : p.substr(0, slash + 1));
  onnx::checker::check_model(model, ctx);
}

}  // namespace spire::onnx_import
