// A stand-in libcuda.so.1 for testing runtime/cuda's plumbing on machines without a GPU.
//
// It models the slice of the driver runtime/cuda uses: one device, host memory as "device" memory (so
// uploads, downloads, fills and copies give real results), pinned host memory whose device address is its host
// address (unified addressing), streams that run work immediately, stream
// capture into graphs that replay it, events stamped with the host clock, and modules parsed and kernels run
// by the PTX interpreter of tests/backends/ptx/interp (so kernels compute real results, slowly, and an out-of-bounds
// access faults with CUDA_ERROR_ILLEGAL_ADDRESS as on a GPU). Launches are checked against the entry's
// signature and .reqntid and logged for the tests to inspect (mock_cuda_* functions at the end). Tensor maps
// (cuTensorMapEncodeTiled) are written in the mock's own format (mock_tensor_map.h), which the interpreter's tensor
// copies read. External memory (cuImportExternalMemory of an opaque file descriptor, as a Vulkan driver exports it) is
// the descriptor's pages mapped into the process. An opaque descriptor means what its exporter says; this mock takes
// lavapipe's (Mesa's os_memory_fd: a file that starts with its own size and the offset of the memory's first byte), so
// the Vulkan-CUDA bridge (runtime/vulkan/vulkan_cuda_bridge.h) runs for real between lavapipe and this mock. The device's UUID is
// SPIRE_MOCK_CUDA_UUID (32 hex digits, as a Vulkan deviceUUID printed without dashes), zeros without it.
//
// Misbehaviour on purpose, keyed by the entry name: "mock_reject" modules fail to load with a JIT log,
// "mock_fault" launches leave a sticky CUDA_ERROR_ILLEGAL_ADDRESS, "mock_no_capture" launches cannot be
// captured, "mock_noexec" launches are logged but not run. Every call that needs a context fails with CUDA_ERROR_INVALID_CONTEXT when the calling thread
// has none current, which checks that the runtime makes its context current on every entry point.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/cuda/mock_driver/mock_tensor_map.h"
#include "tests/backends/ptx/interp/ptx_interp.h"

