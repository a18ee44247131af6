// Pass 3, fuse: decides which values get no launch of their own.
//
//  * Pointwise chains. A pointwise value is computed inside its user's kernel (no buffer, no launch, no round
//    trip through memory) when its only use is as one input of one pointwise op of the same shape (so nothing
//    is computed twice), and it is not a graph output nor a state update's new value (those must land in
//    memory). Trees of such values end at a root, whose kernel (lower_elementwise) emits the whole tree.
//    A cast of a stored value read by one pointwise op through a broadcast (maybe through reshapes: a layer's bias
//    cast up and reshaped to [1, C, 1, 1]) is computed by that op's kernel too, one conversion per element read.
//    A value read by several pointwise ops that all end in one tree (GELU's x, read four times by its tanh form) is
//    computed in that tree too: a tree computes each value once per element.
//    A slice (unit steps) or a concat of two pieces read once by a pointwise op of its shape (or a slice read by such a
//    concat) is computed in the tree too, at the element's index moved into its input or piece (pointwise_tree.h's
//    computes_by_index): a rotary embedding's x * cos + concat(-x[h:], x[:h]) * sin is one launch.
//  * Absorbed transposes: a 2D transpose every user of which is a matrix product reads its input in place.
//  * Absorbed casts up: a cast from f16/bf16 to f32 read only as matrix-product or convolution operands (directly or
//    through an absorbed transpose): the products load the half values and widen them (compute_in_f32.h makes these
//    casts); a convolution multiplies them on tensor cores where the device has them, else widens them in its own
//    program (lower_conv2d.cpp).
//  * Epilogues. A heavy op (matmul, convolution, pooling, ...) read only by a pointwise tree of its own shape (by
//    one op of it, or by several: SiLU's h * sigmoid(h)) computes that tree from each result before storing it: the layer's bias add and activation, or a
//    ReLU's gradient mask after a product, cost no launch and no round trip. The tree's other inputs must be
//    ready before the heavy op runs (computed earlier in the schedule).
//  * Prologues. A pointwise root whose only user is a reduction (sum, sum_to, max) reading it whole is computed in
//    the reduction's loads: the tree is evaluated at each element the reduction folds, and never stored (a bias
//    gradient summed from a masked gradient reads the mask's inputs, not a materialized product). The root gets no
//    buffer and no launch; its leaves are ready before the reduction, which comes after them in the schedule. The
//    same for max_pool2d_grad_argmax's gradient, read once per window (the ReLU's mask of the pooled values,
//    passes/pool_grad_by_argmax.h).
//    Gathered prologues: a convolution's weight gradient (direct kernels) whose grad_out is a max pooling's gradient
//    over windows that tile it, maybe under the ReLU's mask of the pooling's input, read by nothing else, computes it
//    from the pooled gradient and the pooling's input (lower_conv2d.cpp's pooled form: the staged kernels fill their
//    copy of each image window by window; the others run the pooling gradient into a scratch buffer first). The
//    pooling gradient, four times the pooled gradient's size, is never stored (LeNet's first convolution).
//  * Pooled side outputs. A 2x2-style max pooling (windows that tile its input, f32, no epilogue of its own) of a
//    convolution's result, or of the convolution's epilogue root, is stored by the convolution's launch: its kernel
//    pools the values it stores (taking the epilogue's value at each element, kir's epilogue taps), so the pooling gets
//    no launch and never reads the result back (lower_conv2d.cpp; configs whose kernels cannot run the pooling in a
//    second launch of the same program).
//    The pooling's positions (max_pool2d_argmax of the same input and window, passes/pool_grad_by_argmax.h) are
//    stored by the same launch; where nothing else reads the convolution's result (or root), it is not stored at all.
//    A max pooling that is no side output stores its positions in its own launch.
//  * Bias sums. A convolution's weight gradient gathered from the pooling's positions (under the ReLU's mask or not)
//    also computes the sum of that gradient over images and positions per output channel, where the graph has it (the
//    layer's bias gradient: a sum_to [1, C, 1, 1] or sum over axes 0, 2, 3 of the same masked pooled gradient, which
//    sum_through_max_pool moved there) and nothing reads the sum before the weight gradient runs: the sum gets no
//    launch and the pooled gradient is read once (LeNet's first convolution). The same for a max pooling's gradient from
//    positions over windows that tile: its launch adds the gradient it reads per channel (LeNet's second convolution).
//    And a linear layer's weight gradient, grad_y^T x read in place from grad_y (f32): its launch adds grad_y's
//    columns as it stages them, where the graph sums grad_y over the batch (the layer's bias gradient: sum_to [M] or
//    [1, M], or sum over axis 0) and nothing reads the sum before the product (LeNet's three fully connected layers).
//  * Attention at a few queries. The attention weights of a product's scores (maybe scaled and masked by a pointwise tree), read
//    only by a product with the values, is computed by that product's launch, scores and all (absorbed_attention): a
//    decoder's step runs a layer's attention as one launch instead of three. The queries and the new key row it writes
//    into the cache, where each is a pointwise tree read by nothing else (a rotary embedding), are computed by that
//    launch too, as it reads them (AbsorbedAttention::q_tree, key_row_tree).
//  * Paired epilogues. A few-rows product (matvec_kernel.h) by B^T whose result, or its epilogue's root, is read only
//    as its two halves along the last axis, each a slice computed in one pointwise tree of a half's shape (SwiGLU's
//    silu(gate) * up over the merged gate and up product, passes/merged_products.h): the product's launch computes
//    that tree from each pair of its columns n and N / 2 + n (one workgroup holds both) and stores the tree alone. The
//    halves, the epilogue and the tree get no launch; the product's result is never stored.
//  * The final group. Pointwise roots whose results only become state updates (an optimizer's update of every
//    parameter and its momentum) run last, all in one launch.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph/graph.h"
#include "kernels/decode_attention_kernel.h"
#include "lowering/lowering_context.h"

