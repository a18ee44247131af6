#include "bundle/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/plan_executor.h"
#include "runtime/startup_profile.h"

namespace spire::bundle {

namespace {

// Host tensor bytes (dtype `from`) -> device bytes (type `to`), `n` elements: an i64 is stored as i32 on devices, and a
// value beyond 32 bits is refused (std::invalid_argument naming the input and the element) before anything is written.
void host_to_device(const void* src, DType from, void* dst, DType to, uint64_t n, const std::string& name) {
  if (from == DType::I64 && to == DType::I32)
    for (uint64_t i = 0; i < n; ++i) {
      int64_t x;
      std::memcpy(&x, static_cast<const uint8_t*>(src) + i * 8, 8);
      if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
        throw std::invalid_argument(fmt::format("input '{}': element {} = {} is outside the 32-bit range i64 values "
                                                "are stored in on devices", name, i, x));
    }
  if (from == DType::Bool)  // a bool is stored as a word, 0 or 1, whatever nonzero byte the application passed
    for (uint64_t i = 0; i < n; ++i)
      write_element(to, static_cast<const uint8_t*>(src)[i] != 0, static_cast<uint8_t*>(dst) + i * dtype_bytes(to));
  else
    convert_elements(src, from, dst, to, n);
}

std::string plan_names(const Bundle& b) {
  std::string s;
  for (const DevicePlan& p : b.plans)
    if (s.find(p.target) == std::string::npos) s += (s.empty() ? "" : ", ") + p.target;
  return s.empty() ? "none" : s;
}

// The index of the tensor named `name` in `specs` (the bundle's inputs or outputs: `what`); out_of_range naming them.
size_t index_of(const std::vector<TensorSpec>& specs, const std::string& name, std::string_view what) {
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  std::string names;
  for (const auto& t : specs) names += (names.empty() ? "" : ", ") + t.name;
  throw std::out_of_range(fmt::format("the model has no {} '{}' (its {}s: {})", what, name, what, names));
}

}  // namespace

// One plan made real on the device by the runtime's executor (runtime/plan_executor.h): every input and output is a
// streamed value, so a run fed and read through host memory is one submit and one wait on every device (the inputs
// are written in place where the device maps its memory, else copied in by the run), and the weights are the
// session's buffers, shared by every batch's plan. Inputs start at zero: the rows beyond a smaller batch are padding.
class PlanInstance {
 public:
  // `weights_ready` is waited for before the executor takes the first weight buffer (the weights go up on another
  // thread while the executor loads the kernels).
  PlanInstance(Session& s, const DevicePlan& p, std::shared_future<void> weights_ready)
      : s_(s), p_(p), exec_(s.device(), p, options(s, p, std::move(weights_ready))) {}

  const DevicePlan& plan() const { return p_; }
  rt::PlanExecutor& executor() { return exec_; }

  void run(int64_t batch) {
    // The application's bound buffers hold the batch's rows only; bound again when the batch or a binding changed.
    if (bound_batch_ != batch || bound_version_ != s_.bindings_version_) {
      const Bundle& b = s_.bundle();
      for (size_t i = 0; i < b.inputs.size(); ++i)
        exec_.bind(p_.input_buffers[i], s_.bound_inputs_[i], row_bytes(b.inputs[i], p_.input_buffers[i], batch));
      for (size_t i = 0; i < b.outputs.size(); ++i)
        exec_.bind(p_.output_buffers[i], s_.bound_outputs_[i], row_bytes(b.outputs[i], p_.output_buffers[i], batch));
      bound_batch_ = batch;
      bound_version_ = s_.bindings_version_;
    }
    exec_.step();
  }

 private:
  static rt::ExecutorOptions options(Session& s, const DevicePlan& p, std::shared_future<void> weights_ready) {
    rt::ExecutorOptions o;
    o.streamed_inputs = p.input_buffers;
    // Two outputs may name one value: its buffer is read back once.
    for (uint32_t b : p.output_buffers)
      if (std::find(o.streamed_outputs.begin(), o.streamed_outputs.end(), b) == o.streamed_outputs.end())
        o.streamed_outputs.push_back(b);
    o.parameter_buffer = [&s, weights_ready](const BufferSpec& b) {
      weights_ready.get();  // rethrows the upload's failure
      return s.weight_buffer(size_t(b.weight));
    };
    o.zero_streamed_inputs = true;
    return o;
  }

  // Bytes of the first `batch` rows of io tensor `spec` held in plan buffer `index`.
  uint64_t row_bytes(const TensorSpec& spec, uint32_t index, int64_t batch) const {
    return spec.elements_at(batch) * dtype_bytes(p_.buffers[index].type);
  }

