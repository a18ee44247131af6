// A recorded CUDA command stream. Recording validates everything and prepares each launch's packed
// parameter array once; finish() then captures the whole list into a CUDA graph, which submit() launches
// with a single call. When capture is unavailable or fails (old driver, SPIRE_CUDA_GRAPHS=0), submit()
// replays the prepared list instead: still no allocation or validation per replay.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "runtime/cuda/cuda_context.h"

namespace spire::rt::cuda {

class CudaCommandStream final : public CommandStream {
 public:
  explicit CudaCommandStream(std::shared_ptr<Context> ctx);
  // It owns its graph and events, destroyed with it: never copied.
  CudaCommandStream(const CudaCommandStream&) = delete;
  CudaCommandStream& operator=(const CudaCommandStream&) = delete;
  ~CudaCommandStream() override;

  // Recording: each call validated and its launch prepared at once.
  void dispatch(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars, Grid grid) override;
  void copy(BufferView src, BufferView dst) override;
  void fill(BufferView dst, uint32_t pattern) override;
  // Launches on one stream run in order: a barrier records nothing.
  void barrier() override;
  uint32_t timestamp() override;
  // Capture into a graph.
  void finish() override;
  // Enqueues the recorded work on `stream` (finishing the recording first). Used by CudaDevice::submit.
  void enqueue(CUstream stream);
  double elapsed_ms(uint32_t from, uint32_t to) const override;

  const Context* context() const { return ctx_.get(); }
  bool uses_graph() const { return exec_ != nullptr; }
  // Why the stream replays a launch list instead of a graph ("" when it uses a graph or is not finished).
  const std::string& graph_fallback_reason() const { return graph_fallback_reason_; }

 private:
  struct alignas(64) TensorMapBytes { unsigned char bytes[kTensorMapBytes]; };  // a CUtensorMap
  struct Launch {
    CUfunction fn;
    std::string kernel;  // for error messages
    std::array<unsigned, 3> grid;
    std::array<unsigned, 3> block;
    uint32_t dynamic_shared = 0;        // bytes
    std::vector<CUdeviceptr> pointers;  // one per buffer binding, offset applied
    std::vector<uint8_t> scalar_bytes;  // packed per KernelInterface::scalar_offsets()
    std::vector<uint32_t> scalar_offsets;
    std::vector<TensorMapBytes> tensor_maps;  // encoded at dispatch, passed by value after the scalars
    std::vector<void*> params;          // cuLaunchKernel's kernelParams, built by finish()
    bool waits_for_previous = false;    // CudaKernel::waits_for_previous
    // Byte ranges of the buffers it reads before its wait (KernelInterface::Buffer::read_before_wait) and of those it
    // writes: a launch overlaps the one before only where that one writes none of the first.
    std::vector<std::pair<CUdeviceptr, uint64_t>> read_early, written;
  };
  struct Copy { CUdeviceptr src, dst; uint64_t bytes; };
  struct Fill { CUdeviceptr dst; uint64_t words; uint32_t tail_bytes; uint32_t pattern; };  // tail: a cut-off last word
  struct Timestamp { uint32_t index; };
  using Command = std::variant<Launch, Copy, Fill, Timestamp>;

  void require_recording(const char* what) const;
  TensorMapBytes encode_tensor_map(const KernelInterface& ir, const KernelInterface::TensorMap& m, const BufferView& view,
                                   CUdeviceptr base) const;
  CUdeviceptr view_pointer(const BufferView& v, const char* what, const std::string& where) const;
  void replay(CUstream stream, bool capturing);
  void try_capture();

  std::shared_ptr<Context> ctx_;
  std::vector<Command> commands_;
  std::vector<CUevent> timestamps_;
  bool finished_ = false;
  bool programmatic_ = false;  // kernels that follow a kernel launch programmatically (decided by finish())
  bool submitted_ = false;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::string graph_fallback_reason_;
};

}  // namespace spire::rt::cuda
