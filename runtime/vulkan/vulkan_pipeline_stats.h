// What the driver's compiler made of each kernel, through VK_KHR_pipeline_executable_properties: with
// SPIRE_VULKAN_PIPELINE_STATS=1 at device open (where the device offers the extension), every pipeline is created
// capturing its statistics and they are printed to stderr, one line per executable, e.g.
//   spire: vulkan:0 pipeline 'matmul_...': Compute Shader: Register Count = 168, Binary Size = 36608, ...
// (the statistics' names and meanings are the driver's). The Vulkan counterpart of ptxas -v, for kernel work.
#pragma once

#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_api.h"

namespace spire::rt::vulkan {

struct Context;

// Whether SPIRE_VULKAN_PIPELINE_STATS asks for statistics.
bool pipeline_statistics_requested();

// One "<executable name>: <statistic> = <value>, ..." line per executable of the pipeline; throws rt::Error where
// the driver fails the queries.
std::vector<std::string> pipeline_statistics(const Context& ctx, VkPipeline pipeline);

}  // namespace spire::rt::vulkan
