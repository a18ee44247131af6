#include "tests/runtime/conformance/backend_probe.h"

#include <stdexcept>

#include "runtime/cuda/cuda_resources.h"
#include "runtime/vulkan/vulkan_kernel.h"

namespace spire::rt::conformance {

const void* loaded_program(const Kernel& k) {
  if (auto* vk = dynamic_cast<const vulkan::VulkanKernel*>(&k)) return vk->pipeline().get();
  if (auto* ck = dynamic_cast<const cuda::CudaKernel*>(&k)) return ck->function();
  throw std::logic_error("loaded_program: a kernel of a backend this probe does not know");
}

}  // namespace spire::rt::conformance
