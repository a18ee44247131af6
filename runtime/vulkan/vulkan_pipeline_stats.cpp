#include "runtime/vulkan/vulkan_pipeline_stats.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

bool pipeline_statistics_requested() {
  const char* v = std::getenv("SPIRE_VULKAN_PIPELINE_STATS");
  return v && std::strcmp(v, "1") == 0;
}

namespace {

std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return fmt::format("{}", s.value.f64);
    default: return "?";
  }
}

}  // namespace

std::vector<std::string> pipeline_statistics(const Context& ctx, VkPipeline pipeline) {
  const DeviceFunctions& fn = ctx.fn;
  if (!fn.vkGetPipelineExecutablePropertiesKHR || !fn.vkGetPipelineExecutableStatisticsKHR)
    throw Error(fmt::format("{}: pipeline statistics were not enabled at device creation", ctx.id()));
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t count = 0;
  check(fn.vkGetPipelineExecutablePropertiesKHR(ctx.device, &info, &count, nullptr), "vkGetPipelineExecutablePropertiesKHR",
        ctx.id());
  std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  check(fn.vkGetPipelineExecutablePropertiesKHR(ctx.device, &info, &count, executables.data()),
        "vkGetPipelineExecutablePropertiesKHR", ctx.id());
  std::vector<std::string> lines;
  for (uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    which.pipeline = pipeline;
    which.executableIndex = e;
    uint32_t n = 0;
    check(fn.vkGetPipelineExecutableStatisticsKHR(ctx.device, &which, &n, nullptr), "vkGetPipelineExecutableStatisticsKHR",
          ctx.id());
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    check(fn.vkGetPipelineExecutableStatisticsKHR(ctx.device, &which, &n, stats.data()),
          "vkGetPipelineExecutableStatisticsKHR", ctx.id());
    std::string line = std::string(executables[e].name) + ":";
    for (uint32_t i = 0; i < n; ++i)
      line += fmt::format("{} {} = {}", i == 0 ? "" : ",", stats[i].name, statistic_value(stats[i]));
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace spire::rt::vulkan
