// Streamed values (CompileOptions::streamed_inputs / streamed_outputs): graph inputs fed before every step and
// graph outputs read after every step, carried by the step's own recorded stream instead of transfers of their own.
//
// Why: a synchronous upload or download is a submit and a wait of its own, tens of microseconds on a GPU, several
// times per step. Here each streamed value has a host-visible buffer the host reads and writes in place; the step
// stream starts by copying every streamed input's host buffer into its device buffer and ends by copying every
// streamed output into its host buffer, so feeding a step and reading its result cost memcpys and the step stays
// one submit and one wait on every backend.
//
// An input is written in place instead where the device has device-local memory the host can map (rt::Memory::
// DeviceMapped: a discrete GPU's resizable BAR, an integrated GPU's or lavapipe's memory): the host writes the value
// into the very buffer the kernels read, and the step copies nothing in (a minibatch of LeNet, 200 KB, took 15 us of
// the H100's step to copy from host memory). Such an input keeps a host copy of its last value beside it, since
// reading mapped device memory back is slow. SPIRE_VULKAN_FORCE_STAGING=1 takes the copying path on any device.
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
  // Checks the names against the plan and allocates `slots` buffers per value (mapped device-local ones for an input
  // where the device has them, else host-visible ones), poisoned (lowering/poison.h).
  // Throws graph::GraphError for a name that is not a graph input (streamed_inputs; a parameter or state is refused
  // too: the copy at the start of each step would overwrite its updates) or not a graph output (streamed_outputs),
  // or a name given twice, naming it and listing the graph's inputs or outputs.
  StreamedValues(rt::Device& dev, const Plan& plan, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, int slots = 1);

  bool is_input(const std::string& name) const { return inputs_.count(name) != 0; }
  bool is_output(const std::string& name) const { return outputs_.count(name) != 0; }
  // Whether a streamed input is written in place (false: copied in by the step).
  bool in_place(const std::string& name) const { return inputs_.at(name).in_place; }

  // Slot `slot`'s bindings: `device` (every plan buffer's, by buffer index) with the in-place inputs' buffers
  // replaced by the slot's own.
  std::vector<rt::BufferView> bindings(const std::vector<rt::BufferView>& device, int slot) const;

  // Recording slot `slot`'s step: `device` holds the binding of every plan buffer (by buffer index).
  // At the start: host -> device copies of the inputs not written in place, then a barrier (nothing when there are
  // none).
  void record_feeds(rt::CommandStream& s, const std::vector<rt::BufferView>& device, int slot) const;
  // At the very end, after the state updates and their barrier: device -> host copies of the outputs, so an
  // output that is an updated parameter reads as a download after the step would.
  void record_readbacks(rt::CommandStream& s, const std::vector<rt::BufferView>& device, int slot) const;

  // Before each submission of slot `slot`'s step: an input last written into another slot is copied into this one
  // (the step sees the value last set, however many steps ago), and the slot's readbacks are poisoned, so one the
  // stream failed to write shows as NaN rather than as an older step's value.
  void before_step(int slot);

  // Host side, no device work: `bytes` is the value's size in the device's element type (checked by the caller).
  // write_input() writes slot `slot`'s copy, the one the next step to start reads.
  void write_input(const std::string& name, const void* data, size_t bytes, int slot);
  void read_input(const std::string& name, void* out, size_t bytes) const;  // the value last written
  // The value the finished step of slot `slot` wrote (the executable's last finished step); `slot` -1 (no step
  // finished yet) throws graph::GraphError: a streamed output has no value until a step wrote it.
  void read_output(const std::string& name, void* out, size_t bytes, const char* what, int slot) const;

 private:
  struct HostCopies {
    int32_t buffer = -1;                             // the plan buffer they mirror
    uint64_t bytes = 0;
    std::vector<std::shared_ptr<rt::Buffer>> host;   // one per slot, mapped: host-visible, or device-local in place
    bool in_place = false;                           // an input whose slots' buffers the kernels read
    int latest = 0;                                  // an input's slot holding the value last written
    std::vector<uint8_t> last;                       // in place: the value last written (not read back from the slot)
    void* data(int slot) const { return host[size_t(slot)]->mapped(); }
    const void* latest_value() const { return in_place ? static_cast<const void*>(last.data()) : data(latest); }
  };
  HostCopies allocate(rt::Device& dev, const NamedValue& v, uint64_t bytes, const std::string& name, int slots,
                      rt::Memory memory) const;

  std::map<std::string, HostCopies> inputs_, outputs_;
};

}  // namespace spire::lowering
