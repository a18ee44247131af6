// The lowering of every op: one function per op family, each in its own file, dispatched by op_lowering.cpp.
//
// Each function appends the launches that compute `v` (a node of ctx.graph()) from its inputs' buffers.
// Kernel templates are written with the kernel builder (ir/kernel/builder.h).
#pragma once

#include <vector>

#include "lowering/lowering_context.h"

namespace spire::lowering {

// Dispatches on the node's op; throws graph::GraphError for an op no lowering handles.
void lower_node(LoweringContext& ctx, graph::Value v);

// Pointwise, layout and reduction ops (lower_pointwise.cpp, lower_layout.cpp, lower_reduce.cpp).
void lower_elementwise(LoweringContext& ctx, graph::Value v);   // unary, binary, compare, where, *_grad pointwise
void lower_constant(LoweringContext& ctx, graph::Value v);
void lower_reshape(LoweringContext& ctx, graph::Value v);       // reshape, flatten (aliases)
void lower_permute(LoweringContext& ctx, graph::Value v);
void lower_broadcast_to(LoweringContext& ctx, graph::Value v);
void lower_reduce(LoweringContext& ctx, graph::Value v);        // sum, mean, max, sum_to

// Indexing ops (lower_indexing.cpp).
void lower_slice(LoweringContext& ctx, graph::Value v);
void lower_pad(LoweringContext& ctx, graph::Value v);
void lower_concat(LoweringContext& ctx, graph::Value v);
void lower_gather(LoweringContext& ctx, graph::Value v);
void lower_gather_grad(LoweringContext& ctx, graph::Value v);

// Heavy ops (lower_matmul.cpp, lower_conv2d.cpp, lower_pool2d.cpp, lower_softmax.cpp).
void lower_matmul(LoweringContext& ctx, graph::Value v);
void lower_conv2d(LoweringContext& ctx, graph::Value v);
void lower_conv2d_grad_input(LoweringContext& ctx, graph::Value v);
void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v);
void lower_max_pool2d(LoweringContext& ctx, graph::Value v);
void lower_max_pool2d_grad(LoweringContext& ctx, graph::Value v);
void lower_max_pool2d_argmax(LoweringContext& ctx, graph::Value v);
void lower_max_pool2d_grad_argmax(LoweringContext& ctx, graph::Value v);
void lower_avg_pool2d(LoweringContext& ctx, graph::Value v);
void lower_avg_pool2d_grad(LoweringContext& ctx, graph::Value v);
void lower_softmax(LoweringContext& ctx, graph::Value v);       // softmax and log_softmax
void lower_cross_entropy(LoweringContext& ctx, graph::Value v);
void lower_cross_entropy_grad(LoweringContext& ctx, graph::Value v);

// The final group of fuse.h: pointwise roots nothing reads but memory, in as few launches as the device's binding
// limit allows (lower_final_group.cpp).
void lower_final_group(LoweringContext& ctx, const std::vector<graph::Value>& group);

// Custom ops: the kernel their author registered (lower_custom.cpp, custom_kernels.h).
void lower_custom(LoweringContext& ctx, graph::Value v);

}  // namespace spire::lowering
