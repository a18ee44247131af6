// compile(graph, device) -> an Executable: the graph lowered to kernels, compiled for the device, and one
// training/inference step recorded once as a command stream that each step() replays.
//
// Parameters and optimizer state stay on the device across steps (the graph's state updates are copied
// into their targets at the end of each step, inside the same stream); only what get() asks for is
// downloaded. Inputs fed and outputs read every step can be streamed (CompileOptions::streamed_inputs and
// streamed_outputs), so that a whole step, feeding and reading included, is one submit and one wait.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "passes/pipeline.h"
#include "lowering/memory_report.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::lowering {

struct CompileOptions {
  bool verbose = false;  // print the plan while compiling
  // Rewrite passes to run inside lowering, at their before_fusion point (passes/pipeline.h); not owned, may
  // be null. Passes at the other points belong to whoever builds the graph (import, autograd).
  const passes::PassPipeline* passes = nullptr;
  // The tuner's choices for this device (tuning/tuning_cache.h); null: every template's heuristic. Must
  // outlive compile() only.
  const TuningChoices* tuning = nullptr;
  // Record a timestamp after every launch, so last_launch_times() can tell where a step's time goes.
  bool profile = false;
  // Streamed values: graph inputs fed before every step and graph outputs read after every step (a training
  // step's minibatch and its loss). Without streaming, each set() and get() is a transfer of its own: a submit
  // and a wait, tens of microseconds on a GPU, several per step. A streamed value instead has a host-visible
  // buffer that the step's own recorded stream copies from at its start (inputs) and into at its end (outputs),
  // so set()/set_raw() of a streamed input and get()/get_raw() of a streamed output are host memcpys, and a step
  // that feeds and reads only streamed values costs one submit and one wait on every backend.
  //   streamed_inputs: names of graph inputs (parameters and state are refused: the copy at the start of every
  //     step would overwrite their updates). The step sees the value last set before it; get() returns that value.
  //   streamed_outputs: graph output names. get()/get_raw() return what the last step() produced, the same
  //     values as without streaming; before the first step() they throw graph::GraphError (there is no value).
  // compile() refuses (graph::GraphError) a name the graph does not have as such, or a name given twice, naming
  // it and listing the graph's inputs or outputs.
  // ({}: designated initializers may leave these out without a -Wmissing-field-initializers warning)
  std::vector<std::string> streamed_inputs{};
  std::vector<std::string> streamed_outputs{};
  // How many steps start_step() may have submitted before finish_step() waits for the oldest, 1 to 4. With 2, a
  // training loop submits the next step before it waits for this one, so the device starts it the moment this one
  // ends instead of idling through the host's wake-up, its reading of the loss, its feeding and its submit (tens of
  // microseconds a step on a GPU, most of a small step's time on Vulkan). Each step in flight has its own host copies
  // of the streamed values and its own recorded stream, which starts with a barrier on the steps before it.
  int steps_in_flight = 1;
  // Launches that compute only from parameters the graph never updates (a weight widened, transformed or moved) run
  // in the first step and after set() of a parameter, their results kept (lower()'s parameters_once); false: every
  // launch runs every step, for less device memory.
  // The device buffer of a parameter, by its graph name and size in bytes, where the caller holds it (weights two
  // plans share: a decoder's prefill and decode graphs); null, or no function: the plan allocates its own. set() of
  // such a parameter writes the caller's buffer.
  std::function<std::shared_ptr<rt::Buffer>(const std::string& name, uint64_t bytes)> parameter_buffer{};
  bool parameters_once = true;
  // Device memory the plan may take, in bytes (0: no limit): over it, parameters-only launches run every step instead
  // of keeping their results; still over, compile() throws MemoryBudgetError with the least it needs
  // (lowering/memory_report.h).
  uint64_t memory_budget = 0;
  // The precision policy (base/precision.h): fp32, strict, unless asked. tf32 rounds the f32 operands of products and
  // convolutions to TF32 on devices with TF32 tensor cores (cuda:N) and runs as fp32 elsewhere, which the plan records
  // (Plan::precision_note, Executable::precision_note). bf16 and f16 store the graph's f32 values in half with f32
  // sums, the ops torch.autocast runs in f32 kept in f32 (passes/half_storage.h lists them); inputs, parameters and
  // outputs stay f32. A device without the half type runs fp32 and says so.
  Precision precision = Precision::Fp32;
};

