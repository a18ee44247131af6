// Which CUDA device's memory addresses a device exchanges values with (Device::copy_from_address, copy_to_address,
// wait_for_stream, signal_stream): what lets a caller holding CUDA memory, PyTorch's CUDA tensors, hand it to spire in
// place rather than through the host.
#pragma once

#include <optional>
#include <string>

#include "runtime/device.h"

namespace spire::rt {

// The CUDA ordinal (the driver's numbering, as PyTorch's cuda:N): a CUDA device's own; for a Vulkan device the CUDA
// device that is the same GPU, where both drivers can share memory (runtime/vulkan/vulkan_cuda_bridge.h); else
// nullopt, and the device's address calls throw InvalidUse.
std::optional<int> cuda_peer(const Device& device);

// How a device's exchanges with CUDA memory are ordered against CUDA's streams: on a CUDA device its own stream's
// order; on a Vulkan device a timeline semaphore both drivers share, or the host (vulkan_cuda_bridge.h says why);
// "" where cuda_peer is nullopt.
std::string cuda_ordering(Device& device);

}  // namespace spire::rt
