#include "bundle/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/launch_hazards.h"

namespace spire::bundle {

namespace {

// Written into every buffer a run computes before the first run: as f32 a NaN, so unwritten output shows.
constexpr uint32_t kPoison = 0x7FF80000u;

// Host tensor bytes (dtype `from`) -> device bytes (type `to`), `n` elements. Same representation: a copy.
void host_to_device(const void* src, DType from, void* dst, kir::Type to, uint64_t n, const std::string& name) {
  if ((from == DType::F32 && to == kir::Type::F32) || (from == DType::I32 && to == kir::Type::I32) ||
      (from == DType::F64 && to == kir::Type::F64)) {
    std::memcpy(dst, src, size_t(n) * dtype_bytes(from));
    return;
  }
  auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (from) {
      case DType::F32: { float f; std::memcpy(&f, s + i * 4, 4); v = f; break; }
      case DType::F64: std::memcpy(&v, s + i * 8, 8); break;
      case DType::I32: { int32_t x; std::memcpy(&x, s + i * 4, 4); v = x; break; }
      case DType::I64: {
        int64_t x;
        std::memcpy(&x, s + i * 8, 8);
        if (to == kir::Type::I32 && (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()))
          throw std::invalid_argument(fmt::format("input '{}': element {} = {} is outside the 32-bit range i64 values "
                                                  "are stored in on devices", name, i, x));
        v = double(x);
        break;
      }
      case DType::Bool: v = s[i] ? 1 : 0; break;
    }
    switch (to) {
      case kir::Type::F32: { float f = float(v); std::memcpy(d + i * 4, &f, 4); break; }
      case kir::Type::F64: std::memcpy(d + i * 8, &v, 8); break;
      case kir::Type::I32: { int32_t x = int32_t(v); std::memcpy(d + i * 4, &x, 4); break; }
      case kir::Type::U32: { uint32_t x = v != 0; std::memcpy(d + i * 4, &x, 4); break; }
      case kir::Type::I64: { int64_t x = int64_t(v); std::memcpy(d + i * 8, &x, 8); break; }
      default: throw std::invalid_argument(fmt::format("input '{}': no conversion to {}", name, kir::type_name(to)));
    }
  }
}

void device_to_host(const void* src, kir::Type from, void* dst, DType to, uint64_t n) {
  if ((to == DType::F32 && from == kir::Type::F32) || (to == DType::I32 && from == kir::Type::I32) ||
      (to == DType::F64 && from == kir::Type::F64)) {
    std::memcpy(dst, src, size_t(n) * dtype_bytes(to));
    return;
  }
  auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (from) {
      case kir::Type::F32: { float f; std::memcpy(&f, s + i * 4, 4); v = f; break; }
      case kir::Type::F64: std::memcpy(&v, s + i * 8, 8); break;
      case kir::Type::I32: { int32_t x; std::memcpy(&x, s + i * 4, 4); v = x; break; }
      case kir::Type::U32: { uint32_t x; std::memcpy(&x, s + i * 4, 4); v = x; break; }
      case kir::Type::I64: { int64_t x; std::memcpy(&x, s + i * 8, 8); v = double(x); break; }
      default: break;
    }
    switch (to) {
      case DType::F32: { float f = float(v); std::memcpy(d + i * 4, &f, 4); break; }
      case DType::F64: std::memcpy(d + i * 8, &v, 8); break;
      case DType::I32: { int32_t x = int32_t(v); std::memcpy(d + i * 4, &x, 4); break; }
      case DType::I64: { int64_t x = int64_t(v); std::memcpy(d + i * 8, &x, 8); break; }
      case DType::Bool: d[i] = v != 0; break;
    }
  }
}

std::string plan_names(const Bundle& b) {
  std::string s;
  for (const DevicePlan& p : b.plans)
    if (s.find(p.target) == std::string::npos) s += (s.empty() ? "" : ", ") + p.target;
  return s.empty() ? "none" : s;
}

}  // namespace

