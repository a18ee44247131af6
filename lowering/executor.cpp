// compile(): plan -> device kernels and buffers -> one recorded command stream that every step() replays; where the
// plan has launches that compute only from parameters (parameter_launches.h), a second one without them, which the
// steps after the first replay until a parameter is set again.
#include "backends/compile_kernel.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "lowering/executable.h"
#include "lowering/device_bytes.h"
#include "lowering/plan.h"
#include "lowering/poison.h"
#include "lowering/streamed_values.h"
#include "runtime/launch_hazards.h"

namespace spire::lowering {

namespace {

std::string names_of_launches_using(const Plan& p, int32_t kernel) {
  std::string s;
  int shown = 0;
  for (const auto& l : p.launches)
    if (l.kernel == kernel && shown++ < 3) s += (s.empty() ? "" : ", ") + l.node;
  return s;
}

// A step with every launch, or without the parameters-only ones (whose results from an earlier step still hold).
enum Variant { kEvery = 0, kSteady = 1 };

class CompiledStep final : public Executable {
 public:
  CompiledStep(const graph::Graph& g, rt::Device& dev, const CompileOptions& opt)
      : dev_(dev), profile_(opt.profile), slots_(opt.steps_in_flight) {
    if (slots_ < 1 || slots_ > kMaxStepsInFlight)
      throw std::invalid_argument(fmt::format("CompileOptions::steps_in_flight is {}: it must be 1 to {}", slots_,
                                              kMaxStepsInFlight));
    plan_ = lower_within_budget(g, dev.info(), opt.passes, opt.tuning, opt.parameters_once, opt.memory_budget);
    if (opt.verbose) std::fputs(lowering::plan_text(plan_).c_str(), stdout);
    // Before the kernels compile, so a wrong name is refused at once.
    streamed_ = std::make_unique<StreamedValues>(dev_, plan_, opt.streamed_inputs, opt.streamed_outputs, slots_);
    compile_kernels();
    allocate();
    const bool once =
        std::any_of(plan_.launches.begin(), plan_.launches.end(), [](const Launch& l) { return l.parameters_only; });
    for (int slot = 0; slot < slots_; ++slot) {
      streams_[kEvery].push_back(record(slot, kEvery));
      if (once) streams_[kSteady].push_back(record(slot, kSteady));
    }
  }

  void set(const std::string& name, const graph::Tensor& t) override {
    const NamedValue& nv = leaf(name);
    settable(name, "set");
    if (t.dtype != nv.type.dtype || t.shape != nv.type.shape)
      throw graph::GraphError(fmt::format("set('{}'): the graph declares {}, the tensor is {}", name,
                                          nv.type.to_string(), t.type().to_string()));
    if (int64_t(t.data.size()) != t.numel())
      throw graph::GraphError(fmt::format("set('{}'): the tensor holds {} values for shape {}", name, t.data.size(),
                                          graph::shape_to_string(t.shape)));
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    auto bytes = to_device_bytes(t, b.slot.type, name);
    if (nv.kind == graph::OpKind::Parameter) parameters_set_ = true;
    if (streamed_->is_input(name))
      streamed_->write_input(name, bytes.data(), bytes.size(), next_slot_);
    else if (!bytes.empty())
      dev_.upload(*owned_[size_t(nv.buffer)], bytes.data(), bytes.size());
  }

  void set_raw(const std::string& name, const void* data, size_t bytes) override {
    const NamedValue& nv = leaf(name);
    settable(name, "set_raw");
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    if (bytes != b.bytes())
      throw graph::GraphError(fmt::format("set_raw('{}'): {} holds {} bytes ({} {} values), got {} bytes", name,
                                          nv.type.to_string(), b.bytes(), b.slot.elements, kir::type_name(b.slot.type),
                                          bytes));
    if (nv.kind == graph::OpKind::Parameter) parameters_set_ = true;
    if (streamed_->is_input(name))
      streamed_->write_input(name, data, bytes, next_slot_);
    else if (bytes)
      dev_.upload(*owned_[size_t(nv.buffer)], data, bytes);
  }

