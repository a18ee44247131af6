#include "runtime/plan_executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "runtime/launch_hazards.h"
#include "base/parallel_for.h"
#include "runtime/startup_profile.h"

namespace spire::rt {

std::string_view buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Transient: return "transient";
    case BufferRole::Input: return "input";
    case BufferRole::Parameter: return "parameter";
    case BufferRole::State: return "state";
    case BufferRole::Constant: return "constant";
    case BufferRole::Output: return "output";
  }
  return "?";
}

namespace {

// Whole 32-bit words: fills write word patterns, and an odd count of 16-bit elements ends mid-word.
uint64_t whole_words(uint64_t bytes) { return (std::max<uint64_t>(bytes, 4) + 3) & ~uint64_t(3); }

// `elements` copies of `v` in the device type `t`.
std::vector<uint8_t> filled(DType t, double v, uint64_t elements) {
  const uint32_t n = dtype_bytes(t);
  std::vector<uint8_t> out(size_t(elements * n));
  for (uint64_t e = 0; e < elements; ++e) write_element(t, v, out.data() + e * n);
  return out;
}

// The launch's packed scalar bytes as arguments, pushed in the signature's order so a stream packs them identically.
ScalarArgs unpack_scalars(const KernelInterface& sig, const std::vector<uint8_t>& packed, const std::string& node) {
  const std::vector<uint32_t> offsets = sig.scalar_offsets();
  ScalarArgs a;
  for (size_t i = 0; i < sig.scalars.size(); ++i) {
    const uint32_t n = dtype_bytes(sig.scalars[i].type);
    if (offsets[i] + n > packed.size())
      throw Error(fmt::format("launch of '{}' ({}): {} bytes of scalars, the kernel's scalar {} ends at byte {}", sig.name,
                              node, packed.size(), i, offsets[i] + n));
    const uint8_t* p = packed.data() + offsets[i];
    switch (sig.scalars[i].type) {
      case DType::F32: { float v; std::memcpy(&v, p, 4); a.f32(v); break; }
      case DType::F64: { double v; std::memcpy(&v, p, 8); a.f64(v); break; }
      case DType::I64: { int64_t v; std::memcpy(&v, p, 8); a.i64(v); break; }
      case DType::I32: { int32_t v; std::memcpy(&v, p, 4); a.i32(v); break; }
      default: { uint32_t v; std::memcpy(&v, p, 4); a.u32(v); break; }
    }
  }
  return a;
}

}  // namespace

// A streamed value's host side: one buffer per step in flight.
struct PlanExecutor::Streamed {
  uint32_t buffer = 0;                        // the plan buffer it feeds or reads
  uint64_t bytes = 0;
  std::vector<std::shared_ptr<Buffer>> host;  // per slot: host-visible, or (an input in place) mapped device-local
  bool in_place = false;                      // an input whose slots' buffers the kernels bind
  // Several steps in flight, an input: the value last written, copied into a slot's memory when its step starts.
  std::vector<uint8_t> staged;
  std::vector<bool> stale;                    // per slot: its memory is older than `staged`
  BufferView app;                             // an application's buffer bound in its place (bind())
  uint64_t app_bytes = 0;
  uint8_t* data(int slot) const { return static_cast<uint8_t*>(host[size_t(slot)]->mapped()); }
};

// What a variant's streams record, the same in each slot's.
struct PlanExecutor::Recorded {
  uint32_t t_begin = 0, t_end = 0, launches_begin = 0;
  std::vector<size_t> launched;       // plan launch indices, in order
  std::vector<uint32_t> launch_ends;  // profile: the timestamp after each launched one
  size_t barriers = 0;                // between and after the launches
};