namespace {

using CUresult = int;
constexpr CUresult OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
                   INVALID_CONTEXT = 201, INVALID_PTX = 218, INVALID_HANDLE = 400, NOT_FOUND = 500,
                   NOT_READY = 600, ILLEGAL_ADDRESS = 700, CAPTURE_INVALIDATED = 901;
// The device's memory: 1 GiB, or SPIRE_MOCK_CUDA_MEMORY bytes, so a test can make a device run out of memory (live
// device allocations past it fail with CUDA_ERROR_OUT_OF_MEMORY, as a real GPU's would).
uint64_t total_memory() {
  static const uint64_t bytes = [] {
    const char* v = std::getenv("SPIRE_MOCK_CUDA_MEMORY");
    return v && *v ? std::strtoull(v, nullptr, 10) : uint64_t(1) << 30;
  }();
  return bytes;
}
constexpr int kSharedOptIn = 227 * 1024;  // an H100's shared memory per block with the opt-in

namespace interp = spire::ptx::interp;

struct Module;
struct Entry {
  std::string name;
  std::vector<int> param_sizes;
  unsigned reqntid[3] = {0, 0, 0};
  int max_dynamic_shared = 48 * 1024;  // cuFuncSetAttribute raises it, up to the device's opt-in limit
  const interp::Entry* code = nullptr;
  Module* module = nullptr;
};
struct Module {
  std::unique_ptr<interp::Module> program;
  std::vector<std::unique_ptr<Entry>> entries;
};
struct Event { bool recorded = false; std::chrono::steady_clock::time_point at; };
using Op = std::function<CUresult()>;
struct Graph { std::vector<Op> ops; };
struct Stream { bool capturing = false; bool invalidated = false; std::vector<Op> captured; };

struct LaunchRecord {
  std::string name;
  unsigned grid[3], block[3];
  std::vector<uint64_t> args;  // each parameter's first 8 bytes (a scalar or pointer: its value)
  bool programmatic = false;   // launched by cuLaunchKernelEx with programmatic stream serialization
};

struct State {
  std::mutex m;
  bool initialized = false;
  int retained = 0;
  CUresult sticky = OK;
  std::map<uint64_t, uint64_t> allocations;  // base -> bytes, of device and pinned host memory alike
  std::map<uint64_t, bool> pinned;            // the bases of cuMemHostAlloc's allocations
  struct Imported {
    void* mapping;
    uint64_t mapped_bytes, bytes;  // the whole file's, and the memory's from its first byte
  };
  std::map<void*, Imported> imported;  // cuImportExternalMemory's, by the memory's first byte
  int module_loads = 0;
  int stream_waits = 0;  // cuStreamWaitEvent calls outside capture
  std::vector<LaunchRecord> launches;
  std::string last_fault;
};
State& st() {
  static State s;
  return s;
}
int g_context_tag = 0;  // the one primary context: its address is the handle
thread_local void* t_current = nullptr;

bool has_context() { return t_current == &g_context_tag && st().retained > 0; }

#define NEED_CONTEXT()                            \
  do {                                            \
    if (!st().initialized) return NOT_INITIALIZED; \
    if (!has_context()) return INVALID_CONTEXT;   \
    if (st().sticky) return st().sticky;          \
  } while (0)

bool in_allocation(uint64_t p, uint64_t bytes) {
  auto& a = st().allocations;
  auto it = a.upper_bound(p);
  if (it == a.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

// Runs `op` now, or appends it to the capture of `s`.
CUresult submit(void* s, Op op) {
  auto* stream = static_cast<Stream*>(s);
  if (stream && stream->capturing) {
    if (stream->invalidated) return CAPTURE_INVALIDATED;
    stream->captured.push_back(std::move(op));
    return OK;
  }
  return op();
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  st().initialized = true;
  return OK;
}
CUresult cuDriverGetVersion(int* v) {
  *v = 12080;
  return OK;
}
CUresult cuGetErrorName(CUresult r, const char** s) {
  switch (r) {
    case OK: *s = "CUDA_SUCCESS"; break;
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; break;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
    case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CAPTURE_INVALIDATED: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    default: *s = nullptr; return INVALID_VALUE;
  }
  return OK;
}
CUresult cuGetErrorString(CUresult r, const char** s) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != OK) {
    *s = nullptr;
    return INVALID_VALUE;
  }
  *s = "mock driver error";
  return OK;
}
CUresult cuDeviceGetCount(int* n) {
  if (!st().initialized) return NOT_INITIALIZED;
  *n = 1;
  return OK;
}
CUresult cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return INVALID_DEVICE;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetUuid(char* uuid, int dev) {
  if (dev != 0) return INVALID_DEVICE;
  std::memset(uuid, 0, 16);
  const char* hex = std::getenv("SPIRE_MOCK_CUDA_UUID");
  for (int i = 0; hex && i < 16 && std::strlen(hex) >= size_t(2 * i + 2); ++i)
    uuid[i] = char(std::stoi(std::string(hex + 2 * i, 2), nullptr, 16));
  return OK;
}
CUresult cuDeviceGetName(char* name, int len, int dev) {
  if (dev != 0) return INVALID_DEVICE;
  std::snprintf(name, size_t(len), "Mock GPU");
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (dev != 0) return INVALID_DEVICE;
  switch (attr) {
    case 1: *v = 1024; break;                 // max threads per block
    case 2: case 3: *v = 1024; break;         // block dims x, y
    case 4: *v = 64; break;                   // block dim z
    case 5: *v = 2147483647; break;           // grid x
    case 6: case 7: *v = 65535; break;        // grid y, z
    case 8: *v = 49152; break;                // shared memory per block
    case 10: *v = 32; break;                  // warp
    case 16: *v = 132; break;                 // SMs
    case 18: *v = 0; break;                   // integrated
    case 75: *v = 9; break;                   // cc major
    case 76: *v = 0; break;                   // cc minor
    case 97: *v = kSharedOptIn; break;        // shared memory per block with the opt-in
    default: return INVALID_VALUE;
  }
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  *bytes = total_memory();
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  if (!st().initialized) return NOT_INITIALIZED;
  ++st().retained;
  *ctx = &g_context_tag;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  if (st().retained <= 0) return INVALID_CONTEXT;
  --st().retained;
  return OK;
}
CUresult cuCtxSetCurrent(void* ctx) {
  if (ctx && ctx != &g_context_tag) return INVALID_CONTEXT;
  t_current = ctx;
  return OK;
}

CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned n, int* options, void** values) {
  NEED_CONTEXT();
  std::string ptx(static_cast<const char*>(image));
  char* error_log = nullptr;
  size_t error_size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 5) error_log = static_cast<char*>(values[i]);
    if (options[i] == 6) error_size = size_t(reinterpret_cast<uintptr_t>(values[i]));
  }
  if (ptx.find(".visible .entry mock_reject") != std::string::npos) {
    if (error_log && error_size) std::snprintf(error_log, error_size, "ptxas fatal   : mock rejected this module");
    return INVALID_PTX;
  }
  auto m = std::make_unique<Module>();
  try {
    m->program = interp::Module::parse(ptx);
  } catch (const interp::Error& e) {
    if (error_log && error_size) std::snprintf(error_log, error_size, "%s", e.what());
    return INVALID_PTX;
  }
  for (const interp::Entry& ie : m->program->entries()) {
    auto e = std::make_unique<Entry>();
    e->name = ie.name;
    for (const auto& p : ie.params) e->param_sizes.push_back(p.bytes);
    for (int d = 0; d < 3; ++d) e->reqntid[d] = ie.reqntid[d];
    e->code = &ie;
    e->module = m.get();
    m->entries.push_back(std::move(e));
  }
  std::lock_guard lock(st().m);
  ++st().module_loads;
  *module = m.release();
  return OK;
}
CUresult cuModuleGetFunction(void** fn, void* module, const char* name) {
  NEED_CONTEXT();
  for (auto& e : static_cast<Module*>(module)->entries)
    if (e->name == name) {
      *fn = e.get();
      return OK;
    }
  return NOT_FOUND;
}
CUresult cuModuleUnload(void* module) {
  delete static_cast<Module*>(module);
  return OK;
}
CUresult cuFuncGetAttribute(int* v, int attr, void* fn) {
  NEED_CONTEXT();
  if (attr == 0) *v = 1024;
  else if (attr == 4) *v = 32;
  else if (attr == 8) *v = static_cast<Entry*>(fn)->max_dynamic_shared;
  else return INVALID_VALUE;
  return OK;
}
// Only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, as the driver checks it (the module's static shared memory
// is left out: spire's kernels declare none when they go dynamic).
CUresult cuFuncSetAttribute(void* fn, int attr, int value) {
  NEED_CONTEXT();
  if (attr != 8 || value < 0 || value > kSharedOptIn) return INVALID_VALUE;
  static_cast<Entry*>(fn)->max_dynamic_shared = value;
  return OK;
}

