#include "backends/kernel_interface.h"

#include "backends/ptx/ptx_shared_layout.h"

namespace spire::backends {

rt::KernelInterface kernel_interface(const kir::Kernel& k, rt::BinaryFormat format) {
  rt::KernelInterface i;
  i.name = k.name;
  i.workgroup_size = k.workgroup_size;
  i.features = k.features;
  for (const kir::BufferParam& b : k.buffers) i.buffers.push_back({b.name, b.elem, b.access, b.read_before_wait});
  for (const kir::ScalarParam& s : k.scalars) i.scalars.push_back({s.name, s.type});
  for (const kir::TensorMap& m : k.tensor_maps)
    i.tensor_maps.push_back({m.name, m.buffer, m.extents, m.strides, m.box, m.swizzle_128});
  if (format == rt::BinaryFormat::Ptx) {
    const ptx::SharedLayout layout = ptx::shared_layout(k);
    i.shared_bytes = layout.bytes;
    i.dynamic_shared_bytes = layout.dynamic_bytes();
  } else {
    i.shared_bytes = k.shared_bytes();
  }
  return i;
}

}  // namespace spire::backends
