// compile_kernel: dispatches to backends/spirv or backends/ptx by the target's backend.
#include "backends/compile_kernel.h"

#include <fmt/format.h>

#include "backends/kernel_interface.h"
#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"

namespace spire::backends {

rt::KernelBinary compile_kernel(const kir::Kernel& k, const rt::DeviceInfo& target) {
  rt::KernelBinary b;
  b.interface = kernel_interface(k, target.backend == rt::Backend::Vulkan ? rt::BinaryFormat::Spirv : rt::BinaryFormat::Ptx);
  if (!target.features.contains(k.features)) throw rt::MissingFeature(rt::missing_feature_message(b.interface, target));
  try {
    if (target.backend == rt::Backend::Vulkan) {
      b.format = rt::BinaryFormat::Spirv;
      b.spirv = spirv::compile(k);
    } else {
      b.format = rt::BinaryFormat::Ptx;
      b.ptx_sm = target.compute_capability;
      b.ptx = ptx::compile(k, ptx::Target{target.compute_capability});
      b.entry = ptx::entry_name(k);
    }
  } catch (const spirv::CompileError& e) {
    throw rt::Error(fmt::format("the SPIR-V backend rejected kernel '{}' for {}: {}", k.name, target.id, e.what()));
  } catch (const ptx::CompileError& e) {
    throw rt::Error(fmt::format("{} ({}): {}", target.id, target.name, e.what()));
  } catch (const std::invalid_argument& e) {
    throw rt::Error(fmt::format("kernel '{}' is malformed ({}): {}", k.name, target.id, e.what()));
  }
  return b;
}

std::shared_ptr<rt::Kernel> compile_and_load(rt::Device& device, const kir::Kernel& k) {
  return device.load(compile_kernel(k, device.info()));
}

}  // namespace spire::backends
