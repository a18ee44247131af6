// Pass 4, emit: runs every scheduled node's lowering against a LoweringContext that records buffers and
// launches into a Plan, then fixes what outlives the step (leaves, outputs, state updates) and hands the
// plan to memory planning.
#include <fmt/format.h>

#include <optional>
#include <set>
#include <unordered_map>

#include "ir/kernel/printer.h"
#include "passes/decompose.h"
#include "lowering/fuse.h"
#include "lowering/kernel_templates.h"
#include "lowering/lower_decode_attention.h"
#include "lowering/memory_plan.h"
#include "lowering/op_lowering.h"
#include "lowering/parameter_launches.h"
#include "lowering/plan.h"
#include "lowering/pointwise_tree.h"
#include "lowering/precision_policy.h"
#include "passes/canonical.h"
#include "lowering/schedule.h"
#include "lowering/tunable.h"

namespace spire::lowering {

namespace {

BufferRole role_of(graph::OpKind op) {
  switch (op) {
    case graph::OpKind::Input: return BufferRole::Input;
    case graph::OpKind::Parameter: return BufferRole::Parameter;
    case graph::OpKind::State: return BufferRole::State;
    case graph::OpKind::Constant: return BufferRole::Constant;
    default: return BufferRole::Transient;
  }
}

class PlanBuilder final : public LoweringContext {
 public:
  PlanBuilder(const graph::Graph& g, Fusion fusion, const rt::DeviceInfo& info, const TuningChoices* tuning,
              Precision precision)
      : g_(g), info_(info), buffer_of_value_(size_t(g.size()), -1), fusion_(std::move(fusion)),
        epilogue_applied_(size_t(g.size()), false), limits_(limits_under(limits_of(info), info, precision)),
        tuning_(tuning) {}

  const graph::Graph& graph() const override { return g_; }
  const rt::DeviceInfo& device() const override { return info_; }

  bool fused(graph::Value v) const override { return fusion_.fused.at(size_t(v.id)); }
  SideOutputs side_outputs(graph::Value v) const override { return fusion_.side_outputs(v); }
  const TuningChoices* tuning() const override { return tuning_; }
  heavy::Limits limits() const override { return limits_; }

  int32_t buffer_of(graph::Value v) override {
    if (fusion_.fused.at(size_t(v.id)))
      throw std::logic_error(fmt::format("lowering: '{}' is fused into its user and has no buffer", g_.node(v).name));
    int32_t& b = buffer_of_value_.at(size_t(v.id));
    if (b >= 0) return b;
    const graph::Node& n = g_.node(v);
    // A reshape is an alias (lower_reshape); an epilogue may read one before its turn in the schedule.
    if (n.op == graph::OpKind::Reshape || n.op == graph::OpKind::Flatten) {
      alias(v, n.inputs[0]);
      return buffer_of_value_[size_t(v.id)];
    }
    PlannedBuffer pb;
    pb.slot = {n.name, device_type(n.type.dtype), n.type.numel()};
    pb.role = role_of(n.op);
    pb.values.push_back(n.name);
    if (n.op == graph::OpKind::Constant) pb.fill = n.attrs.get_float("value");
    if (n.op == graph::OpKind::State) pb.fill = n.attrs.get_float("init");
    b = int32_t(plan_.buffers.size());
    plan_.buffers.push_back(std::move(pb));
    return b;
  }

  void alias(graph::Value alias, graph::Value source) override {
    if (g_.type(alias).numel() != g_.type(source).numel() ||
        device_type(g_.type(alias).dtype) != device_type(g_.type(source).dtype))
      throw graph::GraphError(fmt::format("lowering: '{}' ({}) cannot alias '{}' ({}): element count or type differs",
                                          g_.node(alias).name, g_.type(alias).to_string(), g_.node(source).name,
                                          g_.type(source).to_string()));
    int32_t b = buffer_of(source);
    int32_t& a = buffer_of_value_.at(size_t(alias.id));
    if (a >= 0 && a != b)
      throw graph::GraphError(fmt::format("lowering: '{}' already has a buffer", g_.node(alias).name));
    a = b;
    plan_.buffers[size_t(b)].values.push_back(g_.node(alias).name);
  }