// One plan made real on the device: its buffers (weights shared through the session), its kernels, and the
// recorded stream of one run, recorded again when the application binds or unbinds a device buffer. Where the plan
// has launches that compute only from weights, a second stream leaves them out: the plan's first run runs them, and
// the later runs read what they left in the arena.
//
// A run fed and read through host memory is one submit and one wait on every device: the inputs live in device memory
// the host maps where the device has it (rt::Memory::DeviceMapped: lavapipe, a GPU's resizable BAR), so set_input()
// writes them in place; elsewhere (CUDA) set_input() writes a host-visible feed buffer that the stream copies in
// first. The stream ends by copying each output the application did not bind into a host-visible buffer that
// get_output() reads. (A synchronous upload or download is a submit and a wait of its own: tens of microseconds
// each on a discrete GPU, three round trips a run before.)
class PlanInstance {
 public:
  PlanInstance(Session& s, const DevicePlan& p) : s_(s), p_(p), dev_(s.device()) {
    load_kernels();
    allocate();
  }

  const DevicePlan& plan() const { return p_; }
  rt::Buffer& buffer(uint32_t index) { return *views_[index].buffer; }
  // Where set_input() writes input `input`: the plan's buffer itself where mapped, else its feed buffer.
  void* input_memory(size_t input) {
    void* in_place = buffer(p_.input_buffers[input]).mapped();
    return in_place ? in_place : feeds_[input]->mapped();
  }
  // Output `output`'s copy in host memory, when the last run wrote one (it did not send the output to an
  // application's buffer); else null.
  const void* readback(size_t output) const {
    return ran_ && read_back_[output] ? readbacks_[output]->mapped() : nullptr;
  }
  rt::BufferView view(uint32_t index) { return views_[index]; }

  void run(int64_t batch) {
    // Recorded again only when the batch or the application's bound buffers changed: a replay allocates nothing.
    if (!every_.stream || recorded_batch_ != batch || recorded_bindings_ != s_.bindings_version_) record(batch);
    Recorded& r = ran_ && steady_.stream ? steady_ : every_;
    dev_.run(*r.stream);
    ran_ = true;
    last_ms_ = r.stream->elapsed_ms(r.t_begin, r.t_end);
  }
  double last_ms() const { return last_ms_; }

 private:
  void load_kernels() {
    for (const rt::KernelBinary& k : p_.kernels) {
      try {
        kernels_.push_back(dev_.load(k));
      } catch (const rt::MissingFeature&) {
        throw;
      } catch (const std::exception& e) {
        throw rt::Error(fmt::format("loading kernel '{}' of plan '{}' (batch {}) on {}: {}", k.signature.name, p_.target,
                                    p_.batch, dev_.info().id, e.what()));
      }
    }
  }