  void start_step() override {
    if (int(in_flight_.size()) == slots_) {
      const std::string busy = slots_ == 1 ? std::string("a step in flight")
                                           : fmt::format("{} steps in flight (CompileOptions::steps_in_flight)", slots_);
      throw rt::Error(fmt::format("start_step() with {} on {}: call finish_step() first", busy, dev_.info().id));
    }
    const int slot = next_slot_;
    streamed_->before_step(slot);
    // The parameters-only launches' results hold until a parameter is set (steps in flight queue behind this one).
    const Variant v = parameters_set_ || streams_[kSteady].empty() ? kEvery : kSteady;
    in_flight_.push_back({slot, v, dev_.submit(*streams_[v][size_t(slot)])});
    parameters_set_ = false;
    next_slot_ = (slot + 1) % slots_;
  }

  void finish_step() override {
    if (in_flight_.empty()) throw rt::Error("finish_step(): no step is in flight (call start_step() first)");
    InFlight oldest = std::move(in_flight_.front());
    in_flight_.pop_front();  // in flight no more, even if the wait throws
    oldest.done->wait();
    finished_slot_ = oldest.slot;  // its streamed outputs are what get() reads now
    finished_variant_ = oldest.variant;
    const Recorded& r = recorded_[oldest.variant];
    last_ms_ = streams_[oldest.variant][size_t(oldest.slot)]->elapsed_ms(r.t_begin, r.t_end);
  }

  graph::Tensor get(const std::string& name) override {
    const NamedValue& nv = readable(name);
    gettable(name, "get");
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    std::vector<uint8_t> bytes(b.bytes());
    read(name, nv, bytes.data(), bytes.size(), "get");
    return from_device_bytes(bytes, b.slot.type, nv.type);
  }

  void get_raw(const std::string& name, void* out, size_t bytes) override {
    const NamedValue& nv = readable(name);
    gettable(name, "get_raw");
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    if (bytes != b.bytes())
      throw graph::GraphError(fmt::format("get_raw('{}'): {} holds {} bytes ({} {} values), asked for {} bytes", name,
                                          nv.type.to_string(), b.bytes(), b.slot.elements,
                                          kir::type_name(b.slot.type), bytes));
    read(name, nv, out, bytes, "get_raw");
  }

  void set_device(const std::string& name, uint64_t address, size_t bytes) override {
    // Allowed with steps in flight: the copy is enqueued on the device's in-order queue behind them.
    const NamedValue& nv = leaf(name);
    if (streamed_->is_input(name))
      throw graph::GraphError(fmt::format("set_device('{}'): a streamed input is fed from its host copy at the start of "
                                          "every step; compile without streaming it to set it from a device address",
                                          name));
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    if (bytes != b.bytes())
      throw graph::GraphError(fmt::format("set_device('{}'): {} holds {} bytes ({} {} values), got {} bytes", name,
                                          nv.type.to_string(), b.bytes(), b.slot.elements, kir::type_name(b.slot.type),
                                          bytes));
    if (nv.kind == graph::OpKind::Parameter) parameters_set_ = true;
    if (bytes) dev_.copy_from_address(owned(name, nv, "set_device"), address, bytes);
  }

  void get_device(const std::string& name, uint64_t address, size_t bytes) override {
    // Allowed with steps in flight: the copy reads what the last submitted step wrote, queued behind it.
    const NamedValue& nv = readable(name);
    if ((plan_.outputs.count(name) && streamed_->is_output(name)) ||
        (!plan_.outputs.count(name) && streamed_->is_input(name)))
      throw graph::GraphError(fmt::format("get_device('{}'): a streamed value is read from its host copy; compile "
                                          "without streaming it to read it into a device address",
                                          name));
    const PlannedBuffer& b = plan_.buffers[size_t(nv.buffer)];
    if (bytes != b.bytes())
      throw graph::GraphError(fmt::format("get_device('{}'): {} holds {} bytes ({} {} values), asked for {} bytes", name,
                                          nv.type.to_string(), b.bytes(), b.slot.elements, kir::type_name(b.slot.type),
                                          bytes));
    if (bytes) dev_.copy_to_address(owned(name, nv, "get_device"), address, bytes);
  }

