#include "tuning/copy_bandwidth.h"

#include <vector>

#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "tuning/median.h"
#include "tuning/warm_up.h"

namespace spire::tuning {

namespace {

// Shaped like the ReLU example (examples/kernels/relu.cpp): an invocation issues its four loads before any store, so
// four requests are in flight at once.
kir::Kernel copy_kernel() {
  kir::KernelBuilder kb("copy_1024", 256);
  auto x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
  auto y = kb.buffer("y", kir::Type::F32, kir::Access::Write);
  auto n = kb.scalar("n", kir::Type::U32);
  auto block_start = kb.group_id() * 1024u;
  auto first = block_start + kb.local_id();
  auto full = (block_start < n) & (n - block_start >= 1024u);
  kb.if_else(
      full,
      [&] {
        kir::Val v[4];
        for (uint32_t k = 0; k < 4; ++k) v[k] = x[first + k * 256u];
        for (uint32_t k = 0; k < 4; ++k) y[first + k * 256u] = v[k];
      },
      [&] {
        for (uint32_t k = 0; k < 4; ++k) {
          auto i = first + k * 256u;
          kb.if_(i < n, [&] { y[i] = x[i]; });
        }
      });
  return kb.finish();
}

// GB/s of the part of `stream` between timestamps t0 and t1, which copies `bytes`.
double timed_gbs(rt::Device& device, rt::CommandStream& stream, uint32_t t0, uint32_t t1, uint64_t bytes, int runs,
                 double warmup_ms) {
  warm_up(3, warmup_ms, [&] { device.run(stream); });
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    device.run(stream);
    ms.push_back(stream.elapsed_ms(t0, t1));
  }
  return 2.0 * double(bytes) / (median(ms) * 1e-3) / 1e9;
}

}  // namespace

CopyBandwidth copy_bandwidth(rt::Device& device, uint64_t bytes, int runs, double warmup_ms) {
  bytes = std::min<uint64_t>(bytes, device.info().max_buffer_bytes / 4 * 4);
  if (warmup_ms < 0) warmup_ms = device.info().type == rt::DeviceType::Cpu ? 0 : kGpuWarmupMs;
  auto from = device.alloc(bytes), to = device.alloc(bytes);
  CopyBandwidth b;
  {
    auto stream = device.record();
    const uint32_t t0 = stream->timestamp();
    stream->copy(rt::BufferView(*from), rt::BufferView(*to));
    const uint32_t t1 = stream->timestamp();
    stream->finish();
    b.buffer_copy_gbs = timed_gbs(device, *stream, t0, t1, bytes, runs, warmup_ms);
  }
  auto kernel = backends::compile_and_load(device, copy_kernel());
  auto stream = device.record();
  const uint64_t n = bytes / 4;
  rt::BufferView views[] = {rt::BufferView(*from), rt::BufferView(*to)};
  const uint32_t t0 = stream->timestamp();
  stream->dispatch(*kernel, views, rt::ScalarArgs().u32(uint32_t(n)), rt::Grid::threads(n, 1024));
  const uint32_t t1 = stream->timestamp();
  stream->finish();
  b.kernel_copy_gbs = timed_gbs(device, *stream, t0, t1, bytes, runs, warmup_ms);
  return b;
}

}  // namespace spire::tuning