CUresult cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  NEED_CONTEXT();
  if (bytes == 0) return INVALID_VALUE;
  std::lock_guard lock(st().m);
  uint64_t live = 0;
  for (const auto& [base, size] : st().allocations)
    if (!st().pinned.count(base)) live += size;
  if (bytes > total_memory() - std::min(live, total_memory())) return OUT_OF_MEMORY;
  void* mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return OUT_OF_MEMORY;
  *p = reinterpret_cast<uint64_t>(mem);
  st().allocations[*p] = bytes;
  return OK;
}
CUresult cuMemFree_v2(uint64_t p) {
  if (!has_context()) return INVALID_CONTEXT;
  std::lock_guard lock(st().m);
  if (st().pinned.count(p) || !st().allocations.erase(p)) return INVALID_VALUE;
  std::free(reinterpret_cast<void*>(p));
  return OK;
}
// Pinned host memory: with unified addressing its device address is the host address, as on a 64-bit GPU.
CUresult cuMemHostAlloc(void** host, size_t bytes, unsigned flags) {
  NEED_CONTEXT();
  if (bytes == 0 || flags & ~7u) return INVALID_VALUE;
  if (bytes > total_memory()) return OUT_OF_MEMORY;
  void* mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return OUT_OF_MEMORY;
  std::lock_guard lock(st().m);
  *host = mem;
  st().allocations[reinterpret_cast<uint64_t>(mem)] = bytes;
  st().pinned[reinterpret_cast<uint64_t>(mem)] = true;
  return OK;
}
CUresult cuMemFreeHost(void* host) {
  if (!has_context()) return INVALID_CONTEXT;
  std::lock_guard lock(st().m);
  auto p = reinterpret_cast<uint64_t>(host);
  if (!st().pinned.erase(p)) return INVALID_VALUE;
  st().allocations.erase(p);
  std::free(host);
  return OK;
}
CUresult cuMemHostGetDevicePointer_v2(uint64_t* ptr, void* host, unsigned flags) {
  NEED_CONTEXT();
  std::lock_guard lock(st().m);
  if (flags != 0 || !st().pinned.count(reinterpret_cast<uint64_t>(host))) return INVALID_VALUE;
  *ptr = reinterpret_cast<uint64_t>(host);
  return OK;
}
// cuda.h's CUDA_EXTERNAL_MEMORY_HANDLE_DESC and CUDA_EXTERNAL_MEMORY_BUFFER_DESC (opaque descriptors only).
struct ExternalMemoryDesc {
  int type;
  union {
    int fd;
    void* win32[2];
  } handle;
  unsigned long long size;
  unsigned flags;
  unsigned reserved[16];
};
struct ExternalBufferDesc {
  unsigned long long offset, size;
  unsigned flags;
  unsigned reserved[16];
};
CUresult cuImportExternalMemory(void** memory, const ExternalMemoryDesc* desc) {
  NEED_CONTEXT();
  if (desc->type != 1 || desc->size == 0) return INVALID_VALUE;  // CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
  struct stat file{};
  if (::fstat(desc->handle.fd, &file) != 0 || file.st_size < 16) return INVALID_VALUE;
  const uint64_t mapped_bytes = uint64_t(file.st_size);
  void* mapping = ::mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, desc->handle.fd, 0);
  if (mapping == MAP_FAILED) return INVALID_VALUE;
  const auto* header = static_cast<const uint64_t*>(mapping);  // Mesa's: the file's size, the memory's offset
  if (header[0] != mapped_bytes || header[1] + desc->size > mapped_bytes) {
    ::munmap(mapping, mapped_bytes);
    return INVALID_VALUE;
  }
  ::close(desc->handle.fd);  // the driver owns the descriptor once the import succeeds
  void* base = static_cast<char*>(mapping) + header[1];
  std::lock_guard lock(st().m);
  st().imported[base] = {mapping, mapped_bytes, desc->size};
  *memory = base;
  return OK;
}
CUresult cuExternalMemoryGetMappedBuffer(uint64_t* ptr, void* memory, const ExternalBufferDesc* desc) {
  NEED_CONTEXT();
  std::lock_guard lock(st().m);
  auto it = st().imported.find(memory);
  if (it == st().imported.end() || desc->offset + desc->size > it->second.bytes) return INVALID_VALUE;
  *ptr = reinterpret_cast<uint64_t>(memory) + desc->offset;
  st().allocations[*ptr] = desc->size;
  st().pinned[*ptr] = true;  // not cuMemFree's to free
  return OK;
}
CUresult cuDestroyExternalMemory(void* memory) {
  if (!has_context()) return INVALID_CONTEXT;
  std::lock_guard lock(st().m);
  auto it = st().imported.find(memory);
  if (it == st().imported.end()) return INVALID_HANDLE;
  const uint64_t base = reinterpret_cast<uint64_t>(memory);
  for (auto a = st().allocations.lower_bound(base); a != st().allocations.end() && a->first < base + it->second.bytes;) {
    st().pinned.erase(a->first);
    a = st().allocations.erase(a);
  }
  ::munmap(it->second.mapping, it->second.mapped_bytes);
  st().imported.erase(it);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t bytes, void* s) {
  NEED_CONTEXT();
  if (!in_allocation(dst, bytes)) return INVALID_VALUE;
  return submit(s, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, bytes); return OK; });
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t bytes, void* s) {
  NEED_CONTEXT();
  if (!in_allocation(src, bytes)) return INVALID_VALUE;
  return submit(s, [=] { std::memcpy(dst, reinterpret_cast<void*>(src), bytes); return OK; });
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void* s) {
  NEED_CONTEXT();
  if (!in_allocation(dst, bytes) || !in_allocation(src, bytes)) return INVALID_VALUE;
  return submit(s, [=] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes); return OK; });
}
CUresult cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void* s) {
  NEED_CONTEXT();
  if (!in_allocation(dst, bytes) || !in_allocation(src, bytes)) return INVALID_VALUE;
  return submit(s, [=] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes); return OK; });
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void* s) {
  NEED_CONTEXT();
  if (dst % 4 || !in_allocation(dst, n * 4)) return INVALID_VALUE;
  return submit(s, [=] {
    auto* p = reinterpret_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; ++i) p[i] = v;
    return OK;
  });
}
CUresult cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void* s) {
  NEED_CONTEXT();
  if (!in_allocation(dst, n)) return INVALID_VALUE;
  return submit(s, [=] { std::memset(reinterpret_cast<void*>(dst), v, n); return OK; });
}

