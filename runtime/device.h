// The runtime contract: one small interface every backend implements (runtime/vulkan, runtime/cuda), held to it
// by one conformance suite run against every driver (tests/runtime/conformance).
//
// A Device owns buffers, loads kernels already compiled for it (backends/compile_kernel.h), records command
// streams that can be submitted many times, and times them with its own clock. The runtime knows binaries,
// buffers and grids, never graphs.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/features.h"
#include "runtime/kernel_binary.h"

namespace spire::rt {

// Every runtime failure the user can cause or meet (unknown device, missing feature, out of memory, a
// driver error) is a spire::rt::Error whose message names the device and the problem.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class OutOfMemory : public Error {
 public:
  using Error::Error;
};
class MissingFeature : public Error {
 public:
  using Error::Error;
};
// The caller handed the runtime something unusable (a null handle, a size out of range, a queue without compute):
// theirs to fix, not a driver failure.
class InvalidUse : public Error {
 public:
  using Error::Error;
};

enum class Backend : uint8_t { Vulkan, Cuda };
enum class DeviceType : uint8_t { DiscreteGpu, IntegratedGpu, VirtualGpu, Cpu, Other };
std::string_view backend_name(Backend b);      // "vulkan", "cuda"
std::string_view device_type_name(DeviceType t);  // "discrete GPU", ...

struct DeviceInfo {
  std::string id;           // "vulkan:0", "cuda:0"
  Backend backend = Backend::Vulkan;
  int index = 0;            // N in the id
  std::string name;         // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string vendor;       // "NVIDIA", "AMD", "Intel", "Mesa"
  std::string driver;       // driver name and version
  DeviceType type = DeviceType::Other;
  uint32_t subgroup_size = 0;
  uint32_t shared_memory_bytes = 0;          // per workgroup
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t max_buffer_bytes = 0;             // largest single binding (maxStorageBufferRange on Vulkan)
  // Largest single allocation (maxMemoryAllocationSize on Vulkan, lowered by SPIRE_MAX_ALLOCATION_BYTES); 0: no limit
  // (CUDA). A plan's arena larger than this is allocated in pieces (arena_pieces.h).
  uint64_t max_allocation_bytes = 0;
  // Storage buffers one kernel may bind (maxPerStageDescriptorStorageBuffers on Vulkan; CUDA passes pointers in
  // its 4 KiB parameter space). Lowering splits a launch that would bind more (the final group, fuse.h).
  uint32_t max_kernel_buffers = 8;
  uint64_t memory_bytes = 0;                 // device-local memory
  uint32_t min_storage_offset_alignment = 16; // offsets of buffer views must be multiples of this (16 at least)
  uint32_t compute_capability = 0;           // CUDA: 90 for sm_90; 0 elsewhere
  Features features;                    // what kernels may require
};

enum class Memory : uint8_t {
  DeviceLocal,  // fastest for kernels; upload/download go through staging where needed
  HostVisible,  // mapped memory the host reads and writes directly
  // Device-local memory the host writes directly (mapped() non-null): a discrete GPU's memory through a resizable
  // BAR, an integrated GPU's or lavapipe's memory. Kernels read it at device-memory speed and no copy moves what the
  // host wrote; the host should only write it (reads of write-combined memory crawl). Where a device has no such
  // memory (CUDA, a GPU without BAR access, SPIRE_VULKAN_FORCE_STAGING=1) the buffer is plain DeviceLocal memory
  // with mapped() null, and memory() says so.
  DeviceMapped,
};

// Writes `pattern` over `bytes` bytes of host memory the way Device::fill and CommandStream::fill write a buffer:
// whole little-endian words, a last partial word cut off (its first bytes).
inline void fill_host_bytes(void* data, uint64_t bytes, uint32_t pattern) {
  auto* p = static_cast<unsigned char*>(data);
  for (uint64_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(pattern >> (8 * (i % 4)));
}

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint64_t size() const = 0;
  virtual Memory memory() const = 0;
  // Where the host reads and writes the buffer's bytes directly: never null for Memory::HostVisible (when size() > 0);
  // for DeviceLocal, the address where that memory is host visible too and the runtime mapped it (lavapipe,
  // integrated GPUs on Vulkan), else null. It lets a caller feed and read a recorded stream through copies inside
  // the stream, with a plain memcpy and no transfer of its own. The host may touch these bytes only while no
  // submitted work uses the buffer: what it wrote before submit() is what that submission reads, and what the
  // submission wrote is readable once its fence was waited for.
  virtual void* mapped() const = 0;
};

