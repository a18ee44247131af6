#include "tools/spire/run_bundle.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "bundle/bundle_file.h"
#include "bundle/session.h"
#include "io/tensor_file.h"
#include "runtime/startup_profile.h"

namespace spire::cli {

namespace {

// A host tensor (doubles) as the bytes of `dtype`, and back.
std::vector<uint8_t> host_bytes(const graph::Tensor& t, DType dtype) {
  std::vector<uint8_t> out(t.data.size() * dtype_bytes(dtype));
  for (size_t i = 0; i < t.data.size(); ++i) write_element(dtype, t.data[i], out.data() + i * dtype_bytes(dtype));
  return out;
}

graph::Tensor from_host_bytes(const std::vector<uint8_t>& bytes, DType dtype, const std::vector<int64_t>& shape) {
  graph::Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.resize(bytes.size() / dtype_bytes(dtype));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = read_element(dtype, bytes.data() + i * dtype_bytes(dtype));
  return t;
}

}  // namespace

std::vector<std::vector<uint8_t>> feed_session(bundle::Session& s, const std::map<std::string, graph::Tensor>& given,
                                               const std::string& source) {
  const bundle::Bundle& b = s.bundle();
  // The batch from the batched inputs given (they must agree).
  int64_t batch = 0;
  for (const auto& spec : b.inputs) {
    auto it = given.find(spec.name);
    if (it == given.end()) throw std::invalid_argument(fmt::format("input '{}' is missing from {}", spec.name, source));
    if (spec.batched && !it->second.shape.empty()) {
      if (batch && it->second.shape[0] != batch)
        throw std::invalid_argument(fmt::format("inputs disagree on the batch: {} and {}", batch, it->second.shape[0]));
      batch = it->second.shape[0];
    }
  }
  if (batch) s.set_batch(batch);
  std::vector<std::vector<uint8_t>> fed;
  for (const auto& spec : b.inputs) {
    const graph::Tensor& t = given.at(spec.name);
    if (t.shape != s.shape(spec) || spec.dtype != t.dtype)
      throw std::invalid_argument(fmt::format("input '{}' is {} {} in the bundle (at batch {}) but {} {} in {}", spec.name,
                                              bundle::dtype_name(spec.dtype), graph::shape_to_string(s.shape(spec)),
                                              s.batch(), graph::dtype_name(t.dtype), graph::shape_to_string(t.shape), source));
    fed.push_back(host_bytes(t, spec.dtype));
    s.set_input(spec.name, fed.back().data(), fed.back().size());
  }
  return fed;
}

std::map<std::string, graph::Tensor> session_outputs(bundle::Session& s) {
  std::map<std::string, graph::Tensor> out;
  for (const auto& spec : s.bundle().outputs) {
    std::vector<uint8_t> bytes(spec.elements_at(s.batch()) * bundle::dtype_bytes(spec.dtype));
    s.get_output(spec.name, bytes.data(), bytes.size());
    out[spec.name] = from_host_bytes(bytes, spec.dtype, s.shape(spec));
  }
  return out;
}

void run_bundle(const std::string& bundle_path, const std::string& inputs, const std::string& outputs,
                const std::string& device, int bench, bool profile_startup) {
  if (device == "reference" || device == "all")
    throw std::invalid_argument(fmt::format("--device {}: a bundle runs on one device (vulkan:N or cuda:N); run the "
                                            ".onnx model for the reference or all devices", device));
  auto b = std::make_shared<const bundle::Bundle>(bundle::read_bundle(bundle_path));
  const auto given = io::load_tensors(inputs);
  auto dev = rt::open_device(device);
  bundle::Session s(b, *dev);
  if (b->precision != Precision::Fp32)
    fmt::print(stderr, "spire: note: {} was compiled under --precision {} ({}: docs/PRECISION.md)\n", bundle_path,
               precision_name(b->precision),
               b->precision == Precision::Tf32 ? "a target without TF32 matrices runs fp32"
                                               : "a target without the half type runs fp32");
  const std::vector<std::vector<uint8_t>> fed = feed_session(s, given, inputs);  // --bench feeds them every run
  s.run();
  if (profile_startup) fmt::print("{}", rt::startup::report(rt::startup::snapshot()));
  io::NamedTensors written;
  std::map<std::string, graph::Tensor> got = session_outputs(s);
  for (const auto& spec : b->outputs) written.emplace_back(spec.name, std::move(got.at(spec.name)));
  io::save_tensors(outputs, written);
  if (bench > 0) {
    // Each run as an application makes it: its inputs set from host memory, the run, its outputs read back; the
    // device's time from its timestamps, the wall time of the three around it.
    std::vector<std::vector<uint8_t>> read;
    for (const auto& spec : b->outputs) read.emplace_back(spec.elements_at(s.batch()) * bundle::dtype_bytes(spec.dtype));
    const auto round = [&] {
      for (size_t i = 0; i < b->inputs.size(); ++i) s.set_input(b->inputs[i].name, fed[i].data(), fed[i].size());
      s.run();
      for (size_t i = 0; i < b->outputs.size(); ++i) s.get_output(b->outputs[i].name, read[i].data(), read[i].size());
    };
    for (int i = 0; i < 3; ++i) round();
    std::vector<double> ms, wall;
    for (int i = 0; i < bench; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      round();
      wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      ms.push_back(s.last_run_ms());
    }
    std::sort(ms.begin(), ms.end());
    std::sort(wall.begin(), wall.end());
    fmt::print("{:<12} {:>6} {:>6} {:>12} {:>12} {:>12}  (plan for batch {}; wall: set inputs, run, get outputs)\n",
               "device", "batch", "runs", "median ms", "min ms", "wall ms", s.current_plan().batch);
    fmt::print("{:<12} {:>6} {:>6} {:>12.4f} {:>12.4f} {:>12.4f}\n", dev->info().id, s.batch(), bench, ms[ms.size() / 2],
               ms.front(), wall[wall.size() / 2]);
  }
}

}  // namespace spire::cli
