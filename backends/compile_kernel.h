// The compiler step: kernel IR -> a binary for a target described by data, no device needed.
//
// The target is a DeviceInfo: its backend picks the format (Vulkan: SPIR-V for Vulkan 1.1; CUDA: PTX for its
// compute capability) and its features and limits are checked first, so a kernel a device cannot run is refused
// here, naming kernel, feature and target, exactly as loading it would. A DeviceInfo can come from an open
// device, from rt::list_devices(), or be written by hand for a machine that is not here
// (tests/support/h100_like_target.h).
#pragma once

#include <memory>
#include <stdexcept>

#include "ir/kernel/kernel.h"
#include "runtime/device.h"

namespace spire::backends {

// Throws rt::MissingFeature for a feature the target lacks, rt::Error for a malformed kernel, one over the target's
// limits, or one the backend cannot compile (a prebuilt SPIR-V module for a CUDA target).
rt::KernelBinary compile_kernel(const kir::Kernel& k, const rt::DeviceInfo& target);

// Compiles for `device` and loads the result: what running a kernel IR kernel on a device takes.
std::shared_ptr<rt::Kernel> compile_and_load(rt::Device& device, const kir::Kernel& k);

}  // namespace spire::backends
