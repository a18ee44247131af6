// What the driver's compiler made of each kernel, through VK_KHR_pipeline_executable_properties: with
// SPIRE_VULKAN_PIPELINE_STATS=1 at device open (where the device offers the extension), every pipeline is created
// capturing its statistics and they are printed to stderr, one line per executable, e.g.
//   spire: vulkan:0 pipeline 'matmul_...': Compute Shader: Register Count = 168, Binary Size = 36608, ...
// (the statistics' names and meanings are the driver's). The Vulkan counterpart of ptxas -v, for kernel work.
// With SPIRE_VULKAN_PIPELINE_IR=<dir>, every pipeline also captures the driver's internal representations (whatever
// the driver offers: its intermediate code, its machine code), written into <dir> one file each: the counterpart of
// cuobjdump -sass, to see how the driver scheduled a kernel.
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

// The directory SPIRE_VULKAN_PIPELINE_IR names, or "" when it is unset.
std::string pipeline_ir_directory();

// Writes each internal representation of each executable of the pipeline into `dir` (created if missing) as
// "<kernel>.<executable index>.<representation name>.txt" (binary representations as their bytes) and returns the
// paths written; throws rt::Error where the driver fails the queries or a file cannot be written.
std::vector<std::string> write_pipeline_representations(const Context& ctx, VkPipeline pipeline,
                                                        const std::string& kernel, const std::string& dir);

}  // namespace spire::rt::vulkan
