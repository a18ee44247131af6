#include "tuning/copy_bandwidth.h"

#include <algorithm>
#include <vector>

#include "tuning/median.h"
#include "tuning/warm_up.h"

namespace spire::tuning {

double copy_bandwidth_gbs(rt::Device& device, uint64_t bytes, int runs, double warmup_ms) {
  bytes = std::min<uint64_t>(bytes, device.info().max_buffer_bytes / 4 * 4);
  auto from = device.alloc(bytes), to = device.alloc(bytes);
  auto stream = device.record();
  const uint32_t t0 = stream->timestamp();
  stream->copy(rt::BufferView(*from), rt::BufferView(*to));
  const uint32_t t1 = stream->timestamp();
  stream->finish();
  if (warmup_ms < 0) warmup_ms = device.info().type == rt::DeviceType::Cpu ? 0 : kGpuWarmupMs;
  warm_up(3, warmup_ms, [&] { device.run(*stream); });
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    device.run(*stream);
    ms.push_back(stream->elapsed_ms(t0, t1));
  }
  return 2.0 * double(bytes) / (median(ms) * 1e-3) / 1e9;
}

}  // namespace spire::tuning
