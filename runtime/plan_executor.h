// The one executor of device plans (device_plan.h): what the JIT path (lowering::compile, spire run, graph eval,
// training) and the AOT path (bundle sessions, the C API) both run on.
//
// It loads the plan's kernels, allocates its buffers (the transient ones in one arena, poisoned so that an unwritten
// value shows), and records one step as a command stream that every step replays. Where the plan has launches that
// compute only from parameters, a second "steady" stream leaves them out: the first step and the first after a
// parameter changed run them, the others read what they left in the arena.
//
// Streamed values are fed and read by the step's own stream instead of transfers of their own (a synchronous upload
// or download is a submit and a wait, tens of microseconds on a GPU, several per step):
//   - a streamed input is written by the host into memory the step reads: where the device has device-local memory
//     the host can map (rt::Memory::DeviceMapped: lavapipe, integrated GPUs, a discrete GPU's resizable BAR), the very
//     buffer the kernels bind, so nothing is copied; elsewhere a host-visible buffer that the step copies in first;
//   - a streamed output is copied by the end of the step into host-visible memory the host reads.
// So a step fed and read through streamed values is one submit and one wait on every device.
// An application's own device buffer may be bound to a streamed value instead (bind()): the stream copies from or
// into it, and the host copy is not used.
//
// Steps in flight: with steps_in_flight > 1, start_step() may submit the next step before finish_step() waited for
// the last, so the device starts it the moment the last ends. Each step in flight has its own host copies of the
// streamed values and its own recorded stream, which starts with a barrier on the steps before it.
//
// Loading: the plan's kernels with distinct binaries are loaded on several threads at once (pipeline creation and
// PTX JIT are the bulk of a start-up); kernels repeating a binary reuse its pipeline or module. SPIRE_LOAD_THREADS=N
// caps the threads (1: one after another). The first finished step of the process ends the start-up profile
// (runtime/startup_profile.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/arena_pieces.h"
#include "runtime/device.h"
#include "runtime/device_plan.h"

namespace spire::rt {

// The bit pattern written into every buffer the executor allocates and into each streamed output's host copy before
// every step: as f32 (0x7FF87FF8), as f64 and as each half of an f16 or bf16 pair (0x7FF8) a NaN, as an integer a
// large number, as a bool neither 0 nor 1. A value nobody wrote stays visibly wrong, whatever its width.
constexpr uint32_t kPoison = 0x7FF87FF8u;
inline void poison_host_bytes(void* data, uint64_t bytes) { fill_host_bytes(data, bytes, kPoison); }

struct ExecutorOptions {
  int steps_in_flight = 1;  // 1 to kMaxStepsInFlight
  // A timestamp after every launch (each then ends with a barrier), so last_launch_times() tells where time goes.
  bool profile = false;
  // Plan buffer indices of the streamed inputs (Input buffers) and outputs (any persistent buffer), each once.
  std::vector<uint32_t> streamed_inputs;
  std::vector<uint32_t> streamed_outputs;
  // The device buffer of a Parameter buffer, when the caller owns it (a bundle's weights, shared by its plans); null
  // (or no function): the executor allocates it, poisoned, and the caller uploads the value into owned().
  std::function<std::shared_ptr<Buffer>(const BufferSpec&)> parameter_buffer;
  // What a streamed input holds before it is first written: the poison, or zeros (a bundle's inputs, whose rows
  // beyond a smaller batch are padding and should be tidy numbers).
  bool zero_streamed_inputs = false;
};

class PlanExecutor {
 public:
  static constexpr int kMaxStepsInFlight = 4;

  // `plan` must outlive the executor. Throws MissingFeature when a kernel needs what the device lacks (naming the
  // launches that use it), Error for a kernel the device refuses, a buffer beyond the device's binding limit, or
  // streamed values that are not what they claim; std::invalid_argument for steps_in_flight out of range.
  PlanExecutor(Device& dev, const DevicePlan& plan, ExecutorOptions options = {});
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  const DevicePlan& plan() const { return plan_; }
  Device& device() const { return dev_; }
  int steps_in_flight() const { return options_.steps_in_flight; }
  size_t in_flight() const { return in_flight_.size(); }

  // start_step() submits a step (throws Error with steps_in_flight() steps in flight); finish_step() waits for the
  // oldest step in flight (throws Error with none), whose streamed outputs output_value() then reads.
  void start_step();
  void finish_step();
  void step() {
    start_step();
    finish_step();
  }
  // A parameter's device bytes changed (uploaded by the caller): the next step runs the parameters-only launches.
  void parameters_changed() { parameters_changed_ = true; }