  std::string plan_text() const override { return lowering::plan_text(plan_); }
  MemoryReport memory() const override { return memory_report(plan_); }
  double last_step_ms() const override { return last_ms_; }
  size_t barriers() const override { return recorded_[streams_[kSteady].empty() ? kEvery : kSteady].barriers; }

  std::vector<LaunchTime> last_launch_times() const override {
    std::vector<LaunchTime> out;
    if (!profile_) return out;
    if (finished_slot_ < 0) return out;
    const rt::CommandStream& s = *streams_[finished_variant_][size_t(finished_slot_)];
    const Recorded& r = recorded_[finished_variant_];
    for (size_t i = 0; i < r.launched.size(); ++i) {
      const Launch& l = plan_.launches[r.launched[i]];
      out.push_back({l.node, plan_.kernels[size_t(l.kernel)].name,
                     s.elapsed_ms(i == 0 ? r.launches_begin : r.launch_ends[i - 1], r.launch_ends[i])});
    }
    return out;
  }

 private:
  static constexpr int kMaxStepsInFlight = 4;

  // A streamed input may be set while a slot is free for the next step (steps_in_flight > 1); anything else only
  // with no step in flight.
  void settable(const std::string& name, const char* what) const {
    if (in_flight_.empty()) return;
    if (streamed_->is_input(name) && int(in_flight_.size()) < slots_) return;
    refuse_in_flight(what);
  }

  // A streamed output may be read while no step in flight writes the copy the last finished step wrote
  // (steps_in_flight > 1); anything else only with no step in flight.
  void gettable(const std::string& name, const char* what) const {
    if (in_flight_.empty()) return;
    if (plan_.outputs.count(name) && streamed_->is_output(name)) {
      bool overwritten = finished_slot_ < 0;  // no step finished: the rt::Error of the step in flight, as with one
      for (const InFlight& f : in_flight_) overwritten |= f.slot == finished_slot_;
      if (!overwritten) return;
    }
    refuse_in_flight(what);
  }

  // The persistent buffer of a leaf or output (every one has its own; an arena-placed one would be a plan bug).
  rt::Buffer& owned(const std::string& name, const NamedValue& nv, const char* what) const {
    const auto& b = owned_[size_t(nv.buffer)];
    if (!b) throw graph::GraphError(fmt::format("{}('{}'): the value has no buffer of its own", what, name));
    return *b;
  }

  [[noreturn]] void refuse_in_flight(const char* what) const {
    throw rt::Error(fmt::format("{}() while {} in flight on {}: call finish_step() first", what,
                                in_flight_.size() == 1 ? std::string("a step is")
                                                       : fmt::format("{} steps are", in_flight_.size()),
                                dev_.info().id));
  }

  std::string known_names(bool outputs_too) const {
    std::string s;
    for (const auto& [n, v] : plan_.leaves) s += (s.empty() ? "" : ", ") + n;
    if (outputs_too)
      for (const auto& [n, v] : plan_.outputs) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "(none)" : s;
  }

  const NamedValue& leaf(const std::string& name) const {
    auto it = plan_.leaves.find(name);
    if (it != plan_.leaves.end()) return it->second;
    if (plan_.outputs.count(name))
      throw graph::GraphError(fmt::format("set('{}'): that is an output of the graph, not an input, parameter or state",
                                          name));
    throw graph::GraphError(fmt::format("set('{}'): the graph has no input, parameter or state of that name (it has: {})",
                                        name, known_names(false)));
  }

