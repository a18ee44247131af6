// Which nodes have a tunable template, and their TunableOps (tunable.h).
//
// Each family's function lives beside its lowering (lower_matmul.cpp, lower_conv2d.cpp, lower_reduce.cpp, ...),
// which builds the node's kernels through it and names it in its entry of lowering's op table (op_lowering.h):
// what the tuner times is what lowering emits. The ones declared here have forms the tests and tunable_ops()
// call directly (a fused bias sum, side outputs, a gathered prologue).
// The functions take the graph the lowering sees (after decompose) and the device's limits; the TunableOp
// they return holds no reference to the graph.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "kernels/conv2d_grad_weight_images_kernel.h"
#include "lowering/tunable.h"
#include "runtime/device.h"

namespace spire::lowering {

// A few-rows product's paired epilogue (fuse.h): `root`, stored instead of the result, from each pair of its columns n
// and N / 2 + n; `combine` builds the root's element `index` in kernel `kb` from the pair's sums, appending the buffers
// its tree loads (bound after the kernel's own) to `loaded`. It refers to the lowering's context, so a TunableOp made
// with it lives only while that lowers (the tuner's never pair: tunable_ops() times the product alone).
struct PairedStore {
  graph::Value root;
  std::function<kir::Val(kir::KernelBuilder& kb, kir::Val index, kir::Val first, kir::Val second,
                         std::vector<ProgramBuffer>& loaded)>
      combine;
};
// bias: a linear layer's bias gradient its launches also store (fuse.h's bias sums), or none. paired: the few-rows
// kernel with paired columns, its key's shape ending in "_paired".
TunableOp tunable_matmul(const graph::Graph& g, graph::Value v, const heavy::Limits& limits, graph::Value bias = {},
                         const PairedStore* paired = nullptr);
// side: a max_pool2d value of v's result (or of its epilogue's root) that v's launch also stores, maybe with its
// positions, maybe instead of the result (fuse.h's side outputs), tuned under keys of their own.
TunableOp tunable_conv2d(const graph::Graph& g, graph::Value v, const heavy::Limits& limits, const SideOutputs& side = {});
TunableOp tunable_conv2d_grad_input(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);
// pooled_form: grad_out is a pooling's gradient the kernels compute from the pooled gradient and the pooling's input
// (fuse.h's gathered prologues; pooled_grad_out below).
// bias (pooled form from positions only): the bias sum its launches also store (fuse.h's side outputs); its key's shape
// ends in "_bias".
TunableOp tunable_conv2d_grad_weight(const graph::Graph& g, graph::Value v, const heavy::Limits& limits,
                                     bool pooled_form = false, graph::Value bias = {});
// True when node v's (a conv2d_grad_weight) heuristic is the direct family (LeNet's sizes), not the implicit GEMM.
bool conv2d_grad_weight_direct(const graph::Graph& g, graph::Value v);
// Where conv2d_grad_weight v's grad_out is a max pooling's gradient (f32) over windows that tile it, maybe under the
// ReLU's mask of the pooling's input: relu_grad(max_pool2d_grad(grad, input), input) or max_pool2d_grad(grad, input);
// or as passes/pool_grad_by_argmax.h leaves it, from the windows' positions: max_pool2d_grad_argmax(relu_grad(grad,
// pooled), positions) or max_pool2d_grad_argmax(grad, positions), pooled being max_pool2d of the positions' input.
struct PooledGradOutSource {
  graph::Value grad_out, pool;  // v's input, and the pooling's gradient (the same but for the first form's mask)
  graph::Value grad, input;     // the pooled gradient and the pooling's input (the positions, pooled.positions)
  graph::Value mask, pooled_values;  // the second form under the mask: relu_grad(grad, pooled), and pooled
  heavy::PooledGradOut pooled;
};
std::optional<PooledGradOutSource> pooled_grad_out(const graph::Graph& g, graph::Value v);
// sum, max, mean, sum_to; nullopt where the node launches nothing (one element per output: an alias; no
// outputs).
std::optional<TunableOp> tunable_reduce(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);

// Node v's TunableOp whatever its op (its entry's `tunable` in lowering's op table, op_lowering.h); nullopt for
// ops without a tunable template. Throws std::invalid_argument for a node its template refuses.
std::optional<TunableOp> tunable_op(const graph::Graph& g, graph::Value v, const heavy::Limits& limits);

// Every tunable node of `g` as lower(g, info, ..., precision) would lower it (decomposed; only what an output or a
// state update needs), one per distinct key, in schedule order: what `--tune` times.
std::vector<TunableOp> tunable_ops(const graph::Graph& g, const rt::DeviceInfo& info,
                                   Precision precision = Precision::Fp32);

}  // namespace spire::lowering
