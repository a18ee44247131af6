#include "runtime/vulkan/vulkan_command_stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_buffer.h"

namespace spire::rt::vulkan {

namespace {

constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

void global_barrier(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, kWorkStages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, kWorkStages,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT);
}

// Between two runs of dispatches alone, a barrier orders the compute stage and shader accesses only: one that names
// the transfer stage too makes NVIDIA's driver wait for more than the dispatches before it.
// SPIRE_VULKAN_BARRIERS=full gives every barrier both stages (to compare).
void compute_barrier(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

bool full_barriers_forced() {
  const char* v = std::getenv("SPIRE_VULKAN_BARRIERS");
  return v && std::strcmp(v, "full") == 0;
}

// Device writes reach the host only through a barrier to the host stage; the fence wait then orders them.
void barrier_to_host(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, kWorkStages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
}

}  // namespace

VulkanCommandStream::VulkanCommandStream(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = ctx_->facts.queue_family;
  check(ctx_->fn.vkCreateCommandPool(ctx_->device, &pi, nullptr, &pool_), "vkCreateCommandPool", ctx_->id());
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkResult r = ctx_->fn.vkAllocateCommandBuffers(ctx_->device, &ai, &cmd_);
  if (r != VK_SUCCESS) {
    ctx_->fn.vkDestroyCommandPool(ctx_->device, pool_, nullptr);
    check(r, "vkAllocateCommandBuffers", ctx_->id());
  }
}

VulkanCommandStream::~VulkanCommandStream() {
  // The command buffer, descriptor sets and queries may not be freed while a submission uses them, even when a
  // caller's Fence still holds that submission. A destructor cannot throw: a lost device was already reported.
  if (last_) {
    try {
      last_->wait();
    } catch (const std::exception&) {
    }
  }
  last_.reset();
  if (query_pool_) ctx_->fn.vkDestroyQueryPool(ctx_->device, query_pool_, nullptr);
  for (VkDescriptorPool p : descriptor_pools_) ctx_->fn.vkDestroyDescriptorPool(ctx_->device, p, nullptr);
  ctx_->fn.vkDestroyCommandPool(ctx_->device, pool_, nullptr);
}

void VulkanCommandStream::check_recording(const char* what) const {
  if (finished_)
    throw Error(fmt::format("{} on a command stream of {} that is already finished (recorded streams are immutable; "
                            "record a new one)",
                            what, ctx_->id()));
}

VkDescriptorSet VulkanCommandStream::allocate_set(const Pipeline& p) {
  uint32_t need = std::max<uint32_t>(p.bindings, 1);
  if (descriptor_pools_.empty() || sets_left_ == 0 || descriptors_left_ < need) {
    // Pools grow geometrically so a long stream (a training step) needs only a few.
    uint32_t sets = descriptor_pools_.empty() ? 16 : std::min<uint32_t>(1024, 16u << descriptor_pools_.size());
    uint32_t descriptors = std::max(sets * 8, need);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
    VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    ci.maxSets = sets;
    ci.poolSizeCount = 1;
    ci.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(ctx_->fn.vkCreateDescriptorPool(ctx_->device, &ci, nullptr, &pool), "vkCreateDescriptorPool", ctx_->id());
    descriptor_pools_.push_back(pool);
    sets_left_ = sets;
    descriptors_left_ = descriptors;
  }
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = descriptor_pools_.back();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &p.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(ctx_->fn.vkAllocateDescriptorSets(ctx_->device, &ai, &set), "vkAllocateDescriptorSets", ctx_->id());
  sets_left_ -= 1;
  descriptors_left_ -= need;
  return set;
}

void VulkanCommandStream::dispatch(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars,
                                   Grid grid) {
  check_recording("dispatch");
  auto* vk = dynamic_cast<const VulkanKernel*>(&k);
  const std::string& id = ctx_->id();
  if (!vk) throw Error(fmt::format("dispatch on {}: the kernel was not compiled for a Vulkan device", id));
  const KernelInterface& ir = vk->interface();
  if (&vk->context() != ctx_.get())
    throw Error(fmt::format("dispatch of kernel '{}': compiled for {}, dispatched on {}", ir.name, vk->context().id(), id));
  if (buffers.size() != ir.buffers.size())
    throw Error(fmt::format("dispatch of kernel '{}' on {}: it takes {} buffers, {} were bound", ir.name, id,
                            ir.buffers.size(), buffers.size()));
  uint32_t scalar_bytes = uint32_t((scalars.bytes().size() + 3) / 4 * 4);
  if (scalars.count() != ir.scalars.size() || scalar_bytes != ir.scalar_block_bytes())
    throw Error(fmt::format("dispatch of kernel '{}' on {}: it takes {} scalars ({} bytes), {} were given ({} bytes)",
                            ir.name, id, ir.scalars.size(), ir.scalar_block_bytes(), scalars.count(), scalar_bytes));

  const DeviceInfo& d = ctx_->info();
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferView& v = buffers[i];
    std::string what = fmt::format("dispatch of kernel '{}', buffer {} ('{}')", ir.name, i, ir.buffers[i].name);
    const VulkanBuffer& b = vulkan_buffer(v.buffer, *ctx_, what);
    if (v.offset > b.size() || v.bytes() > b.size() - v.offset)
      throw Error(fmt::format("{}: view of {} bytes at offset {} overruns the buffer of {} bytes on {}", what, v.bytes(),
                              v.offset, b.size(), id));
    if (v.offset % d.min_storage_offset_alignment != 0)
      throw Error(fmt::format("{}: offset {} is not a multiple of {}, the storage-buffer offset alignment of {}", what,
                              v.offset, d.min_storage_offset_alignment, id));
    if (v.bytes() > d.max_buffer_bytes)
      throw Error(fmt::format("{}: view of {} bytes exceeds the largest storage-buffer binding of {} bytes on {}", what,
                              v.bytes(), d.max_buffer_bytes, id));
    // An empty view still needs a valid range; the kernel must not touch it, so any word of the buffer will do.
    infos[i] = v.bytes() == 0 ? VkDescriptorBufferInfo{b.handle(), 0, 4} : VkDescriptorBufferInfo{b.handle(), v.offset, v.bytes()};
  }
  std::array<uint32_t, 3> groups{};
  try {
    groups = fold_grid(grid.groups, d.max_workgroup_count);
  } catch (const Error& e) {
    throw Error(fmt::format("dispatch of kernel '{}' on {}: {}", ir.name, id, e.what()));
  }
  if (grid.groups == 0) return;  // nothing to launch