  bool is_streamed_input(uint32_t buffer) const;
  bool is_streamed_output(uint32_t buffer) const;
  // Whether a streamed input is written in place, in the memory the kernels read (false: copied in by each step).
  bool written_in_place(uint32_t buffer) const;
  // A streamed input's host bytes (its BufferSpec::bytes()) that the next step to start reads: writing them feeds it.
  // Write only while fewer than steps_in_flight() steps are in flight (with one, none). Taking it marks the value
  // written: with several steps in flight, the next step copies it into its own memory.
  uint8_t* input_memory(uint32_t buffer);
  // The value last written into a streamed input (slow where that memory is mapped device memory: read rarely).
  const uint8_t* input_value(uint32_t buffer) const;
  // What the last finished step wrote into a streamed output; null before any step finished or while the output is
  // bound to an application's buffer. Valid while output_readable().
  const uint8_t* output_value(uint32_t buffer) const;
  // Whether streamed outputs can be read now: a step finished, and no step in flight writes the host copies that step
  // wrote.
  bool output_readable() const;

  // Binds an application's device buffer (of this device) to a streamed input or output: every step then copies
  // `bytes` from it into the plan buffer, or from the plan buffer into it, instead of using the host copy. An empty
  // view unbinds. The step is recorded again before the next start_step(); refused (Error) while a step is in flight.
  void bind(uint32_t buffer, BufferView app, uint64_t bytes);

  // The device buffer of a persistent buffer, for the caller's own transfers; null for transient buffers and for
  // streamed inputs written in place (their memory is per step in flight).
  Buffer* owned(uint32_t buffer) const { return owned_[buffer].get(); }

  // Device time of the last finished step in milliseconds (the device's timestamps), feeding and reading included.
  double last_step_ms() const { return last_ms_; }
  // Barriers the steady step (every step where there is no steady one) records between and after its launches.
  size_t barriers() const;
  // With ExecutorOptions::profile: the launches of the last finished step (plan launch index) with their device time.
  std::vector<std::pair<size_t, double>> last_launch_times() const;

  // Where the constructor's time went, for the start-up profile (runtime/startup_profile.h).
  struct LoadTimes {
    double kernels_ms = 0;    // Device::load of every kernel: pipeline creation / CUDA module load
    size_t kernels = 0;       // the plan's kernels
    size_t distinct = 0;      // of them with a binary of their own (the others reuse its pipeline or module)
    int threads = 1;          // that loaded them
    double buffers_ms = 0;    // allocation, fills, parameter buffers (a caller's weights included)
    double record_ms = 0;     // recording the step's streams
  };
  const LoadTimes& load_times() const { return load_times_; }

 private:
  enum Variant { kEvery = 0, kSteady = 1 };
  struct Streamed;
  struct Recorded;
  void load_kernels();
  void allocate();
  void record_all();
  std::unique_ptr<CommandStream> record(int slot, Variant variant);
  Streamed* streamed(uint32_t buffer, bool input);
  const Streamed* streamed(uint32_t buffer, bool input) const;
  std::vector<BufferView> bindings(int slot) const;

  Device& dev_;
  const DevicePlan& plan_;
  ExecutorOptions options_;
  std::vector<std::shared_ptr<Kernel>> kernels_;
  std::vector<ScalarArgs> scalars_;  // by launch, unpacked once
  std::vector<ArenaPiece> arena_pieces_;         // the arena's byte ranges, one allocation each
  std::vector<std::shared_ptr<Buffer>> arena_;  // those allocations
  std::vector<std::shared_ptr<Buffer>> owned_;  // persistent buffers (null for arena-placed ones)
  std::vector<BufferView> views_;               // every buffer's binding outside the streamed inputs written in place
  std::vector<std::unique_ptr<Streamed>> inputs_, outputs_;
  // Per variant, one stream per step in flight; kSteady's only where the plan has parameters-only launches.
  std::vector<std::unique_ptr<CommandStream>> streams_[2];
  std::unique_ptr<Recorded> recorded_[2];
  bool recorded_now_ = false;  // false: record before the next step (first step, or a binding changed)
  bool parameters_changed_ = true;
  struct InFlight {
    int slot = 0;
    Variant variant = kEvery;
    std::unique_ptr<Fence> done;
  };
  std::deque<InFlight> in_flight_;  // oldest first
  int next_slot_ = 0;
  int finished_slot_ = -1;
  Variant finished_variant_ = kEvery;
  double last_ms_ = 0;
  LoadTimes load_times_;
  std::chrono::steady_clock::time_point first_step_start_{};  // of the first step, until it finished
  bool stepped_ = false;
};

}  // namespace spire::rt