  void allocate() {
    const uint64_t max_binding = dev_.info().max_buffer_bytes;
    if (p_.arena_bytes) {
      arena_ = dev_.alloc(p_.arena_bytes);
      dev_.fill(*arena_, kPoison);
    }
    views_.resize(p_.buffers.size());
    owned_.resize(p_.buffers.size());
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const BufferSpec& b = p_.buffers[i];
      const uint64_t bytes = std::max<uint64_t>(b.bytes(), 4);
      if (max_binding && b.bytes() > max_binding)
        throw rt::Error(fmt::format("buffer '{}' needs {} bytes, more than the {} bytes {} can bind at once", b.name,
                                    b.bytes(), max_binding, dev_.info().id));
      if (b.role == BufferRole::Transient) {
        if (b.arena_offset >= 0) views_[i] = rt::BufferView(*arena_, uint64_t(b.arena_offset), bytes);
        continue;
      }
      if (b.role == BufferRole::Parameter) {
        owned_[i] = s_.weight_buffer(size_t(b.weight));
      } else {
        owned_[i] = dev_.alloc(bytes, b.role == BufferRole::Input ? rt::Memory::DeviceMapped : rt::Memory::DeviceLocal);
        // Inputs start at zero: the rows beyond a smaller batch are padding and should be tidy numbers.
        dev_.fill(*owned_[i], b.role == BufferRole::Input ? 0u : kPoison);
        if (b.fill) {
          std::vector<uint8_t> data(size_t(b.bytes()));
          const double v = *b.fill;
          for (uint64_t e = 0; e < b.elements; ++e) host_to_device(&v, DType::F64, data.data() + e * kir::type_bytes(b.type),
                                                                    b.type, 1, b.name);
          if (!data.empty()) dev_.upload(*owned_[i], data.data(), data.size());
        }
      }
      views_[i] = rt::BufferView(owned_[i], 0, bytes);
    }
    // Inputs start at zero (above), their host-written copies too.
    for (uint32_t index : p_.input_buffers) {
      const uint64_t bytes = p_.buffers[index].bytes();
      feeds_.push_back(buffer(index).mapped() ? nullptr : dev_.alloc(std::max<uint64_t>(bytes, 4), rt::Memory::HostVisible));
      if (feeds_.back()) std::memset(feeds_.back()->mapped(), 0, size_t(bytes));
    }
    for (uint32_t index : p_.output_buffers) {
      const uint64_t bytes = p_.buffers[index].bytes();
      readbacks_.push_back(dev_.alloc(std::max<uint64_t>(bytes, 4), rt::Memory::HostVisible));
      // Poisoned, as the device buffers are: an output read before any run shows as NaN.
      rt::fill_host_bytes(readbacks_.back()->mapped(), bytes, kPoison);
    }
  }

  // Bytes of the first `batch` rows of io tensor `spec` held in plan buffer `index`.
  uint64_t row_bytes(const TensorSpec& spec, uint32_t index, int64_t batch) const {
    return spec.elements_at(batch) * kir::type_bytes(p_.buffers[index].type);
  }

  // A recorded run: every launch, or all but the parameters-only ones.
  struct Recorded {
    std::unique_ptr<rt::CommandStream> stream;
    uint32_t t_begin = 0, t_end = 0;
  };

  void record(int64_t batch) {
    every_ = record(batch, false);
    const bool once =
        std::any_of(p_.launches.begin(), p_.launches.end(), [](const LaunchSpec& l) { return l.parameters_only; });
    steady_ = once ? record(batch, true) : Recorded{};
    recorded_batch_ = batch;
    recorded_bindings_ = s_.bindings_version_;
  }

  Recorded record(int64_t batch, bool steady) {
    const Bundle& b = s_.bundle();
    Recorded r;
    r.stream = dev_.record();
    rt::CommandStream* stream = r.stream.get();
    bool copied_in = false;
    for (size_t i = 0; i < b.inputs.size(); ++i) {
      const uint32_t index = p_.input_buffers[i];
      if (const rt::BufferView& app = s_.bound_inputs_[i]; app.buffer) {
        const uint64_t bytes = row_bytes(b.inputs[i], index, batch);
        if (bytes) stream->copy(rt::BufferView(*app.buffer, app.offset, bytes), rt::BufferView(buffer(index), 0, bytes));
        copied_in = true;
      } else if (feeds_[i] && p_.buffers[index].bytes()) {
        // The whole buffer, the zero rows beyond the batch included.
        const uint64_t bytes = p_.buffers[index].bytes();
        stream->copy(rt::BufferView(feeds_[i], 0, bytes), rt::BufferView(buffer(index), 0, bytes));
        copied_in = true;
      }
    }
    if (copied_in) stream->barrier();
    r.t_begin = stream->timestamp();
    std::vector<rt::BufferView> views;
    rt::LaunchHazards hazards;  // a barrier only before a launch that depends on one since the last
    for (const LaunchSpec& l : p_.launches) {
      if (steady && l.parameters_only) continue;
      views.clear();
      for (uint32_t i : l.buffers) views.push_back(views_[i]);
      rt::ScalarArgs scalars = scalar_args(l);
      hazards.dispatch(*stream, *kernels_[l.kernel], views, scalars, rt::Grid::workgroups(l.groups));
    }
    if (!p_.launches.empty()) stream->barrier();  // the copies below read the launches' results
    for (const CopySpec& c : p_.copies) {
      rt::BufferView from = views_[c.from], to = views_[c.to];
      from.size = to.size = p_.buffers[c.to].bytes();
      if (from.size) stream->copy(from, to);
    }
    if (!p_.copies.empty()) stream->barrier();
    r.t_end = stream->timestamp();
    bool copied_out = false;
    read_back_.assign(b.outputs.size(), false);
    for (size_t i = 0; i < b.outputs.size(); ++i) {
      const uint32_t index = p_.output_buffers[i];
      const uint64_t bytes = row_bytes(b.outputs[i], index, batch);
      const rt::BufferView& app = s_.bound_outputs_[i];
      const rt::BufferView to = app.buffer ? rt::BufferView(*app.buffer, app.offset, bytes)
                                           : rt::BufferView(readbacks_[i], 0, bytes);
      if (bytes) stream->copy(rt::BufferView(buffer(index), 0, bytes), to);
      read_back_[i] = !app.buffer;
      copied_out = copied_out || bytes;
    }
    if (copied_out) stream->barrier();
    stream->finish();
    return r;
  }

  // The launch's packed scalar bytes, pushed in the signature's order so the stream packs them identically.
  rt::ScalarArgs scalar_args(const LaunchSpec& l) const {
    const kir::Kernel& sig = p_.kernels[l.kernel].signature;
    const std::vector<uint32_t> offsets = sig.scalar_offsets();
    rt::ScalarArgs a;
    for (size_t i = 0; i < sig.scalars.size(); ++i) {
      const uint8_t* p = l.scalars.data() + offsets[i];
      switch (sig.scalars[i].type) {
        case kir::Type::F32: { float v; std::memcpy(&v, p, 4); a.f32(v); break; }
        case kir::Type::F64: { double v; std::memcpy(&v, p, 8); a.f64(v); break; }
        case kir::Type::I64: { int64_t v; std::memcpy(&v, p, 8); a.i64(v); break; }
        case kir::Type::I32: { int32_t v; std::memcpy(&v, p, 4); a.i32(v); break; }
        default: { uint32_t v; std::memcpy(&v, p, 4); a.u32(v); break; }
      }
    }
    return a;
  }

  Session& s_;
  const DevicePlan& p_;
  rt::Device& dev_;
  std::vector<std::shared_ptr<rt::Kernel>> kernels_;
  std::shared_ptr<rt::Buffer> arena_;
  std::vector<std::shared_ptr<rt::Buffer>> owned_;
  std::vector<rt::BufferView> views_;
  std::vector<std::shared_ptr<rt::Buffer>> feeds_;      // by input index, host-visible; null where written in place
  std::vector<std::shared_ptr<rt::Buffer>> readbacks_;  // by output index, host-visible
  std::vector<bool> read_back_;  // by output index: the recorded stream copies it into its readback
  bool ran_ = false;  // the parameters-only launches' results are in the arena
  Recorded every_, steady_;  // steady_: none where the plan has no parameters-only launches
  int64_t recorded_batch_ = -1;
  uint64_t recorded_bindings_ = 0;
  double last_ms_ = 0;
};