PlanExecutor::PlanExecutor(Device& dev, const DevicePlan& plan, ExecutorOptions options)
    : dev_(dev), plan_(plan), options_(std::move(options)) {
  const int slots = options_.steps_in_flight;
  if (slots < 1 || slots > kMaxStepsInFlight)
    throw std::invalid_argument(
        fmt::format("{} steps in flight asked for: it must be 1 to {}", slots, kMaxStepsInFlight));
  recorded_[kEvery] = std::make_unique<Recorded>();
  recorded_[kSteady] = std::make_unique<Recorded>();
  load_kernels();
  auto start = std::chrono::steady_clock::now();
  allocate();
  load_times_.buffers_ms = startup::ms_since(start);
  start = std::chrono::steady_clock::now();
  record_all();
  load_times_.record_ms = startup::ms_since(start);
}

PlanExecutor::~PlanExecutor() = default;

namespace {

// Threads that load a plan's kernels: SPIRE_LOAD_THREADS when set (1: one after another, as before), else one per
// core up to 8 (drivers compile pipelines and JIT modules on the calling thread; more threads than that gained
// nothing measurable and cost memory).
int kernel_load_threads(size_t distinct) {
  int threads = int(std::min<unsigned>(std::max(std::thread::hardware_concurrency(), 1u), 8u));
  if (const char* env = std::getenv("SPIRE_LOAD_THREADS"); env && *env) threads = std::max(std::atoi(env), 1);
  return int(std::min<size_t>(size_t(threads), std::max<size_t>(distinct, 1)));
}

// The bytes that make two kernels share a pipeline or module on their device (runtime/vulkan and runtime/cuda keep
// one per SPIR-V module or PTX text).
std::string_view binary_bytes(const KernelBinary& k) {
  if (k.format == BinaryFormat::Ptx) return k.ptx;
  return {reinterpret_cast<const char*>(k.spirv.data()), k.spirv.size() * sizeof(uint32_t)};
}

}  // namespace

void PlanExecutor::load_kernels() {
  const auto start = std::chrono::steady_clock::now();
  auto load = [&](size_t k) {
    std::string users;
    int shown = 0;
    for (const LaunchSpec& l : plan_.launches)
      if (l.kernel == k && shown++ < 3) users += (users.empty() ? "" : ", ") + l.node;
    try {
      kernels_[k] = dev_.load(plan_.kernels[k]);
    } catch (const MissingFeature& e) {
      throw MissingFeature(fmt::format("{} (needed by {})", e.what(), users));
    } catch (const std::exception& e) {
      throw Error(fmt::format("loading kernel '{}' (for {}) of plan '{}' on {}: {}", plan_.kernels[k].interface.name,
                              users, plan_.target, dev_.info().id, e.what()));
    }
  };
  // The first kernel of each binary is loaded on several threads (each creates a pipeline or module); the repeats
  // then, in order, find theirs in the device's table.
  std::vector<size_t> firsts, repeats;
  std::unordered_set<std::string_view> seen;
  for (size_t k = 0; k < plan_.kernels.size(); ++k)
    (seen.insert(binary_bytes(plan_.kernels[k])).second ? firsts : repeats).push_back(k);
  kernels_.resize(plan_.kernels.size());
  const int threads = kernel_load_threads(firsts.size());
  parallel_each(firsts.size(), threads, [&](size_t i) { load(firsts[i]); });
  for (size_t k : repeats) load(k);
  for (const LaunchSpec& l : plan_.launches) {
    if (l.kernel >= plan_.kernels.size())
      throw Error(fmt::format("launch of '{}' names kernel {} of {}", l.node, l.kernel, plan_.kernels.size()));
    scalars_.push_back(unpack_scalars(plan_.kernels[l.kernel].interface, l.scalars, l.node));
  }
  load_times_.kernels_ms = startup::ms_since(start);
  load_times_.kernels = plan_.kernels.size();
  load_times_.distinct = firsts.size();
  load_times_.threads = threads;
}

