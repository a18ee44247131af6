// Kernel templates shared between lowering files (internal to lowering/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/kernel/builder.h"
#include "lowering/index_map.h"
#include "lowering/lowering_context.h"

namespace spire::lowering {

// Invocations per workgroup of the one-element-per-invocation templates.
inline constexpr uint32_t kPointwiseWorkgroup = 256;

// y[i] = x[i] for i < n.
kir::Kernel copy_kernel(kir::Type type, int64_t n);

// y[i] = x[map(i)] for i < n: gathers for permute and broadcast_to.
kir::Kernel gather_kernel(const std::string& name, kir::Type type, int64_t n, const IndexMap& map);

}  // namespace spire::lowering