// One launch's device time in the last step (CompileOptions::profile).
struct LaunchTime {
  std::string node;    // the graph node it computes
  std::string kernel;  // the kernel's name
  double ms = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Uploads an input, parameter or state by node name; throws graph::GraphError for an unknown name or a
  // dtype/shape differing from the graph's declaration (naming both). A streamed input is only stored on the
  // host: the next step() copies it in.
  virtual void set(const std::string& name, const graph::Tensor& t) = 0;
  // Fast path for inputs fed every step: raw host data already in the device type (f32 for f32 inputs, i32
  // for i32/i64 inputs), exactly the value's element count. Fastest for a streamed input (a memcpy).
  virtual void set_raw(const std::string& name, const void* data, size_t bytes) = 0;
  // Runs one step (submit + wait): start_step() then finish_step().
  void step() {
    start_step();
    finish_step();
  }
  // The two halves of step(), so the host can prepare the next minibatch while the device runs this one.
  // start_step() submits a step; finish_step() waits for the oldest step in flight, whose streamed outputs get() and
  // get_raw() then read. While a step is in flight set(), set_raw(), get() and get_raw() throw rt::Error (the device
  // may still read the inputs and write the outputs), except with CompileOptions::steps_in_flight > 1: there a
  // streamed input may be set while fewer steps than that are in flight (it goes to the next step to start), and a
  // streamed output read while no step in flight writes the copy the last finished step wrote. start_step() with
  // steps_in_flight steps in flight, and finish_step() with none, throw rt::Error too.
  virtual void start_step() = 0;
  virtual void finish_step() = 0;
  // Downloads a graph output (by output name), parameter or state (by node name), in the value's dtype. A
  // streamed output or input is read from its host copy, with no device work.
  virtual graph::Tensor get(const std::string& name) = 0;
  // Raw download of an f32 output into `out` (element count must match).
  virtual void get_raw(const std::string& name, void* out, size_t bytes) = 0;
  // Values exchanged in place with another library's memory on the same device (rt::Device::copy_from_address: on
  // CUDA, a torch CUDA tensor's data_ptr(), since spire and PyTorch share the primary context), with no host copy.
  // set_device() copies `bytes` (the value's size in the device's element type, as set_raw) from `address` into an
  // input's, parameter's or state's device buffer; get_device() copies an output, parameter or state to `address`.
  // Both are device-to-device copies enqueued on the device's in-order queue and not waited for, also while steps are
  // in flight: a set lands before the next step (after those submitted), a get reads what the last submitted step
  // wrote, and rt::Device::wait_idle() (or the wait of a later step) completes them. The caller orders the other
  // library's stream: its writes of an input's address are complete before the copy runs, and it reads a get's address
  // only after the copy. Without a host wait: rt::Device::wait_for_stream() before set_device() and signal_stream()
  // after get_device() (spire.torch does this with torch's current stream). Streamed values are refused
  // (graph::GraphError): each step feeds them from their host copies; compile without streaming what is exchanged this
  // way. rt::InvalidUse on devices without such addresses (Vulkan).
  virtual void set_device(const std::string& name, uint64_t address, size_t bytes) = 0;
  virtual void get_device(const std::string& name, uint64_t address, size_t bytes) = 0;
  // The bytes set_raw(), get_raw(), set_device() and get_device() take for a value (an input, parameter, state or
  // output by name): its elements in the device's type, which is not always its declared dtype's (an i64 value is
  // stored as i32; an f32 parameter the bf16/f16 policies store in half takes 2 bytes a value, and set() rounds it).
  // graph::GraphError for a name the graph does not have.
  virtual uint64_t value_bytes(const std::string& name) const = 0;
  // The plan as text: buffers, kernels, launches in order.
  virtual std::string plan_text() const = 0;
  // What the device runs in place of CompileOptions::precision where it cannot honour it (one line: "vulkan:0 has no
  // TF32 cooperative matrices; tf32 runs as fp32"); empty where it runs as asked. Commands print it on stderr.
  virtual std::string precision_note() const = 0;
  // Where the plan's device memory goes (lowering/memory_report.h).
  virtual MemoryReport memory() const = 0;
  // Device time of the last step in milliseconds (from the device's timestamps).
  virtual double last_step_ms() const = 0;
  // Barriers the recorded step has between and after its launches: one before each launch that reads or writes
  // what a launch since the previous barrier wrote (or writes what it read), one after the last (after every launch
  // with CompileOptions::profile).
  virtual size_t barriers() const = 0;
  // With CompileOptions::profile: every launch of the last step in plan order with its device time (each
  // launch ends with a barrier, so the times add up to about the step's); else empty.
  virtual std::vector<LaunchTime> last_launch_times() const { return {}; }
};

std::unique_ptr<Executable> compile(const graph::Graph& g, rt::Device& device, const CompileOptions& opt = {});

}  // namespace spire::lowering
