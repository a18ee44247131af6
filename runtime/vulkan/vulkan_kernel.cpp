#include "runtime/vulkan/vulkan_kernel.h"

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_pipeline_stats.h"

namespace spire::rt::vulkan {

Pipeline::~Pipeline() {
  const DeviceFunctions& fn = ctx->fn;
  if (pipeline) fn.vkDestroyPipeline(ctx->device, pipeline, nullptr);
  if (layout) fn.vkDestroyPipelineLayout(ctx->device, layout, nullptr);
  if (set_layout) fn.vkDestroyDescriptorSetLayout(ctx->device, set_layout, nullptr);
  if (module) fn.vkDestroyShaderModule(ctx->device, module, nullptr);
}

namespace {

// Limits a kernel can exceed, checked before the driver sees it so the message names kernel and device.
void check_limits(const Context& ctx, const KernelInterface& k) {
  const DeviceInfo& d = ctx.info();
  auto fail = [&](const std::string& what) {
    return Error(fmt::format("kernel '{}' {} on {} ({})", k.name, what, d.id, d.name));
  };
  for (int i = 0; i < 3; ++i)
    if (k.workgroup_size[i] == 0 || k.workgroup_size[i] > d.max_workgroup_size[i])
      throw fail(fmt::format("has workgroup size {} in dimension {}, beyond the limit {}", k.workgroup_size[i], "xyz"[i],
                             d.max_workgroup_size[i]));
  if (uint64_t(k.workgroup_size[0]) * k.workgroup_size[1] * k.workgroup_size[2] > d.max_workgroup_invocations)
    throw fail(fmt::format("has {} invocations per workgroup, beyond the limit {}", k.workgroup_invocations(),
                           d.max_workgroup_invocations));
  if (k.shared_bytes > d.shared_memory_bytes)
    throw fail(fmt::format("uses {} bytes of workgroup memory, beyond the limit {}", k.shared_bytes, d.shared_memory_bytes));
  if (k.buffers.size() > ctx.facts.max_storage_buffers_per_stage)
    throw fail(fmt::format("binds {} storage buffers, beyond the limit {}", k.buffers.size(),
                           ctx.facts.max_storage_buffers_per_stage));
  if (k.scalar_block_bytes() > ctx.facts.max_push_constant_bytes)
    throw fail(fmt::format("has {} bytes of scalar parameters, beyond the push-constant limit {}", k.scalar_block_bytes(),
                           ctx.facts.max_push_constant_bytes));
  for (const auto& s : k.scalars)
    if (s.type == DType::F16 && !ctx.facts.has_push_constant_16bit)
      throw MissingFeature(fmt::format("kernel '{}' has the f16 scalar '{}', but {} ({}) lacks 16-bit push constants",
                                       k.name, s.name, d.id, d.name));
}

std::shared_ptr<Pipeline> make_pipeline(Context& ctx, const KernelInterface& k, const std::vector<uint32_t>& words) {
  const std::string& id = ctx.id();
  auto p = std::make_shared<Pipeline>();
  p->ctx = &ctx;
  p->bindings = uint32_t(k.buffers.size());
  p->push_constant_bytes = k.scalar_block_bytes();

  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = words.size() * sizeof(uint32_t);
  mi.pCode = words.data();
  check(ctx.fn.vkCreateShaderModule(ctx.device, &mi, nullptr, &p->module), "vkCreateShaderModule", id);

  std::vector<VkDescriptorSetLayoutBinding> bindings(p->bindings);
  for (uint32_t i = 0; i < p->bindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = p->bindings;
  li.pBindings = bindings.data();
  check(ctx.fn.vkCreateDescriptorSetLayout(ctx.device, &li, nullptr, &p->set_layout), "vkCreateDescriptorSetLayout", id);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, p->push_constant_bytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &p->set_layout;
  pli.pushConstantRangeCount = p->push_constant_bytes ? 1 : 0;
  pli.pPushConstantRanges = &range;
  check(ctx.fn.vkCreatePipelineLayout(ctx.device, &pli, nullptr, &p->layout), "vkCreatePipelineLayout", id);

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = p->module;
  ci.stage.pName = "main";
  ci.layout = p->layout;
  if (ctx.pipeline_stats) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  if (!ctx.pipeline_ir_dir.empty()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
  // Storage buffers without bounds checks; the other fields stay zero, the device's defaults.
  VkPipelineRobustnessCreateInfoEXT robustness{VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT};
  if (ctx.unchecked_buffers) {
    robustness.storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT;
    ci.pNext = &robustness;
  }
  // Whether the pipeline cache held it, for the start-up profile (core in Vulkan 1.3).
  VkPipelineCreationFeedback feedback{}, stage_feedback{};
  VkPipelineCreationFeedbackCreateInfo feedback_info{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
  if (ctx.creation_feedback) {
    feedback_info.pPipelineCreationFeedback = &feedback;
    feedback_info.pipelineStageCreationFeedbackCount = 1;
    feedback_info.pPipelineStageCreationFeedbacks = &stage_feedback;
    feedback_info.pNext = ci.pNext;
    ci.pNext = &feedback_info;
  }
  VkResult r = ctx.fn.vkCreateComputePipelines(ctx.device, ctx.pipeline_cache().handle(), 1, &ci, nullptr, &p->pipeline);
  if (r < 0)
    throw Error(fmt::format("vkCreateComputePipelines failed with {} on {} for kernel '{}'", result_name(r), id, k.name));
  std::optional<bool> hit;
  if (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT)
    hit = (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT) != 0;
  ctx.pipeline_cache().note_pipeline_created(hit);
  if (ctx.pipeline_stats)
    for (const std::string& line : pipeline_statistics(ctx, p->pipeline))
      fmt::print(stderr, "spire: {} pipeline '{}': {}\n", id, k.name, line);
  if (!ctx.pipeline_ir_dir.empty()) {
    const std::vector<std::string> files = write_pipeline_representations(ctx, p->pipeline, k.name, ctx.pipeline_ir_dir);
    fmt::print(stderr, "spire: {} pipeline '{}': {} internal representations written to {}\n", id, k.name, files.size(),
               ctx.pipeline_ir_dir);
  }
  return p;
}

}  // namespace

std::shared_ptr<Kernel> load_kernel(const std::shared_ptr<Context>& ctx, const KernelBinary& binary) {
  const DeviceInfo& d = ctx->info();
  const KernelInterface& k = binary.interface;
  if (binary.format != BinaryFormat::Spirv || binary.spirv.empty())
    throw Error(fmt::format("kernel '{}' is {}; {} ({}) loads SPIR-V", k.name, binary_format_name(binary.format), d.id, d.name));
  if (!d.features.contains(k.features)) throw MissingFeature(missing_feature_message(k, d));
  check_limits(*ctx, k);
  {
    std::lock_guard lock(ctx->pipeline_mutex);
    if (auto it = ctx->pipelines.find(binary.spirv); it != ctx->pipelines.end())
      return std::make_shared<VulkanKernel>(ctx, k, it->second);
  }
  // Built outside the lock, so that several threads create pipelines at once (PlanExecutor loads a plan's distinct
  // kernels in parallel; the pipeline cache is internally synchronized, as it is created without
  // VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT). Two threads building the same module keep the first.
  std::shared_ptr<Pipeline> built = make_pipeline(*ctx, k, binary.spirv);
  std::lock_guard lock(ctx->pipeline_mutex);
  return std::make_shared<VulkanKernel>(ctx, k, ctx->pipelines.emplace(binary.spirv, built).first->second);
}

}  // namespace spire::rt::vulkan