Session::Session(std::shared_ptr<const Bundle> bundle, rt::Device& device) : bundle_(std::move(bundle)), device_(device) {
  const rt::BinaryFormat want = device.binary_format();
  const uint32_t sm = device.info().compute_capability;
  std::string too_new;
  for (const DevicePlan& p : bundle_->plans) {
    if (p.format != want) continue;
    if (want == rt::BinaryFormat::Ptx && p.ptx_sm > sm) {
      too_new = p.target;
      continue;
    }
    plans_.push_back(&p);
  }
  if (plans_.empty()) {
    if (!too_new.empty())
      throw BundleError(fmt::format("{}: its PTX plans ({}) need compute capability {} or newer; {} ({}) has {}",
                                    bundle_->model, too_new, bundle_->plans.front().ptx_sm, device.info().id,
                                    device.info().name, sm));
    throw BundleError(fmt::format("{}: the bundle holds no {} plan for {} ({}); it was compiled for: {} (compile it "
                                  "again with --targets spirv,ptx)",
                                  bundle_->model, rt::binary_format_name(want), device.info().id, device.info().name,
                                  plan_names(*bundle_)));
  }
  // Several PTX targets: the newest the device runs serves; keep one plan per batch.
  std::stable_sort(plans_.begin(), plans_.end(), [](const DevicePlan* a, const DevicePlan* b) {
    return a->batch != b->batch ? a->batch < b->batch : a->ptx_sm > b->ptx_sm;
  });
  plans_.erase(std::unique(plans_.begin(), plans_.end(),
                           [](const DevicePlan* a, const DevicePlan* b) { return a->batch == b->batch; }),
               plans_.end());
  instances_.resize(plans_.size());
  weights_.resize(bundle_->weights.size());
  bound_inputs_.resize(bundle_->inputs.size());
  bound_outputs_.resize(bundle_->outputs.size());
  set_batch(bundle_->max_batch ? bundle_->max_batch : 0);
}

