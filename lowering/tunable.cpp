#include "lowering/tunable.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/fuse.h"

namespace spire::lowering {

heavy::Limits limits_of(const rt::DeviceInfo& info) {
  heavy::Limits l;
  if (info.shared_memory_bytes) l.shared_bytes = info.shared_memory_bytes;
  uint32_t inv = info.max_workgroup_invocations;
  if (info.max_workgroup_size[0]) inv = inv ? std::min(inv, info.max_workgroup_size[0]) : info.max_workgroup_size[0];
  if (inv) l.max_invocations = std::min<uint32_t>(inv, 1024);
  const uint32_t s = info.subgroup_size;
  if (info.features.has(kir::Feature::SubgroupShuffle) && s >= 2 && s <= 128 && (s & (s - 1)) == 0) l.subgroup_size = s;
  l.cooperative_matrix = info.features.has(kir::Feature::CooperativeMatrix) && s == 32;
  l.warpgroup_matrix = info.features.has(kir::Feature::WarpgroupMatrix) && s == 32;
  l.tensor_copy = info.features.has(kir::Feature::TensorCopy);
  l.workgroup_matrix = info.features.has(kir::Feature::WorkgroupMatrix) && l.max_invocations >= 256;
  l.async_copy = info.features.has(kir::Feature::AsyncCopy);
  l.cpu = info.type == rt::DeviceType::Cpu;
  l.ptx = info.backend == rt::Backend::Cuda;
  return l;
}

heavy::Config choose_config(const TuningChoices* choices, const TunableOp& op) {
  if (!choices) return op.heuristic;
  std::optional<heavy::Config> c = choices->find(op.key);
  if (!c) return op.heuristic;
  if (std::find(op.candidates.begin(), op.candidates.end(), *c) != op.candidates.end()) return *c;
  // Once per key and process: a graph may hold the same shape many times.
  static std::mutex mutex;
  static std::set<TuningKey> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(op.key).second)
    std::fprintf(stderr, "spire: warning: the tuning choice '%s' for %s is not a config this build tries; using '%s'\n",
                 c->text().c_str(), op.key.text().c_str(), op.heuristic.text().c_str());
  return op.heuristic;
}

void lower_tunable(LoweringContext& ctx, graph::Value v, const std::function<TunableOp()>& make) {
  const graph::Node& node = ctx.graph().node(v);
  KernelProgram p;
  try {
    TunableOp op = make();
    p = op.build(choose_config(ctx.tuning(), op));
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("{} '{}': {}", graph::op_name(node.op), node.name, e.what()));
  }
  if (std::none_of(p.launches.begin(), p.launches.end(), [](const ProgramLaunch& l) { return l.groups > 0; })) return;
  std::vector<int32_t> slots;
  for (const ProgramBuffer& b : p.buffers) {
    switch (b.use) {
      case ProgramBuffer::Use::Input: {
        graph::Value in = node.inputs.at(size_t(b.input));
        // An absorbed transpose, cast up or norm has no buffer: the kernel reads its source in place.
        const graph::Value source = ctx.fused(in) ? in_place_operand(ctx.graph(), in).source : in;
        if (source != in) {
          in = source;
        } else if (ctx.fused(in)) {
          // A reduction's input fused into its loads (a prologue) has no buffer either: the launch computes it.
          slots.push_back(kFusedInputSlot);
          break;
        }
        slots.push_back(ctx.buffer_of(in));
        break;
      }
      case ProgramBuffer::Use::Output: slots.push_back(ctx.buffer_of(v)); break;
      case ProgramBuffer::Use::Scratch: slots.push_back(ctx.scratch(b.type, b.elements)); break;
      case ProgramBuffer::Use::Value: slots.push_back(ctx.buffer_of(graph::Value{b.value})); break;
    }
  }
  for (ProgramLaunch& l : p.launches) {
    std::vector<int32_t> bound;
    for (int32_t b : l.buffers) bound.push_back(slots.at(size_t(b)));
    ctx.launch(std::move(l.kernel), std::move(bound), std::move(l.scalars), l.groups);
  }
}

std::vector<ProgramBuffer> io_buffers(const graph::Graph& g, graph::Value v) {
  const graph::Node& node = g.node(v);
  std::vector<ProgramBuffer> out;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    // A matrix product's or convolution's operand may be read in place from a half source (fuse.h): the buffer is of
    // that type.
    graph::Value in = node.inputs[i];
    if (node.op == graph::OpKind::Matmul || node.op == graph::OpKind::Conv2d) in = in_place_operand(g, in).source;
    const graph::TensorType& t = g.type(in);
    out.push_back({ProgramBuffer::Use::Input, int32_t(i), device_type(t.dtype), t.numel()});
  }
  out.push_back({ProgramBuffer::Use::Output, -1, device_type(node.type.dtype), node.type.numel()});
  return out;
}

KernelProgram single_kernel_program(std::vector<ProgramBuffer> buffers, kir::Kernel kernel, uint64_t groups) {
  KernelProgram p;
  ProgramLaunch l;
  for (size_t i = 0; i < buffers.size(); ++i) l.buffers.push_back(int32_t(i));
  l.kernel = std::move(kernel);
  l.groups = groups;
  p.buffers = std::move(buffers);
  p.launches.push_back(std::move(l));
  return p;
}

}  // namespace spire::lowering