void PlanExecutor::allocate() {
  const int slots = options_.steps_in_flight;
  const uint64_t max_binding = dev_.info().max_buffer_bytes;
  std::set<uint32_t> seen;
  auto check = [&](uint32_t index, bool input) {
    if (index >= plan_.buffers.size())
      throw Error(fmt::format("streamed {} names buffer {} of {}", input ? "input" : "output", index,
                              plan_.buffers.size()));
    const BufferSpec& b = plan_.buffers[index];
    if (input ? b.role != BufferRole::Input : !b.persistent())
      throw Error(fmt::format("buffer '{}' is a {} buffer: it cannot be a streamed {}", b.name,
                              buffer_role_name(b.role), input ? "input" : "output"));
    if (!seen.insert(index * 2 + (input ? 0 : 1)).second)
      throw Error(fmt::format("buffer '{}' is streamed twice", b.name));
  };
  for (uint32_t i : options_.streamed_inputs) check(i, true);
  for (uint32_t i : options_.streamed_outputs) check(i, false);

  owned_.resize(plan_.buffers.size());
  views_.resize(plan_.buffers.size());
  // The arena, in pieces where the device cannot allocate it at once (arena_pieces.h).
  if (plan_.arena_bytes) {
    std::vector<ArenaRange> ranges;
    for (const BufferSpec& b : plan_.buffers)
      if (!b.persistent() && b.arena_offset >= 0) ranges.push_back({uint64_t(b.arena_offset), whole_words(b.bytes())});
    try {
      arena_pieces_ = arena_pieces(ranges, plan_.arena_bytes, dev_.info().max_allocation_bytes);
    } catch (const std::length_error& e) {
      throw OutOfMemory(fmt::format("{}: {}", dev_.info().id, e.what()));
    }
    for (const ArenaPiece& p : arena_pieces_) {
      arena_.push_back(dev_.alloc(p.end - p.begin));
      dev_.fill(*arena_.back(), kPoison);
    }
  }
  // Streamed inputs first: one written in place needs no buffer of its own.
  const uint32_t input_pattern = options_.zero_streamed_inputs ? 0u : kPoison;
  for (uint32_t index : options_.streamed_inputs) {
    auto s = std::make_unique<Streamed>();
    s->buffer = index;
    s->bytes = plan_.buffers[index].bytes();
    s->in_place = s->bytes > 0;
    for (int slot = 0; slot < slots && s->in_place; ++slot) {
      // The kernels bind it as they would the plan's buffer: whole words.
      s->host.push_back(dev_.alloc(whole_words(s->bytes), Memory::DeviceMapped));
      s->in_place = s->host.back()->mapped() != nullptr;
    }
    if (!s->in_place) {
      s->host.clear();
      for (int slot = 0; slot < slots; ++slot) {
        s->host.push_back(dev_.alloc(whole_words(s->bytes), Memory::HostVisible));
        if (s->bytes && !s->host.back()->mapped())
          throw Error(fmt::format("streaming '{}': {} gave a host-visible buffer the host cannot address",
                                  plan_.buffers[index].name, dev_.info().id));
      }
    }
    for (int slot = 0; slot < slots; ++slot)
      if (s->bytes) fill_host_bytes(s->data(slot), s->bytes, input_pattern);
    if (slots > 1) {
      s->staged.assign(size_t(s->bytes), 0);
      if (s->bytes) fill_host_bytes(s->staged.data(), s->bytes, input_pattern);
      s->stale.assign(size_t(slots), false);
    }
    inputs_.push_back(std::move(s));
  }
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferSpec& b = plan_.buffers[i];
    const uint64_t bytes = whole_words(b.bytes());
    if (max_binding && b.bytes() > max_binding)
      throw Error(fmt::format("buffer '{}' needs {} bytes, more than the {} bytes device {} can bind at once", b.name,
                              b.bytes(), max_binding, dev_.info().id));
    if (!b.persistent()) {
      if (b.arena_offset >= 0) {
        const uint64_t at = uint64_t(b.arena_offset);
        size_t p = 0;
        while (p + 1 < arena_pieces_.size() && arena_pieces_[p].end <= at) ++p;  // (a buffer lies whole in one)
        views_[i] = BufferView(*arena_[p], at - arena_pieces_[p].begin, bytes);
      }
      continue;
    }
    if (const Streamed* s = streamed(uint32_t(i), true); s && s->in_place) continue;  // bound per slot
    if (b.role == BufferRole::Parameter && options_.parameter_buffer) owned_[i] = options_.parameter_buffer(b);
    if (!owned_[i]) {
      owned_[i] = dev_.alloc(bytes);
      dev_.fill(*owned_[i], kPoison);
      if (b.fill) {
        const std::vector<uint8_t> data = filled(b.type, *b.fill, b.elements);
        if (!data.empty()) dev_.upload(*owned_[i], data.data(), data.size());
      }
    }
    views_[i] = BufferView(owned_[i], 0, std::min(bytes, owned_[i]->size()));
  }
  for (uint32_t index : options_.streamed_outputs) {
    auto s = std::make_unique<Streamed>();
    s->buffer = index;
    s->bytes = plan_.buffers[index].bytes();
    for (int slot = 0; slot < slots; ++slot) {
      s->host.push_back(dev_.alloc(whole_words(s->bytes), Memory::HostVisible));
      if (s->bytes && !s->host.back()->mapped())
        throw Error(fmt::format("streaming '{}': {} gave a host-visible buffer the host cannot address",
                                plan_.buffers[index].name, dev_.info().id));
      if (s->bytes) poison_host_bytes(s->data(slot), s->bytes);
    }
    outputs_.push_back(std::move(s));
  }
}