CUresult cuStreamCreate(void** s, unsigned flags) {
  NEED_CONTEXT();
  *s = new Stream;
  return OK;
}
CUresult cuStreamDestroy_v2(void* s) {
  delete static_cast<Stream*>(s);
  return OK;
}
CUresult cuStreamSynchronize(void* s) {
  NEED_CONTEXT();
  return OK;  // work already ran
}
CUresult cuEventCreate(void** e, unsigned flags) {
  NEED_CONTEXT();
  *e = new Event;
  return OK;
}
CUresult cuEventDestroy_v2(void* e) {
  delete static_cast<Event*>(e);
  return OK;
}
CUresult cuEventRecordWithFlags(void* e, void* s, unsigned flags) {
  NEED_CONTEXT();
  auto* stream = static_cast<Stream*>(s);
  if (stream && stream->capturing && flags != 1) return OK;  // a fork/join marker in capture: records nothing
  return submit(s, [=] {
    auto* ev = static_cast<Event*>(e);
    ev->recorded = true;
    ev->at = std::chrono::steady_clock::now();
    return OK;
  });
}
CUresult cuEventRecord(void* e, void* s) { return cuEventRecordWithFlags(e, s, 0); }
// Work runs when it is enqueued, so a wait is already satisfied; what is checked is that the event was recorded.
CUresult cuStreamWaitEvent(void* s, void* e, unsigned flags) {
  NEED_CONTEXT();
  if (!e || flags != 0) return INVALID_VALUE;
  auto* stream = static_cast<Stream*>(s);
  if (stream && stream->capturing) return OK;
  ++st().stream_waits;
  return static_cast<Event*>(e)->recorded ? OK : INVALID_HANDLE;
}
CUresult cuEventSynchronize(void* e) {
  NEED_CONTEXT();
  return OK;
}
CUresult cuEventQuery(void* e) {
  NEED_CONTEXT();
  return OK;
}
CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
  NEED_CONTEXT();
  auto *ea = static_cast<Event*>(a), *eb = static_cast<Event*>(b);
  if (!ea->recorded || !eb->recorded) return INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(eb->at - ea->at).count();
  return OK;
}