Session::~Session() = default;

void Session::set_batch(int64_t batch) {
  const Bundle& b = *bundle_;
  if (b.max_batch == 0) {
    if (batch != 0 && batch != 1)
      throw std::invalid_argument(fmt::format("{}: the model has no batch dimension; the batch cannot be {}", b.model, batch));
    batch = 0;
  } else if (batch < 1 || batch > b.max_batch || (!b.dynamic_batch && batch != b.max_batch)) {
    throw std::invalid_argument(
        b.dynamic_batch ? fmt::format("{}: batch {} is outside 1..{}, the range it was compiled for", b.model, batch, b.max_batch)
                        : fmt::format("{}: compiled for batch {} only (spire compile --dynamic-batch for others), not {}",
                                      b.model, b.max_batch, batch));
  }
  size_t index = 0;
  while (index + 1 < plans_.size() && plans_[index]->batch < batch) ++index;
  if (plans_[index]->batch < batch)
    throw BundleError(fmt::format("{}: no {} plan holds batch {} (the largest is {})", b.model, plans_[index]->target,
                                  batch, plans_[index]->batch));
  batch_ = batch;
  plan_index_ = index;
}

std::vector<int64_t> Session::shape(const TensorSpec& spec) const {
  std::vector<int64_t> s = spec.shape;
  if (spec.batched) s[0] = batch_;
  return s;
}

const DevicePlan& Session::current_plan() const { return *plans_[plan_index_]; }

size_t Session::input_index(const std::string& name) const {
  for (size_t i = 0; i < bundle_->inputs.size(); ++i)
    if (bundle_->inputs[i].name == name) return i;
  std::string names;
  for (const auto& t : bundle_->inputs) names += (names.empty() ? "" : ", ") + t.name;
  throw std::out_of_range(fmt::format("the model has no input '{}' (its inputs: {})", name, names));
}

size_t Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < bundle_->outputs.size(); ++i)
    if (bundle_->outputs[i].name == name) return i;
  std::string names;
  for (const auto& t : bundle_->outputs) names += (names.empty() ? "" : ", ") + t.name;
  throw std::out_of_range(fmt::format("the model has no output '{}' (its outputs: {})", name, names));
}

const TensorSpec& Session::input(const std::string& name) const { return bundle_->inputs[input_index(name)]; }
const TensorSpec& Session::output(const std::string& name) const { return bundle_->outputs[output_index(name)]; }

PlanInstance& Session::instance() {
  auto& slot = instances_[plan_index_];
  if (!slot) slot = std::make_unique<PlanInstance>(*this, *plans_[plan_index_]);
  return *slot;
}

std::shared_ptr<rt::Buffer> Session::weight_buffer(size_t index) {
  if (!weights_[index]) {
    const Weight& w = bundle_->weights[index];
    auto buf = device_.alloc(std::max<uint64_t>(w.bytes.size(), 4));
    if (!w.bytes.empty()) device_.upload(*buf, w.bytes.data(), w.bytes.size());
    weights_[index] = std::move(buf);
  }
  return weights_[index];
}

