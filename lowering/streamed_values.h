// Streamed values (CompileOptions::streamed_inputs / streamed_outputs): graph inputs fed before every step and
// graph outputs read after every step, carried by the step's own recorded stream instead of transfers of their own.
//
// Why: a synchronous upload or download is a submit and a wait of its own, tens of microseconds on a GPU, several
// times per step. Here each streamed value has a host-visible buffer the host reads and writes in place; the step
// stream starts by copying every streamed input's host buffer into its device buffer and ends by copying every
// streamed output into its host buffer, so feeding a step and reading its result cost memcpys and the step stays
// one submit and one wait on every backend. The copies are made even where device memory is host visible itself
// (lavapipe, integrated GPUs): one path everywhere, and they are cheap there.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowering/plan.h"
#include "runtime/device.h"

namespace spire::lowering {

class StreamedValues {
 public:
  // Checks the names against the plan and allocates a host-visible buffer per value, poisoned (lowering/poison.h).
  // Throws graph::GraphError for a name that is not a graph input (streamed_inputs; a parameter or state is refused
  // too: the copy at the start of each step would overwrite its updates) or not a graph output (streamed_outputs),
  // or a name given twice, naming it and listing the graph's inputs or outputs.
  StreamedValues(rt::Device& dev, const Plan& plan, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs);

  bool is_input(const std::string& name) const { return inputs_.count(name) != 0; }
  bool is_output(const std::string& name) const { return outputs_.count(name) != 0; }

  // Recording the step: `device` holds the binding of every plan buffer (by buffer index).
  // At the start: host -> device copies of the inputs, then a barrier (nothing when no input is streamed).
  void record_feeds(rt::CommandStream& s, const std::vector<rt::BufferView>& device) const;
  // At the very end, after the state updates and their barrier: device -> host copies of the outputs, so an
  // output that is an updated parameter reads as a download after the step would.
  void record_readbacks(rt::CommandStream& s, const std::vector<rt::BufferView>& device) const;

  // Around each submission of the step: before, the readbacks are poisoned, so one the stream failed to write
  // shows as NaN rather than as the previous step's value; after, they hold this step's outputs.
  void before_step();
  void after_step() { stepped_ = true; }

  // Host side, no device work: `bytes` is the value's size in the device's element type (checked by the caller).
  void write_input(const std::string& name, const void* data, size_t bytes);
  void read_input(const std::string& name, void* out, size_t bytes) const;  // the value last written
  // Throws graph::GraphError before the first step: a streamed output has no value until a step wrote it.
  void read_output(const std::string& name, void* out, size_t bytes, const char* what) const;

 private:
  struct HostCopy {
    int32_t buffer = -1;                // the plan buffer it mirrors
    uint64_t bytes = 0;
    std::shared_ptr<rt::Buffer> host;   // host-visible, mapped
    void* data() const { return host->mapped(); }
  };
  HostCopy allocate(rt::Device& dev, const NamedValue& v, uint64_t bytes, const std::string& name) const;

  std::map<std::string, HostCopy> inputs_, outputs_;
  bool stepped_ = false;
};

}  // namespace spire::lowering
