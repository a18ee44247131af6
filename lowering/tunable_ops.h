// Which nodes have a tunable template, and their TunableOps (tunable.h).
//
// Each family's function lives beside its lowering (lower_matmul.cpp, lower_conv2d.cpp, lower_softmax.cpp,
// lower_reduce.cpp), which builds the node's kernels through it: what the tuner times is what lowering emits.
// The functions take the graph the lowering sees (after decompose) and the device's limits; the TunableOp
// they return holds no reference to the graph.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph/graph.h"
#include "lowering/tunable.h"
#include "runtime/device.h"

namespace spire::lowering {

TunableOp tunable_matmul(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
TunableOp tunable_conv2d(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
TunableOp tunable_conv2d_grad_input(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
TunableOp tunable_conv2d_grad_weight(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
TunableOp tunable_softmax(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);  // and log_softmax
TunableOp tunable_cross_entropy(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
TunableOp tunable_cross_entropy_grad(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
// sum, max, mean, sum_to; nullopt where the node launches nothing (one element per output: an alias; no
// outputs).
std::optional<TunableOp> tunable_reduce(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);

// Node v's TunableOp whatever its op; nullopt for ops without a tunable template. Throws graph::GraphError
// for a node its template refuses (naming the node).
std::optional<TunableOp> tunable_op(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);

// Every tunable node of `g` as lower(g, info) would lower it (decomposed; only what an output or a state
// update needs), one per distinct key, in schedule order: what `--tune` times.
std::vector<TunableOp> tunable_ops(const graph::Graph& g, const rt::DeviceInfo& info);

}  // namespace spire::lowering