  // The bytes of a value readable() found: a streamed output's or input's from its host copy, anything else by a
  // download.
  void read(const std::string& name, const NamedValue& nv, void* out, size_t bytes, const char* what) const {
    if (plan_.outputs.count(name)) {
      if (streamed_->is_output(name)) return streamed_->read_output(name, out, bytes, what, finished_slot_);
    } else if (streamed_->is_input(name)) {
      return streamed_->read_input(name, out, bytes);
    }
    if (bytes) dev_.download(*owned_[size_t(nv.buffer)], out, bytes);
  }

  const NamedValue& readable(const std::string& name) const {
    auto it = plan_.outputs.find(name);
    if (it != plan_.outputs.end()) return it->second;
    auto jt = plan_.leaves.find(name);
    if (jt != plan_.leaves.end()) return jt->second;
    throw graph::GraphError(fmt::format("get('{}'): no output, input, parameter or state of that name (the graph has: "
                                        "{}); intermediate values are not kept, make them outputs",
                                        name, known_names(true)));
  }

  void compile_kernels() {
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      try {
        kernels_.push_back(spire::backends::compile_and_load(dev_, plan_.kernels[k]));
      } catch (const rt::MissingFeature& e) {
        throw rt::MissingFeature(fmt::format("{} (needed by {})", e.what(), names_of_launches_using(plan_, int32_t(k))));
      } catch (const std::exception& e) {
        throw rt::Error(fmt::format("compiling kernel '{}' (for {}) on {}: {}", plan_.kernels[k].name,
                                    names_of_launches_using(plan_, int32_t(k)), dev_.info().id, e.what()));
      }
    }
  }

  void allocate() {
    const uint64_t max_binding = dev_.info().max_buffer_bytes;
    owned_.resize(plan_.buffers.size());
    views_.resize(plan_.buffers.size());
    if (plan_.arena_bytes) {
      arena_ = dev_.alloc(plan_.arena_bytes);
      dev_.fill(*arena_, kPoison);
    }
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const PlannedBuffer& b = plan_.buffers[i];
      // Whole words: fills write 32-bit patterns, and an odd count of 16-bit elements ends mid-word.
      uint64_t bytes = (std::max<uint64_t>(b.bytes(), 4) + 3) & ~uint64_t(3);
      if (max_binding && b.bytes() > max_binding)
        throw rt::Error(fmt::format("buffer '{}' needs {} bytes, more than the {} bytes device {} can bind at once",
                                    b.slot.name, b.bytes(), max_binding, dev_.info().id));
      if (!b.persistent()) {
        if (b.first_use >= 0) views_[i] = rt::BufferView(*arena_, uint64_t(b.arena_offset), bytes);
        continue;
      }
      owned_[i] = dev_.alloc(bytes);
      views_[i] = rt::BufferView(owned_[i], 0, bytes);
      dev_.fill(*owned_[i], kPoison);
      if (b.fill) {
        graph::Tensor t(graph::DType::F64, {b.slot.elements}, *b.fill);
        auto data = to_device_bytes(t, b.slot.type, b.slot.name);
        if (!data.empty()) dev_.upload(*owned_[i], data.data(), data.size());
      }
    }
  }