CUresult launch_kernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, void* s, void** params, void** extra, bool programmatic);

CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* s, void** params, void** extra) {
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, false);
}

// cuda.h's CUlaunchConfig and CUlaunchAttribute (a 64-byte value union after an 8-byte id).
struct MockLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int value;
  } value;
};
struct MockLaunchConfig {
  unsigned grid[3], block[3], shared;
  void* stream;
  MockLaunchAttribute* attrs;
  unsigned count;
};

// Only the attribute spire sets, programmatic stream serialization (id 6). Launches run one after another here, so
// it changes nothing but the record.
CUresult cuLaunchKernelEx(const MockLaunchConfig* c, void* f, void** params, void** extra) {
  if (!c || (c->count && !c->attrs)) return INVALID_VALUE;
  bool programmatic = false;
  for (unsigned i = 0; i < c->count; ++i) {
    if (c->attrs[i].id != 6) return INVALID_VALUE;
    programmatic = c->attrs[i].value.value != 0;
  }
  return launch_kernel(f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->shared,
                       c->stream, params, extra, programmatic);
}

CUresult launch_kernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, void* s, void** params, void** extra, bool programmatic) {
  NEED_CONTEXT();
  auto* e = static_cast<Entry*>(f);
  if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || extra) return INVALID_VALUE;
  if (bx != e->reqntid[0] || by != e->reqntid[1] || bz != e->reqntid[2]) return INVALID_VALUE;
  if (!e->param_sizes.empty() && !params) return INVALID_VALUE;
  if (int(shared) > e->max_dynamic_shared) return INVALID_VALUE;  // past 48 KiB only after the opt-in
  // The driver copies the parameter values at launch (or capture) time; so does the mock. A parameter may be wider
  // than a pointer (a 128-byte tensor map passed by value).
  LaunchRecord rec{e->name, {gx, gy, gz}, {bx, by, bz}, {}, programmatic};
  auto values = std::make_shared<std::vector<std::vector<uint8_t>>>();
  for (size_t i = 0; i < e->param_sizes.size(); ++i) {
    const auto* bytes = static_cast<const uint8_t*>(params[i]);
    values->emplace_back(bytes, bytes + e->param_sizes[i]);
    uint64_t v = 0;
    std::memcpy(&v, params[i], std::min(sizeof v, size_t(e->param_sizes[i])));
    rec.args.push_back(v);
  }
  auto* stream = static_cast<Stream*>(s);
  if (stream && stream->capturing && e->name.find("mock_no_capture") != std::string::npos) {
    stream->invalidated = true;
    return CAPTURE_INVALIDATED;
  }
  return submit(s, [rec, values, e, shared] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // so timestamps around it differ
    {
      std::lock_guard lock(st().m);
      st().launches.push_back(rec);
    }
    if (rec.name.find("mock_fault") != std::string::npos) {
      st().sticky = ILLEGAL_ADDRESS;
      return OK;
    }
    if (rec.name.find("mock_noexec") != std::string::npos) return OK;  // logged, not run (huge grids)
    std::vector<void*> params;
    for (auto& v : *values) params.push_back(v.data());
    try {
      e->module->program->launch(*e->code, {rec.grid[0], rec.grid[1], rec.grid[2]},
                                 {rec.block[0], rec.block[1], rec.block[2]}, params.data(),
                                 [](uint64_t a, uint32_t n) {
                                   if (!in_allocation(a, n))
                                     throw std::runtime_error("address " + std::to_string(a) + " (" + std::to_string(n) +
                                                              " bytes) is outside every allocation");
                                 },
                                 shared);
    } catch (const std::exception& ex) {
      // A fault on a GPU is sticky and reported at the next synchronization; say what happened on stderr.
      std::fprintf(stderr, "mock libcuda: kernel %s faulted: %s\n", rec.name.c_str(), ex.what());
      st().last_fault = ex.what();
      st().sticky = ILLEGAL_ADDRESS;
    }
    return OK;
  });
}

