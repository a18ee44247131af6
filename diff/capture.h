// Every intermediate value of a graph, not only its outputs, as a device computes it and as the float64 reference
// evaluator computes it.
//
// A device's plan keeps most intermediates only for as long as their readers need them (the arena reuses their
// bytes), and fusion keeps some in registers, never stored at all. So the values are read from two more runs of the
// graph with extra graph outputs, which the plan must store and keep:
//   1. Stored values (the model's own plan stores them): the model's graph with each of them made an output. Making a
//      stored value an output changes no kernel, so they are read as the model computes them (a note says otherwise
//      if that plan's kernels differ from the model's).
//   2. Values the model's plan keeps in registers (a pointwise chain's inner values, a convolution's result under its
//      bias and ReLU epilogue) or does not compute (nothing reads them): the graph with every value made an output,
//      which unfuses them, so their own launch computes them. Their origin still names the model's launch that fuses
//      them, and their source says they come from this unfused run. The run keeps every value (unfused_run), so that a
//      node can be checked alone on inputs from the same run as its result.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "lowering/executable.h"
#include "runtime/device.h"

namespace spire::diff {

enum class Source : uint8_t {
  Stored,   // stored by the model's plan, read from a run of the same kernels
  Unfused,  // kept in registers (or not computed) by the model's plan, read from a run with it unfused
};
std::string_view source_name(Source s);  // "stored", "unfused"

// Where the model's plan computes a value.
struct ValueOrigin {
  Source source = Source::Stored;
  std::string launch;  // the node whose launch computes it (its own, or its fused group's root); empty: none (unread)
  std::string kernel;  // that launch's kernel name
  std::string tuning;  // a tunable template's key and config ("matmul m2_k512_n10 f32: tile_m=32,..."); else empty
  // Unfused: the kernel that computed the compared value in the unfused run (the value's own launch there).
  std::string unfused_kernel;
};

struct Capture {
  std::string device;                           // "vulkan:0", "reference"
  std::string device_name, driver;              // as rt::DeviceInfo has them
  std::map<std::string, graph::Tensor> values;  // by node name: every value compared_values() lists
  // Every value as the unfused run computed it (capture_device's run 2); empty when every value is stored.
  std::map<std::string, graph::Tensor> unfused_run;
  std::map<std::string, ValueOrigin> origins;   // by node name (devices only)
  std::vector<std::string> notes;               // what the reader of the report should know about this capture
};

// The values `spire diff` compares: every node but the leaves (inputs, parameters, states, constants), in
// topological order.
std::vector<graph::Value> compared_values(const graph::Graph& g);

// The float64 evaluator's value of every compared value (rounded to each value's dtype, as the evaluator returns
// outputs). `feeds`: every leaf by node name.
Capture capture_reference(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds);

// Every compared value on `device`, compiled with `options` (passes and tuning choices; the same for every run).
Capture capture_device(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                       const lowering::CompileOptions& options = {});

}  // namespace spire::diff