  bool view(graph::Value v, graph::Value source, int64_t element_offset) override {
    const graph::Node& n = g_.node(v);
    if (no_views_.count(n.name) || buffer_of_value_.at(size_t(v.id)) >= 0 ||
        device_type(n.type.dtype) != device_type(g_.type(source).dtype))
      return false;
    int32_t of = buffer_of(source);
    uint64_t offset = uint64_t(element_offset) * dtype_bytes(device_type(n.type.dtype));
    if (plan_.buffers[size_t(of)].view_of >= 0) {  // a window of a window: of the same buffer
      offset += plan_.buffers[size_t(of)].view_offset;
      of = plan_.buffers[size_t(of)].view_of;
    }
    if (plan_.buffers[size_t(of)].persistent() || offset % arena_alignment(info_) != 0) return false;
    PlannedBuffer pb;
    pb.slot = {n.name, device_type(n.type.dtype), n.type.numel()};
    pb.values.push_back(n.name);
    pb.view_of = of;
    pb.view_offset = offset;
    buffer_of_value_[size_t(v.id)] = int32_t(plan_.buffers.size());
    plan_.buffers.push_back(std::move(pb));
    return true;
  }

  // Values that must not be windows (lower() found one whose buffer had to be persistent).
  void forbid_views(std::set<std::string> names) { no_views_ = std::move(names); }

  int32_t scratch(kir::Type type, int64_t elements) override {
    PlannedBuffer pb;
    pb.slot = {fmt::format("scratch.{}", scratch_count_++), type, elements};
    pb.values.push_back(fmt::format("(scratch of {})", current_node_));
    plan_.buffers.push_back(std::move(pb));
    return int32_t(plan_.buffers.size() - 1);
  }

  void launch(kir::Kernel kernel, std::vector<int32_t> buffers, rt::ScalarArgs scalars, uint64_t groups) override {
    if (buffers.size() != kernel.buffers.size())
      throw std::logic_error(fmt::format("lowering of '{}': kernel '{}' declares {} buffers, launch binds {}",
                                         current_node_, kernel.name, kernel.buffers.size(), buffers.size()));
    apply_prologue(kernel, buffers);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const PlannedBuffer& pb = plan_.buffers.at(size_t(buffers[i]));
      if (pb.slot.type != kernel.buffers[i].elem)
        throw std::logic_error(fmt::format("lowering of '{}': kernel '{}' buffer {} ('{}') is {}, bound to '{}' of {}",
                                           current_node_, kernel.name, i, kernel.buffers[i].name,
                                           dtype_name(kernel.buffers[i].elem), pb.slot.name,
                                           dtype_name(pb.slot.type)));
    }
    if (scalars.count() != kernel.scalars.size())
      throw std::logic_error(fmt::format("lowering of '{}': kernel '{}' declares {} scalars, launch passes {}",
                                         current_node_, kernel.name, kernel.scalars.size(), scalars.count()));
    if (groups == 0) return;  // an empty tensor: nothing to compute
    apply_epilogue(kernel, buffers);
    unbind_unwritten_result(kernel, buffers);
    std::string text = kir::print(kernel);
    auto [it, inserted] = kernel_by_text_.emplace(std::move(text), int32_t(plan_.kernels.size()));
    if (inserted) plan_.kernels.push_back(std::move(kernel));
    plan_.launches.push_back({it->second, std::move(buffers), std::move(scalars), groups, current_node_});
  }