PlanExecutor::Streamed* PlanExecutor::streamed(uint32_t buffer, bool input) {
  for (auto& s : input ? inputs_ : outputs_)
    if (s->buffer == buffer) return s.get();
  return nullptr;
}

const PlanExecutor::Streamed* PlanExecutor::streamed(uint32_t buffer, bool input) const {
  return const_cast<PlanExecutor*>(this)->streamed(buffer, input);
}

bool PlanExecutor::is_streamed_input(uint32_t buffer) const { return streamed(buffer, true) != nullptr; }
bool PlanExecutor::is_streamed_output(uint32_t buffer) const { return streamed(buffer, false) != nullptr; }

bool PlanExecutor::written_in_place(uint32_t buffer) const {
  const Streamed* s = streamed(buffer, true);
  return s && s->in_place;
}

uint8_t* PlanExecutor::input_memory(uint32_t buffer) {
  Streamed* s = streamed(buffer, true);
  if (!s) throw Error(fmt::format("buffer '{}' is not a streamed input", plan_.buffers.at(buffer).name));
  if (options_.steps_in_flight == 1) return s->data(0);
  std::fill(s->stale.begin(), s->stale.end(), true);
  return s->staged.data();
}

const uint8_t* PlanExecutor::input_value(uint32_t buffer) const {
  const Streamed* s = streamed(buffer, true);
  if (!s) throw Error(fmt::format("buffer '{}' is not a streamed input", plan_.buffers.at(buffer).name));
  return options_.steps_in_flight == 1 ? s->data(0) : s->staged.data();
}

const uint8_t* PlanExecutor::output_value(uint32_t buffer) const {
  const Streamed* s = streamed(buffer, false);
  if (!s) throw Error(fmt::format("buffer '{}' is not a streamed output", plan_.buffers.at(buffer).name));
  if (s->app.buffer || finished_slot_ < 0) return nullptr;
  return s->data(finished_slot_);
}

bool PlanExecutor::output_readable() const {
  if (finished_slot_ < 0) return false;
  for (const InFlight& f : in_flight_)
    if (f.slot == finished_slot_) return false;
  return true;
}

void PlanExecutor::bind(uint32_t buffer, BufferView app, uint64_t bytes) {
  Streamed* s = streamed(buffer, true);
  if (!s) s = streamed(buffer, false);
  if (!s) throw Error(fmt::format("buffer '{}' is neither a streamed input nor output", plan_.buffers.at(buffer).name));
  if (!in_flight_.empty())
    throw Error(fmt::format("binding '{}' while a step is in flight on {}", plan_.buffers[buffer].name, dev_.info().id));
  if (app.buffer && bytes > s->bytes)
    throw Error(fmt::format("binding '{}': {} bytes asked for, the value holds {}", plan_.buffers[buffer].name, bytes,
                            s->bytes));
  s->app = app;
  s->app_bytes = app.buffer ? bytes : 0;
  recorded_now_ = false;
}