// Encodes the map in the mock's format (tests/runtime/cuda/mock_driver/mock_tensor_map.h), refusing with
// CUDA_ERROR_INVALID_VALUE what the real driver refuses and what the interpreter does not model. CUDA's types: a
// 128-byte CUtensorMap, enums as ints, cuuint64_t and cuuint32_t arrays. Like the real one, it needs no context.
CUresult cuTensorMapEncodeTiled(void* map, int data_type, uint32_t rank, void* global_address, const uint64_t* global_dims,
                                const uint64_t* global_strides, const uint32_t* box_dims, const uint32_t* element_strides,
                                int interleave, int swizzle, int l2_promotion, int oob_fill) {
  return spire::mock::encode_tiled(map, data_type, rank, global_address, global_dims, global_strides, box_dims,
                                   element_strides, interleave, swizzle, l2_promotion, oob_fill);
}

CUresult cuStreamBeginCapture_v2(void* s, int mode) {
  NEED_CONTEXT();
  auto* stream = static_cast<Stream*>(s);
  if (!stream || stream->capturing) return INVALID_VALUE;
  stream->capturing = true;
  stream->invalidated = false;
  stream->captured.clear();
  return OK;
}
CUresult cuStreamEndCapture(void* s, void** graph) {
  NEED_CONTEXT();
  auto* stream = static_cast<Stream*>(s);
  if (!stream || !stream->capturing) return INVALID_VALUE;
  stream->capturing = false;
  if (stream->invalidated) {
    *graph = nullptr;
    return CAPTURE_INVALIDATED;
  }
  *graph = new Graph{std::move(stream->captured)};
  return OK;
}
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  NEED_CONTEXT();
  *exec = new Graph(*static_cast<Graph*>(graph));
  return OK;
}
CUresult cuGraphLaunch(void* exec, void* s) {
  NEED_CONTEXT();
  for (auto& op : static_cast<Graph*>(exec)->ops) {
    CUresult r = op();
    if (r) return r;
  }
  return OK;
}
CUresult cuGraphExecDestroy(void* exec) {
  delete static_cast<Graph*>(exec);
  return OK;
}
CUresult cuGraphDestroy(void* graph) {
  delete static_cast<Graph*>(graph);
  return OK;
}