  // A launch of a heavy node with an epilogue (fuse.h) that stores the node's result: its stores compute the
  // epilogue's root from each result instead, into the root's buffer. Launches that do not store the result
  // (a split-K's partial sums) stay as they are; a node lowered as an alias launches nothing, and its root is then
  // lowered in its own turn.
  void apply_epilogue(kir::Kernel& kernel, std::vector<int32_t>& buffers) {
    if (!current_value_.valid()) return;
    const int32_t root_id = fusion_.epilogue.at(size_t(current_value_.id));
    const int32_t own = buffer_of_value_.at(size_t(current_value_.id));
    if (root_id < 0 || own < 0) return;
    auto slot = std::find(buffers.begin(), buffers.end(), own);
    if (slot == buffers.end()) return;
    const uint32_t index = uint32_t(slot - buffers.begin());
    if (kernel.buffers[index].access == kir::Access::Read) return;
    // Stored as whole workgroup matrices: no store names an element, so the root is lowered in its own turn.
    if (kir::stores_matrices_into(kernel, index)) return;
    const graph::Value root{root_id};
    if (epilogue_applied_[size_t(root_id)])
      throw std::logic_error(fmt::format("lowering of '{}': a second launch stores the result its epilogue '{}' was "
                                         "folded into", current_node_, g_.node(root).name));
    // The root may be of another type than the node (a product rounded to bf16, fuse.h): the buffer changes type.
    const kir::Type root_type = device_type(g_.node(root).type.dtype);
    std::optional<kir::Type> store_as;
    if (root_type != kernel.buffers[index].elem) store_as = root_type;
    // A kernel that taps the epilogue (kir's Op::EpilogueTap: it also computes with its stored values, as a pooled
    // side output's kernel does) takes the tree at its taps, and its stores store the tapped values.
    const bool taps = kir::taps_epilogue_of(kernel, index);
    if (taps && store_as)
      throw std::logic_error(fmt::format("lowering of '{}': kernel '{}' taps its epilogue, which rounds to {}: taps keep "
                                         "the result's type", current_node_, kernel.name, dtype_name(*store_as)));
    kir::KernelBuilder kb(std::move(kernel));
    PointwiseTree tree(*this, kb);
    std::vector<std::string> ops;
    auto at_element = [&](kir::Val at, kir::Val value) {
      tree.substitute(current_value_, value);
      tree.forget_computed();  // each store (or tap) is another element
      kir::Val r = tree.root(root, at.type() == kir::Type::U32 ? at : kir::cast(at, kir::Type::U32));
      if (ops.empty()) ops = tree.ops();
      return r;
    };
    try {
      if (taps) kb.rewrite_taps(index, at_element);
      else kb.rewrite_stores(index, at_element, store_as);
    } catch (const std::invalid_argument& e) {
      throw std::logic_error(fmt::format("lowering of '{}': {} (lowering's op table says the op takes an "
                                         "epilogue, but its kernels read their result)", current_node_, e.what()));
    }
    kernel = kb.finish();
    for (const std::string& op : ops) kernel.name += "_" + op;
    // A kernel that only taps (its result read by nothing but its side outputs, fuse.h) stores no root: the root gets
    // no buffer, and the declared, unwritten one a single element.
    buffers[index] = kir::writes_buffer(kernel, index) ? buffer_of(root) : scratch(kernel.buffers[index].elem, 1);
    for (int32_t b : tree.bindings()) buffers.push_back(b);
    epilogue_applied_[size_t(root_id)] = true;
  }

  // A convolution read only by its side outputs (fuse.h) taps its result without storing it: its own buffer, declared
  // and unwritten, is bound a single element instead (with an epilogue, apply_epilogue did so for the root).
  void unbind_unwritten_result(const kir::Kernel& kernel, std::vector<int32_t>& buffers) {
    if (!current_value_.valid() || !fusion_.result_unread.at(size_t(current_value_.id))) return;
    const int32_t own = buffer_of_value_.at(size_t(current_value_.id));
    auto slot = std::find(buffers.begin(), buffers.end(), own);
    if (own < 0 || slot == buffers.end()) return;
    const uint32_t index = uint32_t(slot - buffers.begin());
    if (!kir::writes_buffer(kernel, index)) *slot = scratch(kernel.buffers[index].elem, 1);
  }