std::vector<BufferView> PlanExecutor::bindings(int slot) const {
  std::vector<BufferView> b = views_;
  for (const auto& s : inputs_)
    if (s->in_place) b[s->buffer] = BufferView(s->host[size_t(slot)], 0, whole_words(s->bytes));
  return b;
}

void PlanExecutor::record_all() {
  const bool once = std::any_of(plan_.launches.begin(), plan_.launches.end(),
                                [](const LaunchSpec& l) { return l.parameters_only; });
  for (auto& v : streams_) v.clear();
  for (int slot = 0; slot < options_.steps_in_flight; ++slot) {
    streams_[kEvery].push_back(record(slot, kEvery));
    if (once) streams_[kSteady].push_back(record(slot, kSteady));
  }
  recorded_now_ = true;
}

// Slot `slot`'s step: the same commands in every slot but the streamed values' buffers, so the timestamps' indices are
// the same in every slot's stream of a variant.
std::unique_ptr<CommandStream> PlanExecutor::record(int slot, Variant variant) {
  Recorded& r = *recorded_[variant];
  std::unique_ptr<CommandStream> stream = dev_.record();
  const std::vector<BufferView> bound = bindings(slot);
  // With several steps in flight, the one before this may still run when it starts: one queue orders the submissions
  // but lets their commands overlap, and this step's feeds and launches overwrite what that one reads.
  if (options_.steps_in_flight > 1) stream->barrier();
  r.t_begin = stream->timestamp();
  bool copied = false;
  for (const auto& s : inputs_) {
    const BufferView& d = bound[s->buffer];
    if (s->app.buffer) {
      if (s->app_bytes)
        stream->copy(BufferView(*s->app.buffer, s->app.offset, s->app_bytes), BufferView(*d.buffer, d.offset, s->app_bytes));
    } else if (!s->in_place && s->bytes) {
      stream->copy(BufferView(s->host[size_t(slot)], 0, s->bytes), BufferView(*d.buffer, d.offset, s->bytes));
    } else {
      continue;
    }
    copied = true;
  }
  if (copied) stream->barrier();
  // The first launch's time starts after the streamed inputs' copies (profiling only: a timestamp costs time).
  r.launches_begin = options_.profile ? stream->timestamp() : r.t_begin;
  r.launch_ends.clear();
  r.launched.clear();
  r.barriers = 0;
  std::vector<BufferView> views;
  // A barrier only where a launch depends on one since the last (profiling: after every launch, so each launch's time
  // is its own).
  LaunchHazards hazards;
  for (size_t i = 0; i < plan_.launches.size(); ++i) {
    const LaunchSpec& l = plan_.launches[i];
    if (variant == kSteady && l.parameters_only) continue;
    r.launched.push_back(i);
    views.clear();
    for (uint32_t b : l.buffers) views.push_back(bound[b]);
    if (hazards.dispatch(*stream, *kernels_[l.kernel], views, scalars_[i], Grid::workgroups(l.groups))) ++r.barriers;
    if (options_.profile) {
      stream->barrier();
      ++r.barriers;
      hazards.clear();
      r.launch_ends.push_back(stream->timestamp());
    }
  }
  // The state copies and the streamed outputs' copies read the launches' results.
  if (!r.launched.empty() && !options_.profile) {
    stream->barrier();
    ++r.barriers;
  }
  for (const CopySpec& c : plan_.copies) {
    BufferView from = bound[c.from], to = bound[c.to];
    from.size = to.size = plan_.buffers[c.to].bytes();
    if (from.size) stream->copy(from, to);
  }
  if (!plan_.copies.empty()) stream->barrier();
  // Last, after the state updates: an output that is an updated parameter reads as a download after the step would.
  copied = false;
  for (const auto& s : outputs_) {
    const BufferView& d = bound[s->buffer];
    const uint64_t bytes = s->app.buffer ? s->app_bytes : s->bytes;
    if (!bytes) continue;
    const BufferView to = s->app.buffer ? BufferView(*s->app.buffer, s->app.offset, bytes)
                                        : BufferView(s->host[size_t(slot)], 0, bytes);
    stream->copy(BufferView(*d.buffer, d.offset, bytes), to);
    copied = true;
  }
  if (copied) stream->barrier();
  r.t_end = stream->timestamp();
  stream->finish();
  return stream;
}

