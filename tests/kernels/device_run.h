// Test harness of the heavy-op lowerings: runs kernels on a real device with poisoned outputs.
//
// DeviceRun is a LoweringContext over one device: every graph value gets its own device buffer, launches
// are recorded in order with a barrier after each, and run() first fills every non-input buffer with a NaN
// pattern, so an output element no kernel writes shows up as NaN. Tests drive it two ways: lower the nodes
// of a small graph with the real lower_* functions (lower_graph), or launch a kernel template's kernel on
// slots they add themselves (add_slot / upload / launch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "lowering/lowering_context.h"
#include "runtime/device.h"

namespace spire::heavy_test {

// 32-bit word that is a NaN both as an f32 and, repeated, as an f64.
inline constexpr uint32_t kPoisonNaN = 0x7ff80000u;

// The device type heavy kernels use for a graph dtype: f32, f64, and i32 for i32/i64 labels.

class DeviceRun final : public lowering::LoweringContext {
 public:
  DeviceRun(rt::Device& device, const graph::Graph& g);

  // LoweringContext
  const graph::Graph& graph() const override { return g_; }
  const rt::DeviceInfo& device() const override { return dev_.info(); }
  int32_t buffer_of(graph::Value v) override;
  void alias(graph::Value alias, graph::Value source) override;
  int32_t scratch(kir::Type type, int64_t elements) override;
  void launch(kir::Kernel kernel, std::vector<int32_t> buffers, rt::ScalarArgs scalars, uint64_t groups) override;

  // A buffer of `elements` values of `type` (at least one element is allocated).
  int32_t add_slot(kir::Type type, int64_t elements, std::string name);
  void upload(int32_t slot, const graph::Tensor& t);
  graph::Tensor download(int32_t slot, graph::DType dtype, const graph::Shape& shape);

  // Uploads a leaf's value (the slot is not poisoned by run()).
  void set(graph::Value v, const graph::Tensor& t);
  graph::Tensor get(graph::Value v);

  // Poisons every buffer not uploaded, then compiles, records and runs all launches in order.
  void run();

  const std::vector<kir::Kernel>& kernels() const { return kernels_; }

 private:
  struct Slot {
    std::string name;
    kir::Type type;
    int64_t elements;
    std::shared_ptr<rt::Buffer> buffer;
    bool uploaded = false;
  };
  struct PendingLaunch {
    size_t kernel;
    std::vector<int32_t> buffers;
    rt::ScalarArgs scalars;
    uint64_t groups;
  };
  rt::Device& dev_;
  const graph::Graph& g_;
  std::vector<Slot> slots_;
  std::map<int32_t, int32_t> slot_of_value_;
  std::vector<kir::Kernel> kernels_;
  std::vector<PendingLaunch> launches_;
};

// Lowers every non-leaf node of `g` with the heavy lowerings (lower_matmul, ...); throws for other ops.
void lower_graph(DeviceRun& run, const graph::Graph& g);

// Runs `g` (heavy ops only) on the device: uploads `inputs` (by leaf name), lowers, runs, and returns every
// graph output by name.
std::map<std::string, graph::Tensor> run_on_device(rt::Device& device, const graph::Graph& g,
                                                   const std::map<std::string, graph::Tensor>& inputs);

// The device named `id`, opened once per process.
rt::Device& device(const std::string& id);
// Ids of every device present ("vulkan:0", ...).
std::vector<std::string> device_ids();
// Ids of the devices that report `feature` (SPIRE_MASK_FEATURES applied).
std::vector<std::string> device_ids_with(kir::Feature feature);
// "vulkan_0" from "vulkan:0", for test names.
std::string test_name_of(const std::string& device_id);

// Validation-layer messages so far (0 when validation is off).
uint64_t validation_messages();

}  // namespace spire::heavy_test
