#include "runtime/kernel_interface.h"

namespace spire::rt {

std::vector<uint32_t> KernelInterface::scalar_offsets() const { return packed_offsets(types_of(scalars)); }
uint32_t KernelInterface::scalar_block_bytes() const { return packed_block_bytes(types_of(scalars)); }

}  // namespace spire::rt
