// Lowering's op table: ONE entry per op that lowering handles by name, with everything lowering and its tests
// know about that op. The graph's op table (ir/graph/op_table.h) says what an op is; this one says how it
// becomes launches.
//
// An entry (OpLowering) names its op as the graph's table does and holds
//   lower            appends the launches that compute a node of the op (every entry has one);
//   tunable          its template's config space as the tuner times it (tunable.h), when it has one;
//   takes_epilogue   whether its kernel can apply a pointwise chain to each element it stores (fuse.h);
//   attention_weights  whether it turns a row of scores into attention weights (exp(s - max) / sum over its `axis`),
//                    so that a product of its last-axis rows with values is one decode-attention launch (fuse.h);
//   cases            the op harness's cases that reach every path of its kernel (op_harness/op_case.h).
// Each family's lowering file (lower_matmul.cpp, lower_pool2d.cpp, ...) defines its entries beside the code
// they point at, in a function listed below; op_lowering.cpp gathers them and indexes them by OpKind, so no
// code outside this table switches over ops to find a lowering, a template or whether an epilogue fits.
//
// Pointwise ops have no entry: one generated kernel computes any chain of them from their graph entries'
// formulas (lower_pointwise.cpp). Custom ops have none either: they arrive at run time with their author's
// kernel (lower_custom.cpp). Input, parameter and state leaves launch nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"
#include "lowering/lowering_context.h"
#include "lowering/tunable.h"
#include "op_harness/op_case.h"

namespace spire::lowering {

// Appends the launches that compute `v` (a node of ctx.graph()) from its inputs' buffers.
using LowerFn = void (*)(LoweringContext& ctx, graph::Value v);
// Node v's TunableOp on a device of these limits; nullopt where the node launches nothing. Throws
// std::invalid_argument for a shape its template refuses.
using TunableFn = std::optional<TunableOp> (*)(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);

struct OpLowering {
  std::string_view op;             // the op's name in the graph's op table
  LowerFn lower = nullptr;
  TunableFn tunable = nullptr;     // nullptr: no config space (the template has one fixed shape)
  bool takes_epilogue = false;     // its stores can apply a pointwise epilogue (fuse.h); heavy ops only
  bool attention_weights = false;  // its rows are attention weights that decode attention computes itself (fuse.h)
  harness::CaseFn cases = nullptr; // entries sharing a kernel may share one case list (it is run once)
};

// The entry of op `op`, or nullptr for an op without one (pointwise, custom, input/parameter/state).
const OpLowering* op_lowering(graph::OpKind op);
// Every entry, in the order the family functions below give them.
const std::vector<OpLowering>& op_lowerings();
// The ops whose entries have a config space (`tunable`), comma-separated in that order: what --tune times.
std::string tunable_op_names();

// Lowers node v through its entry (custom ops through lower_custom, pointwise ops through
// lower_elementwise); throws graph::GraphError for an op nothing lowers.
void lower_node(LoweringContext& ctx, graph::Value v);

// The families, one per lowering file; op_lowering.cpp lists them.
std::vector<OpLowering> layout_lowerings();         // lower_layout.cpp: constant, reshape, flatten, permute, broadcast_to
std::vector<OpLowering> reduce_lowerings();         // lower_reduce.cpp: sum, mean, max, sum_to
std::vector<OpLowering> indexing_lowerings();       // lower_indexing.cpp: slice, pad, concat, gather, gather_grad
std::vector<OpLowering> matmul_lowerings();         // lower_matmul.cpp
std::vector<OpLowering> conv2d_lowerings();         // lower_conv2d.cpp: conv2d and its gradients
std::vector<OpLowering> pool2d_lowerings();         // lower_pool2d.cpp: the poolings and their gradients
std::vector<OpLowering> argmax_lowerings();         // lower_argmax.cpp: positions of rows' largest elements
std::vector<OpLowering> softmax_lowerings();        // lower_softmax.cpp: the row-normalizing ops
std::vector<OpLowering> norm_lowerings();           // lower_norm.cpp: layer_norm, rms_norm
std::vector<OpLowering> int8_matmul_lowerings();     // lower_int8_matmul.cpp: matmul_int8_weight
std::vector<OpLowering> cross_entropy_lowerings();  // lower_cross_entropy.cpp: the loss and its gradient

// Pointwise ops: one kernel from their formulas (lower_pointwise.cpp).
void lower_elementwise(LoweringContext& ctx, graph::Value v);

// The final group of fuse.h: pointwise roots nothing reads but memory, in as few launches as the device's binding
// limit allows (lower_final_group.cpp).
void lower_final_group(LoweringContext& ctx, const std::vector<graph::Value>& group);

// Custom ops: the kernel their author registered (lower_custom.cpp, custom_kernels.h).
void lower_custom(LoweringContext& ctx, graph::Value v);

}  // namespace spire::lowering