  const Pipeline& p = *vk->pipeline();
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (p.bindings > 0) {
    set = allocate_set(p);
    std::vector<VkWriteDescriptorSet> writes(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
      writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = uint32_t(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    ctx_->fn.vkUpdateDescriptorSets(ctx_->device, uint32_t(writes.size()), writes.data(), 0, nullptr);
  }
  std::vector<uint8_t> push = scalars.bytes();
  push.resize(p.push_constant_bytes, 0);
  commands_.push_back(DispatchCmd{vk->pipeline(), set, std::move(push), groups});
}

void VulkanCommandStream::barrier() {
  check_recording("barrier");
  commands_.push_back(BarrierCmd{});
}

void VulkanCommandStream::copy(BufferView src, BufferView dst) {
  check_recording("copy");
  const std::string& id = ctx_->id();
  const VulkanBuffer& s = vulkan_buffer(src.buffer, *ctx_, "copy source");
  const VulkanBuffer& t = vulkan_buffer(dst.buffer, *ctx_, "copy destination");
  if (src.offset > s.size() || src.bytes() > s.size() - src.offset)
    throw Error(fmt::format("copy on {}: source view of {} bytes at offset {} overruns its buffer of {} bytes", id,
                            src.bytes(), src.offset, s.size()));
  uint64_t n = src.bytes();
  if (dst.size != 0 && dst.size != n)
    throw Error(fmt::format("copy on {}: source has {} bytes but the destination view {}", id, n, dst.size));
  if (dst.offset > t.size() || n > t.size() - dst.offset)
    throw Error(fmt::format("copy on {}: {} bytes at destination offset {} overrun its buffer of {} bytes", id, n,
                            dst.offset, t.size()));
  if (&s == &t && src.offset < dst.offset + n && dst.offset < src.offset + n)
    throw Error(fmt::format("copy on {}: source and destination overlap within one buffer", id));
  if (n == 0) return;
  commands_.push_back(CopyCmd{s.handle(), t.handle(), VkBufferCopy{src.offset, dst.offset, n}});
}

void VulkanCommandStream::fill(BufferView dst, uint32_t pattern) {
  check_recording("fill");
  const std::string& id = ctx_->id();
  const VulkanBuffer& t = vulkan_buffer(dst.buffer, *ctx_, "fill");
  if (dst.offset > t.size() || dst.bytes() > t.size() - dst.offset)
    throw Error(fmt::format("fill on {}: view of {} bytes at offset {} overruns its buffer of {} bytes", id, dst.bytes(),
                            dst.offset, t.size()));
  bool to_end = dst.offset + dst.bytes() == t.size();
  if (dst.offset % 4 != 0 || (!to_end && dst.bytes() % 4 != 0))
    throw Error(fmt::format("fill on {}: offset {} and size {} must be multiples of 4 (fills write 32-bit words)", id,
                            dst.offset, dst.bytes()));
  if (dst.bytes() == 0) return;
  // Up to the end: vk_bytes() is rounded up to whole words, so it covers a ragged tail too. Not VK_WHOLE_SIZE: an
  // adopted buffer may be larger than the part the host lent spire.
  commands_.push_back(FillCmd{t.handle(), dst.offset, to_end ? t.vk_bytes() - dst.offset : dst.bytes(), pattern});
}

uint32_t VulkanCommandStream::timestamp() {
  check_recording("timestamp");
  if (ctx_->facts.timestamp_valid_bits == 0)
    throw Error(fmt::format("{} ({}) cannot time work: its compute queue has no timestamp support", ctx_->id(),
                            ctx_->info().name));
  commands_.push_back(TimestampCmd{timestamps_});
  return timestamps_++;
}

double VulkanCommandStream::elapsed_ms(uint32_t from, uint32_t to) const {
  const std::string& id = ctx_->id();
  if (from >= timestamps_ || to >= timestamps_)
    throw Error(fmt::format("elapsed_ms({}, {}) on {}: the stream recorded {} timestamps", from, to, id, timestamps_));
  if (!last_) throw Error(fmt::format("elapsed_ms on {}: the stream was never submitted", id));
  if (!last_->ready()) throw Error(fmt::format("elapsed_ms on {}: the stream's submission has not completed yet (wait on its fence)", id));
  uint64_t t[2] = {0, 0};
  uint32_t idx[2] = {from, to};
  for (int i = 0; i < 2; ++i)
    check(ctx_->fn.vkGetQueryPoolResults(ctx_->device, query_pool_, idx[i], 1, sizeof(uint64_t), &t[i], sizeof(uint64_t),
                                VK_QUERY_RESULT_64_BIT),
          "vkGetQueryPoolResults", id);
  uint32_t bits = ctx_->facts.timestamp_valid_bits;
  uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  uint64_t ticks = ((t[1] & mask) - (t[0] & mask)) & mask;  // modulo the counter width, in case it wrapped
  return double(ticks) * double(ctx_->facts.timestamp_period_ns) * 1e-6;
}

void VulkanCommandStream::finish() {
  if (finished_) return;
  encode();
  finished_ = true;
}

void VulkanCommandStream::encode() {
  const std::string& id = ctx_->id();
  if (timestamps_ > 0) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = timestamps_;
    check(ctx_->fn.vkCreateQueryPool(ctx_->device, &qi, nullptr, &query_pool_), "vkCreateQueryPool", id);
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};  // no ONE_TIME_SUBMIT: it is replayed
  check(ctx_->fn.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer", id);
  // Where the host can reset the queries, submit() does before each submission: a reset in the command buffer cost
  // the H100 4-5 us at the start of every submission (LeNet's steps back to back: 185-190 -> 181 us a step).
  if (query_pool_ && !ctx_->host_query_reset) ctx_->fn.vkCmdResetQueryPool(cmd_, query_pool_, 0, timestamps_);
  // Work from earlier submissions (other streams, earlier replays of this one) is visible to this one.
  global_barrier(ctx_->fn, cmd_);
  // Which barriers stand between dispatches alone: every command since the barrier before and until the next one
  // is a dispatch (or a timestamp). The barrier at the start orders other submissions' work, whatever it was.
  std::vector<bool> between_dispatches(commands_.size(), false);
  if (!full_barriers_forced()) {
    auto is_transfer = [](const Command& c) {
      return std::holds_alternative<CopyCmd>(c) || std::holds_alternative<FillCmd>(c);
    };
    size_t segment_start = 0;
    bool previous_has_transfer = true;  // the work before the stream is unknown
    for (size_t i = 0; i <= commands_.size(); ++i) {
      if (i < commands_.size() && !std::holds_alternative<BarrierCmd>(commands_[i])) continue;
      bool has_transfer = std::any_of(commands_.begin() + ptrdiff_t(segment_start), commands_.begin() + ptrdiff_t(i), is_transfer);
      // The barrier that opened this segment (at segment_start - 1) sees this segment after it.
      if (segment_start > 0) between_dispatches[segment_start - 1] = !previous_has_transfer && !has_transfer;
      previous_has_transfer = has_transfer;
      segment_start = i + 1;
    }
  }
  const Pipeline* bound = nullptr;
  for (size_t i = 0; i < commands_.size(); ++i) {
    const Command& c = commands_[i];
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, DispatchCmd>) {
            const Pipeline& p = *op.pipeline;
            if (bound != &p) {
              ctx_->fn.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
              bound = &p;
            }
            if (op.set) ctx_->fn.vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &op.set, 0, nullptr);
            if (!op.push.empty())
              ctx_->fn.vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(op.push.size()), op.push.data());
            ctx_->fn.vkCmdDispatch(cmd_, op.groups[0], op.groups[1], op.groups[2]);
          } else if constexpr (std::is_same_v<T, BarrierCmd>) {
            if (between_dispatches[i])
              compute_barrier(ctx_->fn, cmd_);
            else
              global_barrier(ctx_->fn, cmd_);
          } else if constexpr (std::is_same_v<T, CopyCmd>) {
            ctx_->fn.vkCmdCopyBuffer(cmd_, op.src, op.dst, 1, &op.region);
          } else if constexpr (std::is_same_v<T, FillCmd>) {
            ctx_->fn.vkCmdFillBuffer(cmd_, op.dst, op.offset, op.size, op.pattern);
          } else if constexpr (std::is_same_v<T, TimestampCmd>) {
            ctx_->fn.vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_, op.index);
          }
        },
        c);
  }
  barrier_to_host(ctx_->fn, cmd_);
  check(ctx_->fn.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer", id);
}

std::shared_ptr<Submission> VulkanCommandStream::submit() {
  finish();
  if (last_) last_->wait();  // a command buffer may not be pending twice
  if (query_pool_ && ctx_->host_query_reset) ctx_->fn.vkResetQueryPool(ctx_->device, query_pool_, 0, timestamps_);
  VkFence fence = ctx_->acquire_fence();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  try {
    ctx_->submit(si, fence);
  } catch (...) {
    ctx_->recycle_fence(fence);
    throw;
  }
  last_ = std::make_shared<Submission>(ctx_, fence);
  return last_;
}

}  // namespace spire::rt::vulkan