// What cuGetProcAddress hands out: the CUDA 12.0 variants, as the real driver would for version 12000.
CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, uint64_t flags, int* status) {
  static const std::map<std::string, void*> table = {
      {"cuInit", (void*)&cuInit},
      {"cuDriverGetVersion", (void*)&cuDriverGetVersion},
      {"cuGetErrorName", (void*)&cuGetErrorName},
      {"cuGetErrorString", (void*)&cuGetErrorString},
      {"cuDeviceGetCount", (void*)&cuDeviceGetCount},
      {"cuDeviceGet", (void*)&cuDeviceGet},
      {"cuDeviceGetName", (void*)&cuDeviceGetName},
      {"cuDeviceGetAttribute", (void*)&cuDeviceGetAttribute},
      {"cuDeviceTotalMem", (void*)&cuDeviceTotalMem_v2},
      {"cuDevicePrimaryCtxRetain", (void*)&cuDevicePrimaryCtxRetain},
      {"cuDevicePrimaryCtxRelease", (void*)&cuDevicePrimaryCtxRelease_v2},
      {"cuCtxSetCurrent", (void*)&cuCtxSetCurrent},
      {"cuModuleLoadDataEx", (void*)&cuModuleLoadDataEx},
      {"cuModuleGetFunction", (void*)&cuModuleGetFunction},
      {"cuModuleUnload", (void*)&cuModuleUnload},
      {"cuFuncGetAttribute", (void*)&cuFuncGetAttribute},
      {"cuFuncSetAttribute", (void*)&cuFuncSetAttribute},
      {"cuMemAlloc", (void*)&cuMemAlloc_v2},
      {"cuMemFree", (void*)&cuMemFree_v2},
      {"cuMemcpyHtoDAsync", (void*)&cuMemcpyHtoDAsync_v2},
      {"cuMemcpyDtoHAsync", (void*)&cuMemcpyDtoHAsync_v2},
      {"cuMemcpyDtoDAsync", (void*)&cuMemcpyDtoDAsync_v2},
      {"cuMemcpyAsync", (void*)&cuMemcpyAsync},
      {"cuMemHostAlloc", (void*)&cuMemHostAlloc},
      {"cuMemFreeHost", (void*)&cuMemFreeHost},
      {"cuMemHostGetDevicePointer", (void*)&cuMemHostGetDevicePointer_v2},
      {"cuMemsetD32Async", (void*)&cuMemsetD32Async},
      {"cuMemsetD8Async", (void*)&cuMemsetD8Async},
      {"cuStreamCreate", (void*)&cuStreamCreate},
      {"cuStreamDestroy", (void*)&cuStreamDestroy_v2},
      {"cuStreamSynchronize", (void*)&cuStreamSynchronize},
      {"cuEventCreate", (void*)&cuEventCreate},
      {"cuEventDestroy", (void*)&cuEventDestroy_v2},
      {"cuEventRecord", (void*)&cuEventRecord},
      {"cuEventRecordWithFlags", (void*)&cuEventRecordWithFlags},
      {"cuEventSynchronize", (void*)&cuEventSynchronize},
      {"cuEventQuery", (void*)&cuEventQuery},
      {"cuEventElapsedTime", (void*)&cuEventElapsedTime},
      {"cuStreamWaitEvent", (void*)&cuStreamWaitEvent},
      {"cuLaunchKernel", (void*)&cuLaunchKernel},
      {"cuLaunchKernelEx", (void*)&cuLaunchKernelEx},
      {"cuStreamBeginCapture", (void*)&cuStreamBeginCapture_v2},
      {"cuStreamEndCapture", (void*)&cuStreamEndCapture},
      {"cuGraphInstantiateWithFlags", (void*)&cuGraphInstantiateWithFlags},
      {"cuGraphLaunch", (void*)&cuGraphLaunch},
      {"cuGraphExecDestroy", (void*)&cuGraphExecDestroy},
      {"cuGraphDestroy", (void*)&cuGraphDestroy},
      {"cuTensorMapEncodeTiled", (void*)&cuTensorMapEncodeTiled},
      {"cuDeviceGetUuid", (void*)&cuDeviceGetUuid},
      {"cuImportExternalMemory", (void*)&cuImportExternalMemory},
      {"cuExternalMemoryGetMappedBuffer", (void*)&cuExternalMemoryGetMappedBuffer},
      {"cuDestroyExternalMemory", (void*)&cuDestroyExternalMemory},
  };
  if (version != 12000) return INVALID_VALUE;  // runtime/cuda's ABI declarations are for 12.0 variants
  auto it = table.find(symbol);
  if (status) *status = it == table.end() ? 1 : 0;
  if (it == table.end()) {
    *fn = nullptr;
    return NOT_FOUND;
  }
  *fn = it->second;
  return OK;
}