// A view of part of a buffer, as a kernel binding or a copy operand. size 0 means "to the end".
struct BufferView {
  Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  BufferView() = default;
  BufferView(Buffer& b, uint64_t off = 0, uint64_t sz = 0) : buffer(&b), offset(off), size(sz) {}
  BufferView(const std::shared_ptr<Buffer>& b, uint64_t off = 0, uint64_t sz = 0) : buffer(b.get()), offset(off), size(sz) {}
  uint64_t bytes() const { return size ? size : buffer->size() - offset; }
};

// A kernel loaded on one device.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Its interface (kernel_interface.h): buffers, scalars, workgroup size, features.
  virtual const KernelInterface& interface() const = 0;
};

// The launch size a caller asks for; the runtime turns it into a grid within the device's limits,
// folding into 2D/3D when one dimension would exceed maxComputeWorkGroupCount.
struct Grid {
  uint64_t groups = 1;  // logical workgroups (the kernel sees linear ids 0..groups-1, maybe more; see kir)
  static Grid threads(uint64_t n, uint32_t workgroup_invocations) {
    return Grid{n == 0 ? 0 : (n + workgroup_invocations - 1) / workgroup_invocations};
  }
  static Grid workgroups(uint64_t g) { return Grid{g}; }
};

// Folds a 1D count of workgroups into (x, y, z) with x*y*z >= groups, each within max_count. Shared by
// every runtime so all fold identically; throws Error when even three dimensions cannot hold it.
std::array<uint32_t, 3> fold_grid(uint64_t groups, const std::array<uint32_t, 3>& max_count);

// Argument values of the kernel's scalar parameters, packed per KernelInterface::scalar_offsets().
class ScalarArgs {
 public:
  ScalarArgs& u32(uint32_t v) { return push(&v, 4); }
  ScalarArgs& i32(int32_t v) { return push(&v, 4); }
  ScalarArgs& f32(float v) { return push(&v, 4); }
  ScalarArgs& i64(int64_t v) { return push(&v, 8); }
  ScalarArgs& f64(double v) { return push(&v, 8); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t count() const { return count_; }

 private:
  ScalarArgs& push(const void* p, size_t n);
  std::vector<uint8_t> bytes_;
  size_t count_ = 0;
};

// A recorded sequence of work. Record once, submit many times: replaying costs a few microseconds per
// dispatch instead of tens for a fresh submission.
class CommandStream {
 public:
  virtual ~CommandStream() = default;
  // Binds buffers in the kernel's declaration order and launches `grid`. Throws Error on a binding count
  // or scalar count mismatch, or a misaligned view offset.
  virtual void dispatch(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars, Grid grid) = 0;
  // Makes all earlier writes visible to all later reads and writes (compute and copies).
  virtual void barrier() = 0;
  // Same byte count (dst.size 0 = src.bytes()), at any byte offsets; the two views must not overlap.
  virtual void copy(BufferView src, BufferView dst) = 0;
  // Every 32-bit word set to pattern: offset and size are multiples of 4, except that a view reaching the end of
  // its buffer may end in a partial word, which takes the pattern's first (little-endian) bytes.
  virtual void fill(BufferView dst, uint32_t pattern) = 0;
  // Records a device timestamp; returns its index. After the stream completes, elapsed_ms(a, b) reads the
  // device time between two timestamps of the last completed submission.
  virtual uint32_t timestamp() = 0;
  virtual double elapsed_ms(uint32_t from, uint32_t to) const = 0;
  // Ends recording; later dispatch/copy calls throw. submit() finishes it implicitly.
  virtual void finish() = 0;
};

class Fence {
 public:
  virtual ~Fence() = default;
  virtual void wait() = 0;
  virtual bool ready() = 0;
};

// How often the host handed work to a device and how often it blocked until the device was done, since the device
// was opened. Each is a round trip of tens of microseconds on a GPU, the cost that recorded streams and mapped
// buffers exist to avoid; tests read the counts to hold a training step to one submit and one wait.
struct SyncCounts {
  uint64_t submits = 0;  // submit() of a stream, and each synchronous transfer or fill that ran on the device
  uint64_t waits = 0;    // wait() on a fence not yet seen complete, wait_idle(), and a synchronous transfer's or fill's
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual SyncCounts sync_counts() const = 0;

