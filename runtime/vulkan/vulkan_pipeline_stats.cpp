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

// Vulkan's two-call enumeration: `query(&count, nullptr)` for the count, then `query(&count, items)` into `count`
// items made from `blank` (their sType set), each call checked under `what`.
template <class T, class Query>
std::vector<T> enumerate(const Context& ctx, const char* what, T blank, Query query) {
  uint32_t count = 0;
  check(query(&count, nullptr), what, ctx.id());
  std::vector<T> items(count, blank);
  check(query(&count, items.data()), what, ctx.id());
  items.resize(count);
  return items;
}

// The pipeline's executables (one a shader stage, or more where the driver splits one).
std::vector<VkPipelineExecutablePropertiesKHR> executables_of(const Context& ctx, VkPipeline pipeline) {
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  return enumerate(ctx, "vkGetPipelineExecutablePropertiesKHR",
                   VkPipelineExecutablePropertiesKHR{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR},
                   [&](uint32_t* n, VkPipelineExecutablePropertiesKHR* out) {
                     return ctx.fn.vkGetPipelineExecutablePropertiesKHR(ctx.device, &info, n, out);
                   });
}

VkPipelineExecutableInfoKHR executable_info(VkPipeline pipeline, uint32_t index) {
  VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
  which.pipeline = pipeline;
  which.executableIndex = index;
  return which;
}

}  // namespace

std::vector<std::string> pipeline_statistics(const Context& ctx, VkPipeline pipeline) {
  const DeviceFunctions& fn = ctx.fn;
  if (!fn.vkGetPipelineExecutablePropertiesKHR || !fn.vkGetPipelineExecutableStatisticsKHR)
    throw Error(fmt::format("{}: pipeline statistics were not enabled at device creation", ctx.id()));
  const auto executables = executables_of(ctx, pipeline);
  std::vector<std::string> lines;
  for (uint32_t e = 0; e < executables.size(); ++e) {
    const VkPipelineExecutableInfoKHR which = executable_info(pipeline, e);
    const auto stats = enumerate(
        ctx, "vkGetPipelineExecutableStatisticsKHR",
        VkPipelineExecutableStatisticKHR{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR},
        [&](uint32_t* n, VkPipelineExecutableStatisticKHR* out) {
          return fn.vkGetPipelineExecutableStatisticsKHR(ctx.device, &which, n, out);
        });
    std::string line = std::string(executables[e].name) + ":";
    for (uint32_t i = 0; i < stats.size(); ++i)
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
  const size_t count = executables_of(ctx, pipeline).size();
  std::vector<std::string> written;
  for (uint32_t e = 0; e < count; ++e) {
    const VkPipelineExecutableInfoKHR which = executable_info(pipeline, e);
    // The enumeration gives each representation's size; the call after it fills the buffers.
    std::vector<VkPipelineExecutableInternalRepresentationKHR> reps = enumerate(
        ctx, "vkGetPipelineExecutableInternalRepresentationsKHR",
        VkPipelineExecutableInternalRepresentationKHR{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR},
        [&](uint32_t* n, VkPipelineExecutableInternalRepresentationKHR* out) {
          return fn.vkGetPipelineExecutableInternalRepresentationsKHR(ctx.device, &which, n, out);
        });
    uint32_t n = uint32_t(reps.size());
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