  // Slot `slot`'s step: the same commands in every slot but the streamed values' buffers, so the timestamps'
  // indices are the same in every slot's stream of a variant (recorded_[variant]).
  std::unique_ptr<rt::CommandStream> record(int slot, Variant variant) {
    Recorded& r = recorded_[variant];
    std::unique_ptr<rt::CommandStream> stream = dev_.record();
    const std::vector<rt::BufferView> bound = streamed_->bindings(views_, slot);  // inputs written in place: the slot's
    // With several steps in flight, the one before this may still run when it starts: one queue orders the
    // submissions but lets their commands overlap, and this step's feeds and launches overwrite what that one reads.
    if (slots_ > 1) stream->barrier();
    r.t_begin = stream->timestamp();
    streamed_->record_feeds(*stream, bound, slot);
    // The first launch's time starts after the streamed inputs' copies (profiling only: a timestamp costs time).
    r.launches_begin = profile_ ? stream->timestamp() : r.t_begin;
    r.launch_ends.clear();
    r.launched.clear();
    std::vector<rt::BufferView> views;
    // A barrier only where a launch depends on one since the last (profiling: after every launch, so each launch's
    // time is its own).
    rt::LaunchHazards hazards;
    size_t& barriers = r.barriers;
    barriers = 0;
    for (size_t i = 0; i < plan_.launches.size(); ++i) {
      const Launch& l = plan_.launches[i];
      if (variant == kSteady && l.parameters_only) continue;
      r.launched.push_back(i);
      views.clear();
      for (int32_t b : l.buffers) views.push_back(bound[size_t(b)]);
      if (hazards.dispatch(*stream, *kernels_[size_t(l.kernel)], views, l.scalars, rt::Grid::workgroups(l.groups)))
        ++barriers;
      if (profile_) {
        stream->barrier();
        ++barriers;
        hazards.clear();
        r.launch_ends.push_back(stream->timestamp());
      }
    }
    // The state copies and the streamed outputs' readbacks read the launches' results.
    if (!r.launched.empty() && !profile_) {
      stream->barrier();
      ++barriers;
    }
    for (const StateCopy& c : plan_.copies) {
      rt::BufferView from = bound[size_t(c.from)], to = bound[size_t(c.to)];
      from.size = to.size = plan_.buffers[size_t(c.to)].bytes();
      if (from.size) stream->copy(from, to);
    }
    if (!plan_.copies.empty()) stream->barrier();
    streamed_->record_readbacks(*stream, bound, slot);
    r.t_end = stream->timestamp();
    stream->finish();
    return stream;
  }

  rt::Device& dev_;
  Plan plan_;
  std::vector<std::shared_ptr<rt::Kernel>> kernels_;
  std::shared_ptr<rt::Buffer> arena_;
  std::vector<std::shared_ptr<rt::Buffer>> owned_;  // persistent buffers (null for arena-placed ones)
  std::vector<rt::BufferView> views_;               // every buffer's binding
  std::unique_ptr<StreamedValues> streamed_;  // before streams_: the recorded copies use its buffers, so it goes last
  // Per variant, one stream per slot (CompileOptions::steps_in_flight); kSteady's only where the plan has
  // parameters-only launches.
  std::vector<std::unique_ptr<rt::CommandStream>> streams_[2];
  // What a variant's streams record, the same in each of its slots.
  struct Recorded {
    uint32_t t_begin = 0, t_end = 0, launches_begin = 0;
    std::vector<size_t> launched;        // plan launch indices, in order
    std::vector<uint32_t> launch_ends;   // profile_: the timestamp after each launched one
    size_t barriers = 0;                 // between and after the launches
  };
  Recorded recorded_[2];
  bool parameters_set_ = true;  // since the last step started: the next one runs the parameters-only launches too
  bool profile_ = false;
  int slots_ = 1;
  struct InFlight {
    int slot = 0;
    Variant variant = kEvery;
    std::unique_ptr<rt::Fence> done;
  };
  std::deque<InFlight> in_flight_;  // submitted by start_step(), oldest first, until finish_step() waits for them
  int next_slot_ = 0;               // the slot of the next step to start
  int finished_slot_ = -1;          // the slot of the last finished step
  Variant finished_variant_ = kEvery;
  double last_ms_ = 0;
};

}  // namespace

std::unique_ptr<Executable> compile(const graph::Graph& g, rt::Device& device, const CompileOptions& opt) {
  return std::make_unique<CompiledStep>(g, device, opt);
}

}  // namespace spire::lowering
