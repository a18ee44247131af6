// What the heavy ops' lowerings (lower_matmul.cpp, lower_conv2d.cpp, lower_pool2d.cpp, ...) share: the element
// type of a heavy op's node, and launching a template's kernel with errors that name the node.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph/graph.h"
#include "kernels/heavy_kernel.h"
#include "lowering/lowering_context.h"

namespace spire::lowering::heavy {

// kir::Type::F32 or F64 for a float dtype; throws graph::GraphError naming the node otherwise.
kir::Type float_type_of(const graph::Node& node, graph::DType dtype);

// Builds node v's kernel with `make` (turning a template's std::invalid_argument into a graph::GraphError
// "<op> '<node>': ...") and launches it over the buffers of v's inputs, in order, then v's own, then those of
// `also` (values the launch also stores: fuse.h's side outputs). Buffers are asked for only once the kernel exists (a
// refused shape allocates nothing); an empty result launches nothing.
// `extra`: buffer slots bound last (scratch the kernel writes besides).
void launch_heavy(LoweringContext& ctx, graph::Value v, const std::function<HeavyKernel()>& make,
                  const std::vector<graph::Value>& also = {}, const std::vector<int32_t>& extra = {});

}  // namespace spire::lowering::heavy
