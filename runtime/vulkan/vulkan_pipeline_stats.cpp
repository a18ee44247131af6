#include "runtime/vulkan/vulkan_pipeline_stats.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

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

std::string pipeline_ir_directory() {
  const char* v = std::getenv("SPIRE_VULKAN_PIPELINE_IR");
  return v ? std::string(v) : std::string();
}

namespace {

// A representation or kernel name as part of a file name: letters, digits, '_', '-' and '.' kept, the rest '_'.
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return s;
}

}  // namespace

std::vector<std::string> write_pipeline_representations(const Context& ctx, VkPipeline pipeline,
                                                        const std::string& kernel, const std::string& dir) {
  const DeviceFunctions& fn = ctx.fn;
  if (!fn.vkGetPipelineExecutablePropertiesKHR || !fn.vkGetPipelineExecutableInternalRepresentationsKHR)
    throw Error(fmt::format("{}: pipeline internal representations were not enabled at device creation", ctx.id()));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("SPIRE_VULKAN_PIPELINE_IR: cannot create '{}': {}", dir, ec.message()));
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t count = 0;
  check(fn.vkGetPipelineExecutablePropertiesKHR(ctx.device, &info, &count, nullptr), "vkGetPipelineExecutablePropertiesKHR",
        ctx.id());
  std::vector<std::string> written;
  for (uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    which.pipeline = pipeline;
    which.executableIndex = e;
    uint32_t n = 0;
    check(fn.vkGetPipelineExecutableInternalRepresentationsKHR(ctx.device, &which, &n, nullptr),
          "vkGetPipelineExecutableInternalRepresentationsKHR", ctx.id());
    std::vector<VkPipelineExecutableInternalRepresentationKHR> reps(
        n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR});
    // The first call gives each representation's size; the second fills the buffers.
    check(fn.vkGetPipelineExecutableInternalRepresentationsKHR(ctx.device, &which, &n, reps.data()),
          "vkGetPipelineExecutableInternalRepresentationsKHR", ctx.id());
    std::vector<std::vector<char>> data(n);
    for (uint32_t i = 0; i < n; ++i) {
      data[i].resize(reps[i].dataSize);
      reps[i].pData = data[i].data();
    }
    check(fn.vkGetPipelineExecutableInternalRepresentationsKHR(ctx.device, &which, &n, reps.data()),
          "vkGetPipelineExecutableInternalRepresentationsKHR", ctx.id());
    for (uint32_t i = 0; i < n; ++i) {
      const std::string path = (std::filesystem::path(dir) /
                                fmt::format("{}.{}.{}.txt", file_safe(kernel), e, file_safe(reps[i].name))).string();
      std::ofstream out(path, std::ios::binary);
      // Text representations end in a NUL the file does not need.
      size_t size = reps[i].dataSize;
      if (reps[i].isText && size > 0 && data[i][size - 1] == '\0') --size;
      out.write(data[i].data(), std::streamsize(size));
      if (!out) throw Error(fmt::format("SPIRE_VULKAN_PIPELINE_IR: cannot write '{}'", path));
      written.push_back(path);
    }
  }
  return written;
}

}  // namespace spire::rt::vulkan