  // A launch of a reduction with a prologue (fuse.h) binds its input to kFusedInputSlot: each load of that buffer
  // computes the input's pointwise tree at the loaded element instead, reading the tree's leaves. The buffer stays
  // declared, unread: it is bound to the first leaf's buffer (or a one-element scratch for a tree of constants).
  void apply_prologue(kir::Kernel& kernel, std::vector<int32_t>& buffers) {
    auto slot = std::find(buffers.begin(), buffers.end(), kFusedInputSlot);
    if (slot == buffers.end()) return;
    const int32_t root_id = current_value_.valid() ? fusion_.prologue.at(size_t(current_value_.id)) : -1;
    if (root_id < 0)
      throw std::logic_error(fmt::format("lowering of '{}': kernel '{}' binds a fused input, but the node has no "
                                         "prologue", current_node_, kernel.name));
    const uint32_t index = uint32_t(slot - buffers.begin());
    std::vector<int32_t> leaves;
    try {
      leaves = compute_loads_in_place(*this, kernel, {{index, graph::Value{root_id}}});
    } catch (const std::invalid_argument& e) {
      throw std::logic_error(fmt::format("lowering of '{}': {} (fuse.h's prologues are for reductions' element loads)",
                                         current_node_, e.what()));
    }
    const kir::Type elem = kernel.buffers[index].elem;
    auto same_type = std::find_if(leaves.begin(), leaves.end(),
                                  [&](int32_t b) { return plan_.buffers.at(size_t(b)).slot.type == elem; });
    buffers[index] = same_type != leaves.end() ? *same_type : scratch(elem, 1);
    for (int32_t b : leaves) buffers.push_back(b);
  }

  // The node being lowered (its launches may take its epilogue); an invalid value for launches of no node.
  void set_current(const std::string& node, graph::Value v = {}) {
    current_node_ = node;
    current_value_ = v;
  }
  const Fusion& fusion() const { return fusion_; }
  // True once a heavy kernel stored root r's elements (r needs no launch of its own).
  bool epilogue_applied(graph::Value r) const { return epilogue_applied_.at(size_t(r.id)); }
  bool has_buffer(graph::Value v) const { return buffer_of_value_[size_t(v.id)] >= 0; }
  Plan& plan() { return plan_; }

