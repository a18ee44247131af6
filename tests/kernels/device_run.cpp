#include "backends/compile_kernel.h"
#include "tests/kernels/device_run.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "base/half_bits.h"
#include "ir/graph/op_table.h"
#include "lowering/op_lowering.h"
#include "runtime/vulkan/vulkan_validation.h"

namespace spire::heavy_test {

DeviceRun::DeviceRun(rt::Device& device, const graph::Graph& g) : dev_(device), g_(g) {}

int32_t DeviceRun::add_slot(kir::Type type, int64_t elements, std::string name) {
  uint64_t bytes = uint64_t(std::max<int64_t>(elements, 1)) * dtype_bytes(type);
  slots_.push_back(Slot{std::move(name), type, elements, dev_.alloc(bytes), false});
  return int32_t(slots_.size() - 1);
}

int32_t DeviceRun::buffer_of(graph::Value v) {
  auto it = slot_of_value_.find(v.id);
  if (it != slot_of_value_.end()) return it->second;
  const graph::Node& n = g_.node(v);
  int32_t s = add_slot(lowering::device_type(n.type.dtype), n.type.numel(), n.name);
  slot_of_value_[v.id] = s;
  return s;
}

void DeviceRun::alias(graph::Value, graph::Value) {
  throw std::logic_error("DeviceRun: heavy lowerings never alias buffers");
}

int32_t DeviceRun::scratch(kir::Type type, int64_t elements) {
  return add_slot(type, elements, fmt::format("scratch.{}", slots_.size()));
}

void DeviceRun::launch(kir::Kernel kernel, std::vector<int32_t> buffers, rt::ScalarArgs scalars, uint64_t groups) {
  if (buffers.size() != kernel.buffers.size())
    throw std::logic_error(fmt::format("kernel '{}' declares {} buffers but the launch binds {}", kernel.name,
                                       kernel.buffers.size(), buffers.size()));
  for (size_t i = 0; i < buffers.size(); ++i)
    if (slots_.at(size_t(buffers[i])).type != kernel.buffers[i].elem)
      throw std::logic_error(fmt::format("kernel '{}' buffer {} ('{}') is {} but slot '{}' holds {}", kernel.name, i,
                                         kernel.buffers[i].name, dtype_name(kernel.buffers[i].elem),
                                         slots_[size_t(buffers[i])].name, dtype_name(slots_[size_t(buffers[i])].type)));
  kernels_.push_back(std::move(kernel));
  launches_.push_back(PendingLaunch{kernels_.size() - 1, std::move(buffers), std::move(scalars), groups});
}

void DeviceRun::upload(int32_t slot, const graph::Tensor& t) {
  Slot& s = slots_.at(size_t(slot));
  if (t.numel() != s.elements)
    throw std::invalid_argument(fmt::format("upload to '{}': {} elements for a slot of {}", s.name, t.numel(), s.elements));
  std::vector<uint8_t> bytes(size_t(s.elements) * dtype_bytes(s.type));
  for (int64_t i = 0; i < s.elements; ++i) {
    double v = t[i];
    uint8_t* p = bytes.data() + size_t(i) * dtype_bytes(s.type);
    switch (s.type) {
      case kir::Type::F32: { float f = float(v); std::memcpy(p, &f, 4); break; }
      case kir::Type::F64: std::memcpy(p, &v, 8); break;
      case kir::Type::I32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
      case kir::Type::U32: { uint32_t x = uint32_t(v); std::memcpy(p, &x, 4); break; }
      // The tensor holds values of its dtype already (round_to_dtype), so these conversions are exact.
      case kir::Type::F16: { uint16_t h = spire::f32_to_f16_bits(float(v)); std::memcpy(p, &h, 2); break; }
      case kir::Type::BF16: { uint16_t h = spire::f32_to_bf16_bits(float(v)); std::memcpy(p, &h, 2); break; }
      default: throw std::invalid_argument("upload: unsupported slot type");
    }
  }
  if (!bytes.empty()) dev_.upload(*s.buffer, bytes.data(), bytes.size());
  s.uploaded = true;
}

graph::Tensor DeviceRun::download(int32_t slot, graph::DType dtype, const graph::Shape& shape) {
  const Slot& s = slots_.at(size_t(slot));
  graph::Tensor t(dtype, shape);
  if (t.numel() != s.elements) throw std::invalid_argument("download: element count mismatch");
  std::vector<uint8_t> bytes(size_t(s.elements) * dtype_bytes(s.type));
  if (!bytes.empty()) dev_.download(*s.buffer, bytes.data(), bytes.size());
  for (int64_t i = 0; i < s.elements; ++i) {
    const uint8_t* p = bytes.data() + size_t(i) * dtype_bytes(s.type);
    switch (s.type) {
      case kir::Type::F32: { float f; std::memcpy(&f, p, 4); t[i] = f; break; }
      case kir::Type::F64: { double d; std::memcpy(&d, p, 8); t[i] = d; break; }
      case kir::Type::I32: { int32_t x; std::memcpy(&x, p, 4); t[i] = x; break; }
      case kir::Type::U32: { uint32_t x; std::memcpy(&x, p, 4); t[i] = x; break; }
      case kir::Type::F16: { uint16_t h; std::memcpy(&h, p, 2); t[i] = spire::f16_bits_to_f32(h); break; }
      case kir::Type::BF16: { uint16_t h; std::memcpy(&h, p, 2); t[i] = spire::bf16_bits_to_f32(h); break; }
      default: throw std::invalid_argument("download: unsupported slot type");
    }
  }
  return t;  // not rounded: a device value is what it is
}

void DeviceRun::set(graph::Value v, const graph::Tensor& t) { upload(buffer_of(v), t); }

graph::Tensor DeviceRun::get(graph::Value v) {
  const graph::Node& n = g_.node(v);
  return download(buffer_of(v), n.type.dtype, n.type.shape);
}

void DeviceRun::run() {
  for (Slot& s : slots_)
    if (!s.uploaded) dev_.fill(*s.buffer, kPoisonNaN);
  std::vector<std::shared_ptr<rt::Kernel>> compiled;
  for (const auto& k : kernels_) compiled.push_back(spire::backends::compile_and_load(dev_, k));
  auto stream = dev_.record();
  for (const PendingLaunch& l : launches_) {
    std::vector<rt::BufferView> views;
    for (int32_t b : l.buffers) views.emplace_back(slots_[size_t(b)].buffer);
    stream->dispatch(*compiled[l.kernel], views, l.scalars, rt::Grid::workgroups(l.groups));
    stream->barrier();
  }
  dev_.run(*stream);
}

void lower_graph(DeviceRun& run, const graph::Graph& g) {
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (graph::is_leaf(n.op)) continue;  // filled by run_on_device
    const lowering::OpLowering* e = lowering::op_lowering(n.op);
    if (graph::op_category(n.op) != graph::OpCategory::Heavy || !e)
      throw std::invalid_argument(fmt::format("lower_graph: {} is not a heavy op", graph::op_name(n.op)));
    e->lower(run, v);
  }
}