namespace spire::lowering {

// Ops lower_elementwise computes one element at a time.
bool is_pointwise(graph::OpKind op);

// Ops whose kernels store each result element once, without reading it back: their stores can take an
// epilogue (kir::KernelBuilder::rewrite_stores). Their entries in lowering's op table say so (op_lowering.h).
bool takes_epilogue(graph::OpKind op);

// A 2D transpose that every user reads as a matrix-product operand (and that is not stored): the products read
// its input in place (matmul_kernel's transposed operands), so it has no buffer and no launch. Also a batched one
// (the last two dims swapped) that every user reads as the B of a few-rows product (matvec_kernel.h): attention's
// keys at one query.
bool absorbed_transpose(const graph::Graph& g, graph::Value v);

// A cast of an f16 or bf16 value to f32, not stored, that every user reads as a matrix-product or convolution operand,
// directly or through an absorbed transpose, or as the input of an absorbed norm: the products read the half values in
// place and widen them as they load.
bool absorbed_upcast(const graph::Graph& g, graph::Value v);

// A slice with unit steps, not stored, that every user writes somewhere as write_at's row (its input 1): write_at's
// kernel reads the slice's input in place (lower_indexing.cpp), so it has no buffer and no launch. (A decoder's newest
// key or value, sliced from the attention's concatenated cache and written into the cache state.)
bool absorbed_slice(const graph::Graph& g, graph::Value v);

// A write_at(data, row, index; axis) whose data is a state that it updates and that nothing else reads after it (the
// result's readers read the state with the row written: a decoder's attention over its cache, passes/cache_in_place.h):
// the result lives in the state's own buffer, so the update copies nothing and the write costs the row (a decoder's
// cache growing by one position a step). Else lowering copies data into the result first (lower_indexing.cpp).
bool writes_state_in_place(const graph::Graph& g, graph::Value v);

// A layer_norm or rms_norm, not stored, that every user reads as the A of a few-rows product by one matrix
// (matvec_kernel.h's RowNorm): the products normalize its input's rows as they read them, so it has no buffer and no
// launch. (A decoder's norm before its projections and its head.)
bool absorbed_norm(const graph::Graph& g, graph::Value v);

// Where a matrix product (or a convolution) reads operand `v` in place: v itself, or the source of the absorbed transpose and/or cast
// up in front of it, or the input of the absorbed norm it is. `transposed` and `half` (the stored half dtype, else unset)
// say how to read it; `norm`, the norm to compute from it.
struct InPlaceOperand {
  graph::Value source;
  bool transposed = false;
  std::optional<graph::DType> half{};  // ({}: `InPlaceOperand r{v}` leaves it out without a warning)
  graph::Value norm{};
};
InPlaceOperand in_place_operand(const graph::Graph& g, graph::Value v);

// Attention at a few queries (a decoder's step) in one launch (kernels/decode_attention_kernel.h): v = matmul(P, V)
// where P = the attention weights of S over the last axis (an op whose lowering entry sets attention_weights) and S is the scores' product matmul(Q, K^T) (K^T an absorbed transpose), or
// a pointwise tree over it of its shape (a scale, a mask) whose values nothing outside the tree reads. P, S and the
// product are read by nothing else and stored nowhere; Q, K and V share one batch shape, are read as stored (K
// through its transpose) and hold at most kDecodeAttentionMostRows queries whose scores fit the kernel's workgroup
// memory. The scores' product, S and P then have no launch: v's computes them. Nothing where v is not such an attention.
// Where K or V is a write_at of the step's new row into a cache state in place (writes_state_in_place: a decoder's
// cache, passes/cache_in_place.h) along the keys' axis, read by nothing but this attention and not from a slice it
// reads in place, the launch writes the row too, and the write_at is its side output (no launch of its own). Keys
// and values broadcast from fewer heads (grouped-query attention) are read from the caches themselves.
struct AbsorbedAttention {
  graph::Value scores;  // the product matmul(Q, K^T)
  graph::Value score;   // S: the scores' product or the root of the tree over it
  InPlaceOperand q, k, v;
  heavy::DecodeAttentionShape shape;
  graph::Value key_write, value_write;  // the write_at nodes the launch computes, where it does
  // Pointwise roots the launch computes where it reads them (plan_fusion's, not absorbed_attention's: they depend on
  // what else is fused), each read by nothing else and not stored: the queries (q.source; a rotary embedding of the
  // query), and the new key row key_write writes (a rotary embedding of the key). Invalid where it loads them.
  graph::Value q_tree, key_row_tree;
  // Grouped-query attention: the copies of k and v broadcast to every query head (the reshape to [.., H, 1, L, D], the
  // broadcast_to and the reshape to [.., H * G, L, D]), which the launch reads through from the caches (k.source,
  // v.source): none of them has a launch.
  std::vector<graph::Value> key_chain, value_chain;
};
std::optional<AbsorbedAttention> absorbed_attention(const graph::Graph& g, graph::Value v);

struct Fusion {
  std::vector<bool> fused;                // index = value id: computed inside its user's kernel
  std::vector<int32_t> epilogue;          // index = heavy value id: the root its kernel computes before storing, or -1
  std::vector<bool> is_epilogue;          // index = value id: a root computed by the heavy kernel under it
  std::vector<int32_t> prologue;          // index = reduction or conv2d_grad_weight value id: the root its loads
                                          // compute (fused), or -1
  std::vector<int32_t> side_pool;         // index = conv2d value id: the max_pool2d value its launch also stores, or -1
  std::vector<int32_t> side_argmax;       // index = conv2d or max_pool2d value id: the max_pool2d_argmax value its
                                          // launch also stores (its side pool's, or its own), or -1
  std::vector<bool> result_unread;        // index = conv2d value id: read only by its side outputs (not stored)
  std::vector<int32_t> side_bias;         // index = conv2d_grad_weight, max_pool2d_grad_argmax or matmul value id: the
                                          // bias sum its launch also stores, or -1
  std::vector<bool> is_side_output;       // index = value id: a pooling, positions, bias sum or cache write stored by
                                          // another launch
  std::vector<int32_t> pair_root;         // index = matmul value id: the tree over its result's two halves its launch
                                          // stores instead of the result (a paired epilogue), or -1
  std::vector<std::optional<AbsorbedAttention>> attention;  // index = matmul value id: the attention its launch
                                                           // computes (absorbed_attention), or nothing
  std::vector<graph::Value> final_group;  // roots that run last, in one launch (empty unless there are two or more)

  bool in_final_group(graph::Value v) const;
  SideOutputs side_outputs(graph::Value v) const;
};

Fusion plan_fusion(const graph::Graph& g);

// plan_fusion(g).fused: what the pointwise chains and absorbed transposes leave without a launch.
std::vector<bool> fuse_pointwise(const graph::Graph& g);

}  // namespace spire::lowering
