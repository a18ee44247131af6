// spire onnx-test DIR... [--device D]: ONNX backend node tests (model.onnx + test_data_set_N/input_K.pb and
// output_K.pb, as libonnx-testdata installs them) run through the importer on a device or the reference,
// compared with rtol 1e-3, atol 1e-5 (exactly for integers and bools). One PASS/FAIL line per test.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "frontend/onnx/tensor_proto.h"
#include "tools/spire/commands.h"
#include "tools/spire/onnx_model.h"

namespace spire::cli {
namespace {
namespace fs = std::filesystem;

struct OnnxTestCmd {
  std::vector<std::string> dirs;
  std::string device = "reference";
};

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && e.path().extension() == ".pb") found.emplace_back(std::stoi(n.substr(prefix.size())), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> r;
  for (auto& f : found) r.push_back(f.second);
  return r;
}

// Empty when they agree; else the first disagreement.
std::string compare(const std::string& name, const graph::Tensor& got, const graph::Tensor& want) {
  if (got.dtype != want.dtype || got.shape != want.shape)
    return fmt::format("output '{}' is {} but the test expects {}", name, got.type().to_string(), want.type().to_string());
  const bool exact = !graph::is_float(want.dtype);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double a = got.data[i], e = want.data[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (exact ? a == e : (a == e || std::fabs(a - e) <= 1e-5 + 1e-3 * std::fabs(e))) continue;
    return fmt::format("output '{}' differs at element {}: {} instead of {}", name, i, a, e);
  }
  return {};
}

// The element types the model declares for its graph inputs and outputs, by name.
std::map<std::string, int> declared_types(const fs::path& model_file) {
  std::ifstream in(model_file, std::ios::binary);
  onnx::ModelProto m;
  std::map<std::string, int> types;
  if (!in || !m.ParseFromIstream(&in)) return types;  // load_onnx reports it properly
  for (const auto* list : {&m.graph().input(), &m.graph().output()})
    for (const auto& v : *list)
      if (v.type().has_tensor_type()) types[v.name()] = v.type().tensor_type().elem_type();
  return types;
}

// A test tensor file and its name (`unnamed` when the file gives none). ONNX's older test data store bfloat16
// tensors as UINT16 (numpy has no bfloat16): where the model declares the value BFLOAT16, the bits are read as
// bfloat16.
std::pair<std::string, graph::Tensor> read_test_tensor(const fs::path& f, const std::map<std::string, int>& types,
                                                       const std::string& unnamed = "") {
  std::ifstream in(f, std::ios::binary);
  onnx::TensorProto t;
  if (!in || !t.ParseFromIstream(&in)) throw std::runtime_error(f.string() + ": not a serialized ONNX TensorProto");
  const std::string name = t.name().empty() ? unnamed : t.name();
  auto declared = types.find(name);
  if (t.data_type() == onnx::TensorProto::UINT16 && declared != types.end() &&
      declared->second == onnx::TensorProto::BFLOAT16)
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  return {name, onnx_import::read_tensor_proto(t, f.parent_path(), f.filename().string())};
}

// One test directory: empty on success, else the reason.
std::string run_one(const fs::path& dir, rt::Device* device) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_N folder";
  const auto types = declared_types(dir / "model.onnx");
  for (const auto& set : sets) {
    std::map<std::string, graph::Tensor> given, expected;
    for (const auto& f : sorted_files(set, "input_")) {
      auto [name, tensor] = read_test_tensor(f, types);
      if (name.empty()) return fmt::format("{}: tensor without a name", f.string());
      given[name] = std::move(tensor);
    }
    const std::string src = set.string();
    LoadedModel m = load_onnx((dir / "model.onnx").string(), given, src, /*known_scalars=*/true);
    const auto feeds = input_feeds(m, given, src);
    const auto results = device ? run_on_device(m, feeds, *device) : run_reference(m, feeds);
    const auto outs = sorted_files(set, "output_");
    for (size_t k = 0; k < outs.size(); ++k) {
      auto [name, want] = read_test_tensor(outs[k], types, k < m.outputs.size() ? m.outputs[k].onnx_name : "");
      auto it = results.find(name);
      if (it == results.end()) return fmt::format("no output '{}'", name);
      const std::string diff = compare(name, it->second, want);
      if (!diff.empty()) return diff;
    }
  }
  return {};
}

void run_onnx_test(const OnnxTestCmd& o) {
  std::unique_ptr<rt::Device> dev;
  if (o.device != "reference") dev = rt::open_device(o.device);
  int pass = 0, fail = 0;
  for (const auto& d : o.dirs) {
    std::string reason;
    try {
      reason = run_one(d, dev.get());
    } catch (const std::exception& e) {
      reason = e.what();
    }
    // The test's folder name, also when the folder is given with a trailing slash (`ls -d node/*/`).
    fs::path folder(d);
    if (folder.filename().empty()) folder = folder.parent_path();
    const std::string test = folder.filename().string();
    if (reason.empty()) {
      ++pass;
      fmt::print("PASS {}\n", test);
    } else {
      ++fail;
      for (char& ch : reason)
        if (ch == '\n') ch = ' ';
      fmt::print("FAIL {}: {}\n", test, reason);
    }
    std::fflush(stdout);
  }
  fmt::print("{} passed, {} failed on {}\n", pass, fail, o.device);
  if (fail > 0) throw std::runtime_error(fmt::format("{} of {} ONNX node tests failed", fail, pass + fail));
}

}  // namespace

void register_onnx_test_commands(CLI::App& app) {
  auto o = std::make_shared<OnnxTestCmd>();
  auto* cmd = app.add_subcommand("onnx-test", "Run ONNX backend node tests (folders holding model.onnx and test_data_set_N)");
  cmd->add_option("dirs", o->dirs, "Test folders")->required();
  cmd->add_option("--device", o->device, "vulkan:N, cuda:N, 'default' or 'reference' (the default)");
  cmd->callback([o] { run_onnx_test(*o); });
}

}  // namespace spire::cli