std::map<std::string, graph::Tensor> run_on_device(rt::Device& dev, const graph::Graph& g,
                                                   const std::map<std::string, graph::Tensor>& inputs) {
  DeviceRun run(dev, g);
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter || n.op == graph::OpKind::State)
      run.set(v, inputs.at(n.name));
    else if (n.op == graph::OpKind::Constant)
      run.set(v, graph::Tensor(n.type.dtype, n.type.shape, n.attrs.get_float("value")));
  }
  lower_graph(run, g);
  run.run();
  std::map<std::string, graph::Tensor> out;
  for (const auto& o : g.outputs()) out[o.name] = run.get(o.value);
  return out;
}

rt::Device& device(const std::string& id) {
  static std::map<std::string, std::unique_ptr<rt::Device>> open;
  auto& d = open[id];
  if (!d) d = rt::open_device(id);
  return *d;
}

std::vector<std::string> device_ids() {
  std::vector<std::string> ids;
  for (const auto& d : rt::list_devices()) ids.push_back(d.id);
  return ids;
}

std::vector<std::string> device_ids_with(kir::Feature feature) {
  std::vector<std::string> ids;
  for (const auto& d : rt::list_devices())
    if (d.features.has(feature)) ids.push_back(d.id);
  return ids;
}

std::string test_name_of(const std::string& device_id) {
  std::string s = device_id;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

uint64_t validation_messages() { return rt::vulkan::validation_message_count(); }

}  // namespace spire::heavy_test