 private:
  const graph::Graph& g_;
  const rt::DeviceInfo& info_;
  std::vector<int32_t> buffer_of_value_;
  Fusion fusion_;
  std::vector<bool> epilogue_applied_;
  graph::Value current_value_;
  heavy::Limits limits_;
  const TuningChoices* tuning_;
  std::unordered_map<std::string, int32_t> kernel_by_text_;
  Plan plan_;
  std::string current_node_;
  int scratch_count_ = 0;
  std::set<std::string> no_views_;
};

// A fresh buffer holding a copy of `v`, for a value that must not share storage with a state-update
// target (the end-of-step copies would overwrite it before the user reads it, or read it after writing).
int32_t snapshot(PlanBuilder& ctx, graph::Value v, const std::string& why) {
  const graph::Graph& g = ctx.graph();
  int32_t from = ctx.buffer_of(v);
  int32_t to = int32_t(ctx.plan().buffers.size());
  PlannedBuffer pb;
  pb.slot = {g.node(v).name + ".snapshot", device_type(g.type(v).dtype), g.type(v).numel()};
  pb.role = BufferRole::Output;
  pb.values.push_back(why);
  ctx.plan().buffers.push_back(std::move(pb));
  ctx.set_current(g.node(v).name + " (snapshot)");
  int64_t n = g.type(v).numel();
  ctx.launch(copy_kernel(device_type(g.type(v).dtype), n), {from, to}, {}, groups_for(n, kPointwiseWorkgroup));
  return to;
}

// The plan of a prepared graph, with no window (LoweringContext::view) for the values named in `no_views`.
Plan lower_prepared(const graph::Graph& g, const rt::DeviceInfo& info, const TuningChoices* tuning,
                    bool parameters_once, Precision precision, const std::set<std::string>& no_views) {
  PlanBuilder ctx(g, plan_fusion(g), info, tuning, precision);
  ctx.forbid_views(no_views);
  ctx.plan().precision = precision;
  ctx.plan().precision_note = precision_note(info, precision);
  const Fusion& fusion = ctx.fusion();
  for (graph::Value v : schedule(g)) {
    if (ctx.fused(v)) continue;                         // computed inside its user's kernel
    if (fusion.in_final_group(v)) continue;             // lowered last, below
    if (fusion.is_epilogue[size_t(v.id)] && ctx.epilogue_applied(v)) continue;  // stored by the heavy kernel under it
    if (fusion.is_side_output[size_t(v.id)]) continue;  // stored by the convolution's launch
    ctx.set_current(g.node(v).name, v);
    if (const auto& attention = fusion.attention[size_t(v.id)]) lower_decode_attention(ctx, v, *attention);
    else lower_node(ctx, v);
  }
  if (!fusion.final_group.empty()) {
    ctx.set_current(fmt::format("final group ({} results)", fusion.final_group.size()));
    lower_final_group(ctx, fusion.final_group);
  }
  Plan& plan = ctx.plan();

  // Every leaf the user can set gets its own persistent buffer, used or not.
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter || n.op == graph::OpKind::State)
      plan.leaves[n.name] = {ctx.buffer_of(v), n.type, n.op};
  }

  std::vector<int32_t> targets;
  for (const graph::StateUpdate& u : g.state_updates()) targets.push_back(ctx.buffer_of(u.target));
  auto is_target = [&](int32_t b) { return std::find(targets.begin(), targets.end(), b) != targets.end(); };

  for (const graph::NamedOutput& o : g.outputs()) {
    int32_t b = ctx.buffer_of(o.value);
    // An output stored in a parameter's buffer would show the updated parameter after the step.
    if (is_target(b)) b = snapshot(ctx, o.value, fmt::format("(output {} before the state updates)", o.name));
    if (plan.buffers[size_t(b)].role == BufferRole::Transient) plan.buffers[size_t(b)].role = BufferRole::Output;
    plan.outputs[o.name] = {b, g.type(o.value), g.node(o.value).op};
  }
  for (const graph::StateUpdate& u : g.state_updates()) {
    int32_t from = ctx.buffer_of(u.value), to = ctx.buffer_of(u.target);
    if (from == to) continue;  // the new value already lives in the target
    // Updates read old values: a new value stored in another target must be copied before any update.
    if (is_target(from)) from = snapshot(ctx, u.value, fmt::format("(new value of {})", g.node(u.target).name));
    if (plan.buffers[size_t(from)].role == BufferRole::Transient) plan.buffers[size_t(from)].role = BufferRole::Output;
    plan.copies.push_back({from, to, g.node(u.target).name});
  }

  if (parameters_once) mark_parameter_launches(plan);
  plan_memory(plan, info);
  return std::move(plan);
}

// The leaves as the caller declared them in `original`: a parameter the precision policy stores in half
// (passes/half_storage.h's parameters_in_half) keeps its f32 type, which set() and get() take and return, while its
// buffer holds half (the device type, PlannedBuffer::slot), as an i64 input's holds i32.
void keep_declared_types(Plan& plan, const graph::Graph& original) {
  for (auto& [name, nv] : plan.leaves)
    if (const auto v = original.find(name); v && graph::is_leaf(original.node(*v).op)) nv.type = original.type(*v);
}

}  // namespace

Plan lower(const graph::Graph& original, const rt::DeviceInfo& info, const passes::PassPipeline* passes,
           const TuningChoices* tuning, bool parameters_once, Precision precision) {
  const graph::Graph g = passes::prepare_for_fusion(graph_under(original, info, precision), passes);
  // A window must be a transient buffer within a transient buffer, but which buffers an output or a state's new value
  // makes persistent is known only at the end: lowered again with those windows copied instead (rare: a sliced value
  // that is also an output).
  std::set<std::string> no_views;
  for (;;) {
    Plan plan = lower_prepared(g, info, tuning, parameters_once, precision, no_views);
    const size_t before = no_views.size();
    for (const PlannedBuffer& b : plan.buffers)
      if (b.view_of >= 0 && (b.persistent() || plan.buffers[size_t(b.view_of)].persistent()))
        no_views.insert(b.values.front());
    if (no_views.size() == before) {
      keep_declared_types(plan, original);
      return plan;
    }
  }
}

}  // namespace spire::lowering
