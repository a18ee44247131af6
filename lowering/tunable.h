// A tunable node as data: its key, its template's heuristic config, the candidate configs and a function
// from a config to what the node launches (a KernelProgram). Lowering builds the chosen config's program and
// binds it to the plan's buffers; the tuner (tuning/) builds every candidate's and times it on its own
// buffers. Both go through the same TunableOp, so what is timed is what is later launched, but for one thing:
// lowering may fold an epilogue into the kernel's stores (fuse.h), which the tuner leaves out. An epilogue costs
// the same few loads and operations per stored element whatever the config, so it does not change the ranking.
//
// A KernelProgram is also the tuner's input for custom ops: any kernel factory that maps a config to kernels
// and grids can be timed without a graph (tuning/tuner.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/kernel/kernel.h"
#include "kernels/tuning_config.h"
#include "lowering/lowering_context.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::lowering {

// A buffer a program touches. Lowering binds Input buffers to the node's input `input`, the Output buffer to
// the node's value and gives each Scratch buffer a fresh scratch slot; the tuner allocates them all itself.
struct ProgramBuffer {
  // Value: a value of the graph other than the node's inputs, which the node reads in place of a fused input (a
  // pooling gradient's operands, fuse.h's gathered prologues).
  enum class Use : uint8_t { Input, Output, Scratch, Value };
  Use use = Use::Scratch;
  int32_t input = -1;  // Use::Input: which input of the node
  kir::Type type = kir::Type::F32;
  int64_t elements = 0;
  int32_t value = -1;  // Use::Value: the value's id
};

struct ProgramLaunch {
  kir::Kernel kernel;
  std::vector<int32_t> buffers;  // indices into KernelProgram::buffers, in the kernel's declaration order
  uint64_t groups = 0;           // logical workgroups; 0 launches nothing
  rt::ScalarArgs scalars;
};

// The launches of one node for one config, in order (a barrier follows each). No launches: nothing to do.
struct KernelProgram {
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramLaunch> launches;
};

struct TunableOp {
  TuningKey key;
  heavy::Config heuristic;                 // what lowering uses without a tuning choice
  std::vector<heavy::Config> candidates;   // every config the tuner tries; the heuristic is the first
  // Builds a config's program; throws std::invalid_argument for a config the shape cannot take.
  std::function<KernelProgram(const heavy::Config&)> build;
};

// The workgroup limits of a device, for candidate lists (0 fields of `info` keep heavy::Limits' defaults;
// at most 1024 invocations, which every template's indexing assumes).
heavy::Limits limits_of(const rt::DeviceInfo& info);

// The config lowering uses: the choice for op.key when there is one and it is among op.candidates, else the
// heuristic. A choice that is not a candidate (a hand-edited cache, a template whose space changed) is
// reported once per key on stderr and ignored.
heavy::Config choose_config(const TuningChoices* choices, const TunableOp& op);

// Lowers node v: makes its TunableOp (turning a template's std::invalid_argument into a graph::GraphError
// "<op> '<node>': ..."), builds the chosen config's program and binds it to the plan's buffers. Buffers are
// asked for only once the program exists (a refused shape allocates nothing); a program whose launches are
// all empty launches nothing.
void lower_tunable(LoweringContext& ctx, graph::Value v, const std::function<TunableOp()>& make);

// The node's inputs (in order) and its result as program buffers, in their device types.
std::vector<ProgramBuffer> io_buffers(const graph::Graph& g, graph::Value v);
// A program of one kernel over `buffers` in order: what most templates launch.
KernelProgram single_kernel_program(std::vector<ProgramBuffer> buffers, kir::Kernel kernel, uint64_t groups);

// A typed config list (MatmulTiling, Conv2dConfig, ...) in the generic form.
template <class TypedConfig>
std::vector<heavy::Config> configs_of(const std::vector<TypedConfig>& typed) {
  std::vector<heavy::Config> out;
  for (const TypedConfig& c : typed) out.push_back(c.config());
  return out;
}

// A TunableOp of one kernel over the node's inputs and result (`io`): the heuristic first among `candidates`, each
// config's kernel from `kernel(typed config)` (a heavy::HeavyKernel). What the row templates (the row-wise
// reductions and cross-entropy's gradient) are.
template <class TypedConfig, class MakeKernel>
TunableOp one_kernel_op(TuningKey key, const TypedConfig& heuristic, const std::vector<TypedConfig>& candidates,
                        std::vector<ProgramBuffer> io, MakeKernel kernel) {
  TunableOp op;
  op.key = std::move(key);
  op.heuristic = heuristic.config();
  op.candidates = configs_of(candidates);
  op.build = [io = std::move(io), kernel = std::move(kernel)](const heavy::Config& c) {
    auto k = kernel(TypedConfig::from(c));
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

}  // namespace spire::lowering