void PlanExecutor::start_step() {
  const int slots = options_.steps_in_flight;
  if (int(in_flight_.size()) == slots) {
    const std::string busy = slots == 1 ? std::string("a step in flight") : fmt::format("{} steps in flight", slots);
    throw Error(fmt::format("start_step() with {} on {}: call finish_step() first", busy, dev_.info().id));
  }
  if (!recorded_now_) record_all();
  const int slot = next_slot_;
  // The slot's streamed inputs take the value last written; its outputs' copies are poisoned, so one the stream failed
  // to write shows as NaN rather than as an older step's value.
  for (auto& s : inputs_)
    if (slots > 1 && s->stale[size_t(slot)]) {
      if (s->bytes) std::memcpy(s->data(slot), s->staged.data(), size_t(s->bytes));
      s->stale[size_t(slot)] = false;
    }
  for (auto& s : outputs_)
    if (s->bytes && !s->app.buffer) poison_host_bytes(s->data(slot), s->bytes);
  // The parameters-only launches' results hold until a parameter changes (steps in flight queue behind this one).
  const Variant v = parameters_changed_ || streams_[kSteady].empty() ? kEvery : kSteady;
  if (!stepped_ && first_step_start_ == std::chrono::steady_clock::time_point{})
    first_step_start_ = std::chrono::steady_clock::now();
  in_flight_.push_back({slot, v, dev_.submit(*streams_[v][size_t(slot)])});
  parameters_changed_ = false;
  next_slot_ = (slot + 1) % slots;
}

void PlanExecutor::finish_step() {
  if (in_flight_.empty()) throw Error("finish_step(): no step is in flight (call start_step() first)");
  InFlight oldest = std::move(in_flight_.front());
  in_flight_.pop_front();  // in flight no more, even if the wait throws
  oldest.done->wait();
  finished_slot_ = oldest.slot;
  finished_variant_ = oldest.variant;
  const Recorded& r = *recorded_[oldest.variant];
  last_ms_ = streams_[oldest.variant][size_t(oldest.slot)]->elapsed_ms(r.t_begin, r.t_end);
  if (!stepped_) {
    // The process's first result (when no other plan's came first) ends its start-up profile.
    stepped_ = true;
    startup::record({plan_.batch ? fmt::format("first run ({}, batch {})", plan_.target, plan_.batch)
                                 : fmt::format("first run ({})", plan_.target),
                     startup::ms_since(first_step_start_), fmt::format("{:.3f} ms of device time", last_ms_), {}});
    startup::close();
  }
}

size_t PlanExecutor::barriers() const {
  const bool steady = std::any_of(plan_.launches.begin(), plan_.launches.end(),
                                  [](const LaunchSpec& l) { return l.parameters_only; });
  return recorded_[steady ? kSteady : kEvery]->barriers;
}

std::vector<std::pair<size_t, double>> PlanExecutor::last_launch_times() const {
  std::vector<std::pair<size_t, double>> out;
  if (!options_.profile || finished_slot_ < 0) return out;
  const CommandStream& s = *streams_[finished_variant_][size_t(finished_slot_)];
  const Recorded& r = *recorded_[finished_variant_];
  for (size_t i = 0; i < r.launched.size(); ++i)
    out.push_back({r.launched[i], s.elapsed_ms(i == 0 ? r.launches_begin : r.launch_ends[i - 1], r.launch_ends[i])});
  return out;
}

}  // namespace spire::rt