  virtual std::shared_ptr<Buffer> alloc(uint64_t bytes, Memory memory = Memory::DeviceLocal) = 0;
  // Synchronous transfers (they wait for the device); offsets in bytes.
  virtual void upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset = 0) = 0;
  virtual void download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset = 0) = 0;
  virtual void fill(Buffer& dst, uint32_t pattern) = 0;  // the whole buffer, as CommandStream::fill fills a view
  // Memory another library allocated on this device in the same address space: on CUDA a device pointer of the
  // device's primary context, which spire retains and PyTorch uses (a torch CUDA tensor's data_ptr()). These copy
  // `bytes` between that address and a buffer (at `offset`) on the device's own queue, behind everything submitted
  // before and ahead of what is submitted after, and return without waiting: wait_idle(), or the fence of a later
  // submit(), covers them. The caller orders the other library's work: its writes of `address` are complete before
  // copy_from_address() is called, and it reads what copy_to_address() wrote only after that wait. A Vulkan device
  // takes the CUDA addresses of its own GPU where both drivers share memory (rt::cuda_peer, runtime/cuda_peer.h),
  // through the host's ordering of the two (runtime/vulkan/vulkan_cuda_bridge.h); other devices throw InvalidUse.
  virtual void copy_from_address(Buffer& dst, uint64_t address, uint64_t bytes, uint64_t offset = 0);
  virtual void copy_to_address(const Buffer& src, uint64_t address, uint64_t bytes, uint64_t offset = 0);
  // Ordering against another library's queue on this device (on CUDA a CUstream of the primary context, as
  // torch.cuda.current_stream().cuda_stream; 0 is the legacy default stream), kept on the device with no host wait:
  // after wait_for_stream(), work enqueued on this device starts only once everything enqueued on `stream` so far is
  // done; after signal_stream(), work enqueued on `stream` starts only once everything enqueued on this device so far
  // (submitted steps, address copies) is done. So a caller hands values over without blocking: wait_for_stream,
  // copy_from_address, submit, copy_to_address, signal_stream. Devices without such queues throw InvalidUse.
  virtual void wait_for_stream(uint64_t stream);
  virtual void signal_stream(uint64_t stream);

  // The binary format this device loads (SPIR-V on Vulkan, PTX on CUDA).
  BinaryFormat binary_format() const { return info().backend == Backend::Cuda ? BinaryFormat::Ptx : BinaryFormat::Spirv; }
  // Loads a compiled kernel (backends/compile_kernel.h compiles one; a bundle stores them). Throws
  // MissingFeature when the kernel needs what the device lacks (naming kernel, feature and device) and Error for a
  // binary of another format, a kernel beyond the device's limits, or one the driver rejects.
  virtual std::shared_ptr<Kernel> load(const KernelBinary& binary) = 0;
  // What the device's disk cache of compiled kernels did since it opened (Vulkan's pipeline cache file, CUDA's cubins),
  // one line for the start-up profile; "" for a device without one.
  virtual std::string kernel_cache_summary() const { return {}; }

  virtual std::unique_ptr<CommandStream> record() = 0;
  // Submits a recorded stream (a stream may be submitted again once its previous submission completed).
  virtual std::unique_ptr<Fence> submit(CommandStream& s) = 0;
  void run(CommandStream& s) { submit(s)->wait(); }
  virtual void wait_idle() = 0;

  // Convenience: record, submit and wait for one dispatch.
  void dispatch_now(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars, Grid grid);
};

// All devices of all backends present, in name order (vulkan:0.., cuda:0..). Backends that cannot load
// (no Vulkan loader, no libcuda) contribute nothing; this never throws for a missing driver.
std::vector<DeviceInfo> list_devices();

// Opens a device by name ("vulkan:0", "cuda:1") or, for "" or "default", the best present: discrete GPU,
// then integrated, then virtual, then CPU (CUDA before Vulkan on the same discrete GPU). Throws Error for an
// unknown or malformed name (listing the names that exist) and when no device is present.
std::unique_ptr<Device> open_device(const std::string& name = "");

// Removes the features named in the environment variable SPIRE_MASK_FEATURES (a comma list of kir feature
// names such as "float64,float16") from `available`, so users and tests can check that kernels are refused
// clearly where a feature is missing. Unknown names are reported on stderr and ignored. Both runtimes apply
// it to every device they list and open.
Features apply_feature_mask(Features available);

// `driver`'s largest single allocation (0: none), lowered to the environment variable SPIRE_MAX_ALLOCATION_BYTES
// where that is set (a byte count), so that tests can make a small device's arena come in pieces. A malformed value is
// reported on stderr and ignored.
uint64_t apply_allocation_cap(uint64_t driver);

// Shared by both runtimes: the message MissingFeature carries.
std::string missing_feature_message(const KernelInterface& k, const DeviceInfo& d);

}  // namespace spire::rt