void Session::set_input(const std::string& name, const void* data, size_t bytes) {
  const size_t i = input_index(name);
  const TensorSpec& spec = bundle_->inputs[i];
  const uint64_t n = spec.elements_at(batch_);
  if (bytes != n * dtype_bytes(spec.dtype))
    throw std::invalid_argument(fmt::format("input '{}' is {} of shape {} at batch {}: {} bytes, not {}", name,
                                            dtype_name(spec.dtype), fmt::join(shape(spec), "x"), batch_,
                                            n * dtype_bytes(spec.dtype), bytes));
  if (n && !data) throw std::invalid_argument(fmt::format("input '{}': no data", name));
  PlanInstance& inst = instance();
  const BufferSpec& buf = inst.plan().buffers[inst.plan().input_buffers[i]];
  if (buf.bytes() == 0) return;
  // Host memory the next run reads (PlanInstance), written once: the values converted, then the rows beyond the
  // batch zeroed (the plan may be for a larger batch).
  auto* to = static_cast<uint8_t*>(inst.input_memory(i));
  const uint64_t written = n * kir::type_bytes(buf.type);
  if (spec.dtype != DType::I64) {
    host_to_device(data, spec.dtype, to, buf.type, n, name);  // nothing to refuse: it cannot fail halfway
  } else {
    // i64 values outside the device's 32 bits are refused: into host memory first, so a refused input leaves the
    // last one whole.
    std::vector<uint8_t> converted(static_cast<size_t>(written));
    host_to_device(data, spec.dtype, converted.data(), buf.type, n, name);
    std::memcpy(to, converted.data(), converted.size());
  }
  std::memset(to + written, 0, size_t(buf.bytes() - written));
}

void Session::bind_input(const std::string& name, rt::BufferView view) {
  const size_t i = input_index(name);
  bind(bound_inputs_[i], view, bundle_->inputs[i], current_plan().input_buffers[i], "input");
}

void Session::bind_output(const std::string& name, rt::BufferView view) {
  const size_t i = output_index(name);
  bind(bound_outputs_[i], view, bundle_->outputs[i], current_plan().output_buffers[i], "output");
}

void Session::bind(rt::BufferView& slot, rt::BufferView view, const TensorSpec& spec, uint32_t buffer, const char* what) {
  if (view.buffer) {
    const uint64_t need = spec.elements_at(bundle_->max_batch) * kir::type_bytes(current_plan().buffers[buffer].type);
    const bool inside = view.offset <= view.buffer->size();
    if (!inside || view.bytes() < need)
      throw std::invalid_argument(fmt::format("{} '{}': the bound buffer holds {} bytes from offset {}, the largest "
                                              "batch needs {}", what, spec.name, inside ? view.bytes() : 0, view.offset,
                                              need));
  }
  slot = view;
  ++bindings_version_;
}

void Session::run() { instance().run(batch_); }

double Session::last_run_ms() const {
  const auto& slot = instances_[plan_index_];
  return slot ? slot->last_ms() : 0;
}

void Session::get_output(const std::string& name, void* data, size_t bytes) {
  const size_t i = output_index(name);
  const TensorSpec& spec = bundle_->outputs[i];
  const uint64_t n = spec.elements_at(batch_);
  if (bytes != n * dtype_bytes(spec.dtype))
    throw std::invalid_argument(fmt::format("output '{}' is {} of shape {} at batch {}: {} bytes, not {}", name,
                                            dtype_name(spec.dtype), fmt::join(shape(spec), "x"), batch_,
                                            n * dtype_bytes(spec.dtype), bytes));
  if (n && !data) throw std::invalid_argument(fmt::format("output '{}': nowhere to write", name));
  PlanInstance& inst = instance();
  const uint32_t index = inst.plan().output_buffers[i];
  const kir::Type type = inst.plan().buffers[index].type;
  std::vector<uint8_t> device_bytes(size_t(n * kir::type_bytes(type)));
  if (device_bytes.empty()) return;
  // The last run's copy in host memory, unless it sent the output to the application's buffer (or never ran).
  if (const void* copy = inst.readback(i))
    std::memcpy(device_bytes.data(), copy, device_bytes.size());
  else
    device_.download(inst.buffer(index), device_bytes.data(), device_bytes.size());
  device_to_host(device_bytes.data(), type, data, spec.dtype, n);
}

}  // namespace spire::bundle
