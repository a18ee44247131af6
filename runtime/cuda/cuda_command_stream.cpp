#include "runtime/cuda/cuda_command_stream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "runtime/cuda/cuda_resources.h"

namespace spire::rt::cuda {

namespace {

// Whether environment variable `name` is anything but "0". SPIRE_CUDA_GRAPHS=0 replays launch lists instead of CUDA
// graphs (to compare the two, or to rule graphs out when hunting a bug).
bool enabled(const char* name) {
  const char* env = std::getenv(name);
  return !(env && std::strcmp(env, "0") == 0);
}

// Programmatic dependent launch is on unless SPIRE_CUDA_PDL=0. On an H200 it once gave NaN weight gradients in the first
// step of fresh processes (resnet18's first convolution, kernels linked from the disk cache): loads through the
// read-only path (ld.global.nc) of what the launch before was still writing. The PTX now reads through that path only
// the buffers a kernel reads before its wait (ptx_translator.cpp's non_coherent); with that, 8 fresh processes of the
// same step were all exact (tools/gpu's run-torch.sh PARTS=pdl, tests/python/test_first_step.py).
bool programmatic_launch_asked() { return enabled("SPIRE_CUDA_PDL"); }

std::string binding_list(const KernelInterface& k) {
  std::string s;
  for (const auto& b : k.buffers) s += (s.empty() ? "" : ", ") + b.name;
  return s.empty() ? "none" : s;
}

std::string scalar_list(const KernelInterface& k) {
  std::string s;
  for (const auto& p : k.scalars) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", dtype_name(p.type), p.name);
  return s.empty() ? "none" : s;
}

}  // namespace

CudaCommandStream::CudaCommandStream(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

CudaCommandStream::~CudaCommandStream() {
  const DriverApi& a = ctx_->api();
  try {
    ctx_->make_current();
  } catch (...) {  // destructors must not throw; the calls below then fail quietly
  }
  // A submission may still be running: let it finish before its events and graph go away.
  if (submitted_) a.cuStreamSynchronize(ctx_->stream());
  if (exec_) a.cuGraphExecDestroy(exec_);
  if (graph_) a.cuGraphDestroy(graph_);
  for (CUevent e : timestamps_) a.cuEventDestroy(e);
}

void CudaCommandStream::require_recording(const char* what) const {
  if (finished_)
    throw Error(fmt::format("{}: {} on a command stream that is already finished (finish() and submit() end "
                            "recording; record a new stream)", ctx_->id(), what));
}

CUdeviceptr CudaCommandStream::view_pointer(const BufferView& v, const char* what, const std::string& where) const {
  if (!v.buffer) throw Error(fmt::format("{}: {} {}: no buffer", ctx_->id(), where, what));
  auto* b = dynamic_cast<const CudaBuffer*>(v.buffer);
  if (!b) throw Error(fmt::format("{}: {} {}: the buffer does not belong to a CUDA device", ctx_->id(), where, what));
  if (b->context() != ctx_.get())
    throw Error(fmt::format("{}: {} {}: the buffer belongs to {}", ctx_->id(), where, what, b->context()->id()));
  if (v.offset > b->size() || v.bytes() > b->size() - v.offset)
    throw Error(fmt::format("{}: {} {}: view [{}, {}) exceeds the buffer's {} bytes", ctx_->id(), where, what,
                            v.offset, v.offset + v.bytes(), b->size()));
  return b->ptr() + v.offset;
}

CudaCommandStream::TensorMapBytes CudaCommandStream::encode_tensor_map(const KernelInterface& ir, const KernelInterface::TensorMap& m,
                                                                      const BufferView& view, CUdeviceptr base) const {
  const DriverApi& a = ctx_->api();
  const std::string where = fmt::format("kernel '{}' tensor map {} (buffer {})", ir.name, m.name, ir.buffers[m.buffer].name);
  if (!a.cuTensorMapEncodeTiled)
    throw Error(fmt::format("{}: {}: the CUDA driver lacks cuTensorMapEncodeTiled (tensor copies need CUDA 12)", ctx_->id(), where));
  const DType elem = ir.buffers[m.buffer].elem;
  const uint64_t bytes = dtype_bytes(elem);
  // The map's start must lie on 16 bytes, which dispatch's view offset rule (min_storage_offset_alignment) ensures.
  // The copy engine reads anywhere inside the tensor's extents: they must lie inside the bound view.
  uint64_t last = m.extents[0];
  for (size_t d = 1; d < m.extents.size(); ++d) last += (m.extents[d] - 1) * m.strides[d - 1];
  if (last * bytes > view.bytes())
    throw Error(fmt::format("{}: {}: the tensor spans {} bytes and the view holds {}", ctx_->id(), where, last * bytes,
                            view.bytes()));
  const int type = elem == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                   : elem == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                            : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  std::vector<unsigned long long> dims(m.extents.begin(), m.extents.end()), strides;
  for (uint64_t st : m.strides) strides.push_back(st * bytes);
  std::vector<unsigned> box(m.box.begin(), m.box.end()), element_strides(m.box.size(), 1);
  TensorMapBytes out{};
  ctx_->check(a.cuTensorMapEncodeTiled(out.bytes, type, unsigned(dims.size()), reinterpret_cast<void*>(base), dims.data(),
                                       strides.data(), box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
                                       m.swizzle_128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled", "(" + where + ")");
  return out;
}

void CudaCommandStream::dispatch(const Kernel& kernel, std::span<const BufferView> buffers, const ScalarArgs& scalars,
                                 Grid grid) {
  require_recording("dispatch");
  auto* k = dynamic_cast<const CudaKernel*>(&kernel);
  if (!k) throw Error(fmt::format("{}: dispatch of a kernel that was not compiled by a CUDA device", ctx_->id()));
  const KernelInterface& ir = k->interface();
  if (k->context() != ctx_.get())
    throw Error(fmt::format("{}: kernel '{}' was compiled for {}", ctx_->id(), ir.name, k->context()->id()));
  if (buffers.size() != ir.buffers.size())
    throw Error(fmt::format("{}: kernel '{}' takes {} buffers ({}), dispatch bound {}", ctx_->id(), ir.name,
                            ir.buffers.size(), binding_list(ir), buffers.size()));
  uint32_t padded = uint32_t((scalars.bytes().size() + 3) / 4 * 4);
  if (scalars.count() != ir.scalars.size() || padded != ir.scalar_block_bytes())
    throw Error(fmt::format("{}: kernel '{}' takes {} scalars ({}) in {} bytes, dispatch gave {} in {} bytes",
                            ctx_->id(), ir.name, ir.scalars.size(), scalar_list(ir), ir.scalar_block_bytes(),
                            scalars.count(), scalars.bytes().size()));
  Launch l;
  l.fn = k->function();
  l.waits_for_previous = k->waits_for_previous();
  l.kernel = ir.name;
  l.dynamic_shared = k->dynamic_shared_bytes();
  uint32_t align = ctx_->info().min_storage_offset_alignment;
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::string where = fmt::format("kernel '{}' buffer {} ({})", ir.name, i, ir.buffers[i].name);
    if (buffers[i].offset % align != 0)
      throw Error(fmt::format("{}: {}: view offset {} is not a multiple of the device's {}-byte offset alignment",
                              ctx_->id(), where, buffers[i].offset, align));
    l.pointers.push_back(view_pointer(buffers[i], "binding", where));
    if (ir.buffers[i].read_before_wait) l.read_early.emplace_back(l.pointers.back(), buffers[i].bytes());
    if (ir.buffers[i].access != Access::Read) l.written.emplace_back(l.pointers.back(), buffers[i].bytes());
  }
  for (const KernelInterface::TensorMap& m : ir.tensor_maps) l.tensor_maps.push_back(encode_tensor_map(ir, m, buffers[m.buffer], l.pointers[m.buffer]));
  l.scalar_bytes = scalars.bytes();
  l.scalar_offsets = ir.scalar_offsets();
  l.block = {ir.workgroup_size[0], ir.workgroup_size[1], ir.workgroup_size[2]};
  if (grid.groups == 0) return;  // nothing to run; CUDA refuses empty grids
  try {
    l.grid = fold_grid(grid.groups, ctx_->info().max_workgroup_count);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: kernel '{}': {}", ctx_->id(), ir.name, e.what()));
  }
  commands_.emplace_back(std::move(l));
}

void CudaCommandStream::barrier() {
  require_recording("barrier");
  // Everything recorded runs in order on one stream (and a captured graph keeps that order as a chain), so
  // earlier writes are always visible to later commands: nothing to record.
}

void CudaCommandStream::copy(BufferView src, BufferView dst) {
  require_recording("copy");
  uint64_t bytes = src.buffer ? src.bytes() : 0;
  if (dst.buffer && dst.size == 0) dst.size = bytes;
  CUdeviceptr s = view_pointer(src, "source", "copy");
  CUdeviceptr d = view_pointer(dst, "destination", "copy");
  if (dst.bytes() != bytes)
    throw Error(fmt::format("{}: copy of {} bytes into a view of {} bytes", ctx_->id(), bytes, dst.bytes()));
  // The driver's copy is undefined for overlapping ranges; Vulkan's is invalid.
  if (s < d + bytes && d < s + bytes)
    throw Error(fmt::format("{}: copy of {} bytes between overlapping views (offsets {} and {} of one buffer)",
                            ctx_->id(), bytes, src.offset, dst.offset));
  if (bytes) commands_.emplace_back(Copy{s, d, bytes});
}

void CudaCommandStream::fill(BufferView dst, uint32_t pattern) {
  require_recording("fill");
  CUdeviceptr d = view_pointer(dst, "destination", "fill");
  const bool to_end = dst.offset + dst.bytes() == dst.buffer->size();
  if (dst.offset % 4 != 0 || (!to_end && dst.bytes() % 4 != 0))
    throw Error(fmt::format("{}: fill writes 32-bit words: view offset {} and size {} must be multiples of 4 (only a "
                            "view reaching the end of its buffer may end in a partial word)",
                            ctx_->id(), dst.offset, dst.bytes()));
  if (dst.bytes()) commands_.emplace_back(Fill{d, dst.bytes() / 4, uint32_t(dst.bytes() % 4), pattern});
}

uint32_t CudaCommandStream::timestamp() {
  require_recording("timestamp");
  ctx_->make_current();
  CUevent e = nullptr;
  ctx_->check(ctx_->api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate", "(timestamp)");
  timestamps_.push_back(e);
  uint32_t index = uint32_t(timestamps_.size() - 1);
  commands_.emplace_back(Timestamp{index});
  return index;
}

double CudaCommandStream::elapsed_ms(uint32_t from, uint32_t to) const {
  if (from >= timestamps_.size() || to >= timestamps_.size())
    throw Error(fmt::format("{}: elapsed_ms({}, {}): the stream recorded {} timestamps", ctx_->id(), from, to,
                            timestamps_.size()));
  if (!submitted_)
    throw Error(fmt::format("{}: elapsed_ms: the stream was never submitted, so its timestamps hold no time", ctx_->id()));
  ctx_->make_current();
  float ms = 0;
  CUresult r = ctx_->api().cuEventElapsedTime(&ms, timestamps_[from], timestamps_[to]);
  if (r == CUDA_ERROR_NOT_READY)
    throw Error(fmt::format("{}: elapsed_ms: the submission has not completed; wait on its fence first", ctx_->id()));
  ctx_->check(r, "cuEventElapsedTime", fmt::format("(timestamps {} and {})", from, to));
  return double(ms);
}

void CudaCommandStream::finish() {
  if (finished_) return;
  finished_ = true;
  // Parameter arrays point into each Launch's own vectors, which no longer move once recording is over.
  for (Command& c : commands_) {
    if (auto* l = std::get_if<Launch>(&c)) {
      l->params.clear();
      for (CUdeviceptr& p : l->pointers) l->params.push_back(&p);
      for (uint32_t off : l->scalar_offsets) l->params.push_back(l->scalar_bytes.data() + off);
      for (TensorMapBytes& m : l->tensor_maps) l->params.push_back(m.bytes);
    }
  }
  if (commands_.empty()) return;
  // Programmatic dependent launch (compute capability 9.0 on): a kernel that follows a kernel may launch while that one
  // still runs, and waits for it in its own first instructions (the PTX backend's griddepcontrol.wait), so the launch's
  // latency hides behind the kernel before: a decoder's step is a chain of dozens of few-microsecond kernels.
  programmatic_ = ctx_->api().cuLaunchKernelEx && ctx_->info().compute_capability >= 90 && programmatic_launch_asked();
  if (!enabled("SPIRE_CUDA_GRAPHS")) {
    graph_fallback_reason_ = "SPIRE_CUDA_GRAPHS=0";
  } else if (!ctx_->api().has_graphs()) {
    graph_fallback_reason_ = "the CUDA driver lacks the graph entry points";
  } else {
    try_capture();
  }
}

void CudaCommandStream::try_capture() {
  const DriverApi& a = ctx_->api();
  ctx_->make_current();
  // Capture on a private stream so nothing else recorded on the device stream can join the graph.
  CUstream cap = nullptr;
  CUresult r = a.cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    graph_fallback_reason_ = "cuStreamCreate: " + result_text(ctx_->driver(), r);
    return;
  }
  r = a.cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) {
    graph_fallback_reason_ = "cuStreamBeginCapture: " + result_text(ctx_->driver(), r);
    a.cuStreamDestroy(cap);
    return;
  }
  std::string failure;
  try {
    replay(cap, /*capturing=*/true);
  } catch (const Error& e) {
    failure = e.what();
  }
  CUgraph graph = nullptr;
  r = a.cuStreamEndCapture(cap, &graph);  // always end, also after a failure, to leave capture mode
  if (failure.empty() && r != CUDA_SUCCESS) failure = "cuStreamEndCapture: " + result_text(ctx_->driver(), r);
  a.cuStreamDestroy(cap);
  if (failure.empty()) {
    CUgraphExec exec = nullptr;
    r = a.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (r == CUDA_SUCCESS) {
      graph_ = graph;
      exec_ = exec;
      return;
    }
    failure = "cuGraphInstantiateWithFlags: " + result_text(ctx_->driver(), r);
  }
  if (graph) a.cuGraphDestroy(graph);
  graph_fallback_reason_ = failure;
  std::fprintf(stderr, "spire: %s: CUDA graph capture failed, replaying the launch list instead: %s\n",
               ctx_->id().c_str(), failure.c_str());
}

namespace {
// Whether `next` reads, before its wait, bytes that `before` writes: then it must not start before `before` ends.
bool reads_early_what_wrote(const auto& next, const auto& before) {
  for (const auto& [p, n] : next.read_early)
    for (const auto& [q, m] : before.written)
      if (p < q + m && q < p + n) return true;
  return false;
}
}  // namespace

void CudaCommandStream::replay(CUstream stream, bool capturing) {
  const DriverApi& a = ctx_->api();
  const Launch* previous = nullptr;  // the command before, where it is a launch
  for (Command& c : commands_) {
    const Launch* before = std::exchange(previous, std::get_if<Launch>(&c));
    if (auto* l = std::get_if<Launch>(&c)) {
      CUresult r;
      if (programmatic_ && before && l->waits_for_previous && !reads_early_what_wrote(*l, *before)) {
        CUlaunchAttribute attribute{};
        attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmatic_stream_serialization_allowed = 1;
        CUlaunchConfig config{l->grid[0],         l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                              l->dynamic_shared, stream,     &attribute, 1};
        r = a.cuLaunchKernelEx(&config, l->fn, l->params.empty() ? nullptr : l->params.data(), nullptr);
      } else {
        r = a.cuLaunchKernel(l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                             l->dynamic_shared, stream, l->params.empty() ? nullptr : l->params.data(), nullptr);
      }
      if (r != CUDA_SUCCESS)
        ctx_->check(r, "cuLaunchKernel",
                    fmt::format("(kernel '{}', grid {}x{}x{}, block {}x{}x{})", l->kernel, l->grid[0], l->grid[1],
                                l->grid[2], l->block[0], l->block[1], l->block[2]));
    } else if (auto* cp = std::get_if<Copy>(&c)) {
      // Unified addressing: either side may be host-visible (pinned host) memory.
      ctx_->check(a.cuMemcpyAsync(cp->dst, cp->src, cp->bytes, stream), "cuMemcpyAsync");
    } else if (auto* f = std::get_if<Fill>(&c)) {
      if (f->words) ctx_->check(a.cuMemsetD32Async(f->dst, f->pattern, f->words, stream), "cuMemsetD32Async");
      // A cut-off last word takes the pattern's first (little-endian) bytes, as Device::fill's tail does.
      for (uint32_t i = 0; i < f->tail_bytes; ++i)
        ctx_->check(a.cuMemsetD8Async(f->dst + f->words * 4 + i, static_cast<unsigned char>(f->pattern >> (8 * i)), 1,
                                      stream),
                    "cuMemsetD8Async");
    } else if (auto* t = std::get_if<Timestamp>(&c)) {
      // In capture, a plain cuEventRecord would only mark a fork/join point; the EXTERNAL flag makes it an
      // event record node that records the event at each graph launch.
      if (capturing)
        ctx_->check(a.cuEventRecordWithFlags(timestamps_[t->index], stream, CU_EVENT_RECORD_EXTERNAL),
                    "cuEventRecordWithFlags", "(timestamp)");
      else
        ctx_->check(a.cuEventRecord(timestamps_[t->index], stream), "cuEventRecord", "(timestamp)");
    }
  }
}

void CudaCommandStream::enqueue(CUstream stream) {
  finish();
  ctx_->make_current();
  if (exec_)
    ctx_->check(ctx_->api().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
  else
    replay(stream, /*capturing=*/false);
  submitted_ = true;
}

}  // namespace spire::rt::cuda
