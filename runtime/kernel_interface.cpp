#include "runtime/kernel_interface.h"

namespace spire::rt {

namespace {
std::vector<DType> scalar_types(const KernelInterface& k) {
  std::vector<DType> t;
  for (const auto& s : k.scalars) t.push_back(s.type);
  return t;
}
}  // namespace

std::vector<uint32_t> KernelInterface::scalar_offsets() const { return packed_offsets(scalar_types(*this)); }
uint32_t KernelInterface::scalar_block_bytes() const { return packed_block_bytes(scalar_types(*this)); }

}  // namespace spire::rt
