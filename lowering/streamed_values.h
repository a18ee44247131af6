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
  // Checks the names against the plan and allocates `slots` host-visible buffers per value, poisoned
  // (lowering/poison.h).
  // Throws graph::GraphError for a name that is not a graph input (streamed_inputs; a parameter or state is refused
  // too: the copy at the start of each step would overwrite its updates) or not a graph output (streamed_outputs),
  // or a name given twice, naming it and listing the graph's inputs or outputs.
  StreamedValues(rt::Device& dev, const Plan& plan, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, int slots = 1);

  bool is_input(const std::string& name) const { return inputs_.count(name) != 0; }
  bool is_output(const std::string& name) const { return outputs_.count(name) != 0; }

  // Recording slot `slot`'s step: `device` holds the binding of every plan buffer (by buffer index).
  // At the start: host -> device copies of the inputs, then a barrier (nothing when no input is streamed).
  void record_feeds(rt::CommandStream& s, const std::vector<rt::BufferView>& device, int slot) const;
  // At the very end, after the state updates and their barrier: device -> host copies of the outputs, so an
  // output that is an updated parameter reads as a download after the step would.
  void record_readbacks(rt::CommandStream& s, const std::vector<rt::BufferView>& device, int slot) const;

  // Around each submission of slot `slot`'s step. Before: an input last written into another slot is copied into
  // this one (the step sees the value last set, however many steps ago), and the slot's readbacks are poisoned, so
  // one the stream failed to write shows as NaN rather than as an older step's value. After: the slot's readbacks
  // hold this step's outputs, and read_output() reads them.
  void before_step(int slot);
  void after_step(int slot) { finished_ = slot; }

  // Host side, no device work: `bytes` is the value's size in the device's element type (checked by the caller).
  // write_input() writes slot `slot`'s copy, the one the next step to start reads.
  void write_input(const std::string& name, const void* data, size_t bytes, int slot);
  void read_input(const std::string& name, void* out, size_t bytes) const;  // the value last written
  // The last finished step's value. Throws graph::GraphError before the first step: a streamed output has no value
  // until a step wrote it.
  void read_output(const std::string& name, void* out, size_t bytes, const char* what) const;

 private:
  struct HostCopies {
    int32_t buffer = -1;                             // the plan buffer they mirror
    uint64_t bytes = 0;
    std::vector<std::shared_ptr<rt::Buffer>> host;   // one per slot, host-visible, mapped
    int latest = 0;                                  // an input's slot holding the value last written
    void* data(int slot) const { return host[size_t(slot)]->mapped(); }
  };
  HostCopies allocate(rt::Device& dev, const NamedValue& v, uint64_t bytes, const std::string& name, int slots) const;

  std::map<std::string, HostCopies> inputs_, outputs_;
  int finished_ = -1;  // the slot of the last finished step
};

}  // namespace spire::lowering