// Inspection API for the tests.
int mock_cuda_module_loads() { return st().module_loads; }
int mock_cuda_live_allocations() {
  std::lock_guard lock(st().m);
  return int(st().allocations.size());
}
int mock_cuda_stream_wait_count() { return st().stream_waits; }
int mock_cuda_launch_count() {
  std::lock_guard lock(st().m);
  return int(st().launches.size());
}
// Copies launch i out; returns its argument count, or -1 when there is no launch i.
int mock_cuda_launch(int i, char* name, int name_len, unsigned* grid, unsigned* block, uint64_t* args, int max_args) {
  std::lock_guard lock(st().m);
  if (i < 0 || size_t(i) >= st().launches.size()) return -1;
  const LaunchRecord& r = st().launches[size_t(i)];
  std::snprintf(name, size_t(name_len), "%s", r.name.c_str());
  for (int d = 0; d < 3; ++d) grid[d] = r.grid[d], block[d] = r.block[d];
  for (size_t a = 0; a < r.args.size() && int(a) < max_args; ++a) args[a] = r.args[a];
  return int(r.args.size());
}
// Whether launch i was programmatic (cuLaunchKernelEx's programmatic stream serialization): 1 or 0, -1 when none.
int mock_cuda_launch_programmatic(int i) {
  std::lock_guard lock(st().m);
  if (i < 0 || size_t(i) >= st().launches.size()) return -1;
  return st().launches[size_t(i)].programmatic ? 1 : 0;
}
void mock_cuda_clear_sticky_error() { st().sticky = OK; }
const char* mock_cuda_last_fault() { return st().last_fault.c_str(); }

}  // extern "C"
