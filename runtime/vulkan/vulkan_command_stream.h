// rt::CommandStream for Vulkan: one primary command buffer, recorded once and submitted many times.
//
// Calls are checked and turned into commands at once (descriptor sets are allocated and written then, from
// pools the stream owns, never per submission), but written into the VkCommandBuffer only at finish(): the
// timestamp query pool must be reset at the start of the buffer, and only then is its size known.
#pragma once

#include <memory>
#include <variant>
#include <vector>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"
#include "runtime/vulkan/vulkan_kernel.h"
#include "runtime/vulkan/vulkan_submission.h"

namespace spire::rt::vulkan {

class VulkanCommandStream final : public CommandStream {
 public:
  explicit VulkanCommandStream(std::shared_ptr<Context> ctx);
  ~VulkanCommandStream() override;

  void dispatch(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars, Grid grid) override;
  void barrier() override;
  void copy(BufferView src, BufferView dst) override;
  void fill(BufferView dst, uint32_t pattern) override;
  uint32_t timestamp() override;
  double elapsed_ms(uint32_t from, uint32_t to) const override;
  void finish() override;

  // Device::submit: finishes if needed, waits for this stream's previous submission, submits.
  std::shared_ptr<Submission> submit();
  const Context& context() const { return *ctx_; }

 private:
  struct DispatchCmd {
    std::shared_ptr<Pipeline> pipeline;
    VkDescriptorSet set;
    std::vector<uint8_t> push;
    std::array<uint32_t, 3> groups;
  };
  struct BarrierCmd {};
  struct CopyCmd { VkBuffer src, dst; VkBufferCopy region; };
  struct FillCmd { VkBuffer dst; VkDeviceSize offset, size; uint32_t pattern; };
  struct TimestampCmd { uint32_t index; };
  using Command = std::variant<DispatchCmd, BarrierCmd, CopyCmd, FillCmd, TimestampCmd>;

  void check_recording(const char* what) const;
  VkDescriptorSet allocate_set(const Pipeline& p);
  void encode();

  std::shared_ptr<Context> ctx_;
  std::vector<Command> commands_;
  bool finished_ = false;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  uint32_t sets_left_ = 0, descriptors_left_ = 0;  // in descriptor_pools_.back()
  uint32_t timestamps_ = 0;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;
  std::shared_ptr<Submission> last_;
};

}  // namespace spire::rt::vulkan