  Session& s_;
  const DevicePlan& p_;
  rt::PlanExecutor exec_;
  int64_t bound_batch_ = -1;
  uint64_t bound_version_ = 0;
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

uint64_t Session::checked_host_elements(const TensorSpec& spec, const char* what, const void* data, size_t bytes) const {
  const uint64_t n = spec.elements_at(batch_);
  if (bytes != n * dtype_bytes(spec.dtype))
    throw std::invalid_argument(fmt::format("{} '{}' is {} of shape {} at batch {}: {} bytes, not {}", what, spec.name,
                                            dtype_name(spec.dtype), fmt::join(shape(spec), "x"), batch_,
                                            n * dtype_bytes(spec.dtype), bytes));
  if (n && !data) throw std::invalid_argument(fmt::format("{} '{}': no host memory given", what, spec.name));
  return n;
}

size_t Session::input_index(const std::string& name) const { return index_of(bundle_->inputs, name, "input"); }
size_t Session::output_index(const std::string& name) const { return index_of(bundle_->outputs, name, "output"); }

const TensorSpec& Session::input(const std::string& name) const { return bundle_->inputs[input_index(name)]; }
const TensorSpec& Session::output(const std::string& name) const { return bundle_->outputs[output_index(name)]; }

PlanInstance& Session::instance() {
  auto& slot = instances_[plan_index_];
  return slot ? *slot : load_instance();
}

PlanInstance& Session::load_instance() {
  auto& slot = instances_[plan_index_];
  const DevicePlan& plan = *plans_[plan_index_];
  rt::startup::PhaseTimer phase(plan.batch ? fmt::format("plan loaded ({}, batch {})", plan.target, plan.batch)
                                            : fmt::format("plan loaded ({})", plan.target));
  // The weights go up on a second thread while this one loads the kernels: both wait on the driver (copies, pipeline
  // compilation), and a Device may be used from several threads. Only this plan's weights that no earlier plan
  // uploaded; the executor waits for them before it takes the first.
  std::vector<size_t> needed;
  for (const BufferSpec& b : plan.buffers)
    if (b.role == BufferRole::Parameter && !weights_[size_t(b.weight)]) needed.push_back(size_t(b.weight));
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  double upload_ms = 0;
  uint64_t upload_bytes = 0;
  std::shared_future<void> uploaded = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    for (size_t w : needed) upload_bytes += weight_buffer(w)->size();
    upload_ms = rt::startup::ms_since(start);
  }).share();
  // The executor takes the weights only after `uploaded`; should it throw before, wait here so the thread no longer
  // touches this session when the exception leaves.
  struct WaitOnExit {
    std::shared_future<void>& f;
    ~WaitOnExit() { f.wait(); }
  } wait_on_exit{uploaded};
  slot = std::make_unique<PlanInstance>(*this, plan, uploaded);
  uploaded.get();
  const rt::PlanExecutor::LoadTimes& t = slot->executor().load_times();
  phase.part("kernels loaded (pipelines / modules)", t.kernels_ms,
             fmt::format("{} kernels, {} distinct binaries, {} thread{}; {}", t.kernels, t.distinct, t.threads,
                         t.threads == 1 ? "" : "s", device_.kernel_cache_summary()));
  phase.part("weights uploaded (on a second thread)", upload_ms,
             fmt::format("{} weights, {:.1f} MB", needed.size(), double(upload_bytes) / 1e6));
  phase.part("buffers allocated (waits for the weights)", t.buffers_ms, "");
  phase.part("commands recorded", t.record_ms, "");
  return *slot;
}

std::shared_ptr<rt::Buffer> Session::weight_buffer(size_t index) {
  if (!weights_[index]) {
    const std::span<const uint8_t> bytes = bundle_->weights[index].data();
    auto buf = device_.alloc(std::max<uint64_t>(bytes.size(), 4));
    if (!bytes.empty()) device_.upload(*buf, bytes.data(), bytes.size());
    weights_[index] = std::move(buf);
  }
  return weights_[index];
}

void Session::set_input(const std::string& name, const void* data, size_t bytes) {
  const size_t i = input_index(name);
  const TensorSpec& spec = bundle_->inputs[i];
  const uint64_t n = checked_host_elements(spec, "input", data, bytes);
  PlanInstance& inst = instance();
  const BufferSpec& buf = inst.plan().buffers[inst.plan().input_buffers[i]];
  if (buf.bytes() == 0) return;
  // Host memory the next run reads (PlanInstance), written once: the values converted, then the rows beyond the
  // batch zeroed (the plan may be for a larger batch).
  uint8_t* to = inst.executor().input_memory(inst.plan().input_buffers[i]);
  const uint64_t written = n * dtype_bytes(buf.type);
  host_to_device(data, spec.dtype, to, buf.type, n, name);  // checks every element before it writes one
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
    const uint64_t need = spec.elements_at(bundle_->max_batch) * dtype_bytes(current_plan().buffers[buffer].type);
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
  return slot ? slot->executor().last_step_ms() : 0;
}

void Session::get_output(const std::string& name, void* data, size_t bytes) {
  const size_t i = output_index(name);
  const TensorSpec& spec = bundle_->outputs[i];
  const uint64_t n = checked_host_elements(spec, "output", data, bytes);
  PlanInstance& inst = instance();
  const uint32_t index = inst.plan().output_buffers[i];
  const DType type = inst.plan().buffers[index].type;
  std::vector<uint8_t> device_bytes(size_t(n * dtype_bytes(type)));
  if (device_bytes.empty()) return;
  // The last run's copy in host memory, unless it sent the output to the application's buffer (or never ran).
  rt::PlanExecutor& exec = inst.executor();
  if (const uint8_t* copy = exec.output_value(index))
    std::memcpy(device_bytes.data(), copy, device_bytes.size());
  else if (rt::Buffer* own = exec.owned(index))
    device_.download(*own, device_bytes.data(), device_bytes.size());
  else  // an output that is an input written in place, before any run: nothing computed it yet
    rt::poison_host_bytes(device_bytes.data(), device_bytes.size());
  convert_elements(device_bytes.data(), type, data, spec.dtype, n);
}

}  // namespace spire::bundle
