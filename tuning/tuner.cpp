#include "tuning/tuner.h"

#include "backends/compile_kernel.h"
#include "tuning/median.h"
#include "tuning/warm_up.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::tuning {

namespace {

std::atomic<uint64_t> g_timed{0};

using lowering::KernelProgram;
using lowering::ProgramBuffer;
using lowering::heavy::Config;

// Device buffers shared by all candidates of one tune(): index i serves every program's buffer i, grown when
// a candidate declares it larger (a scratch that depends on the config).
class BufferPool {
 public:
  BufferPool(rt::Device& dev, uint64_t seed) : dev_(dev), rng_(seed) {}

  rt::BufferView view(size_t index, const ProgramBuffer& b) {
    const uint64_t bytes = std::max<uint64_t>(uint64_t(b.elements) * std::max<uint32_t>(dtype_bytes(b.type), 1), 4);
    if (index >= buffers_.size()) buffers_.resize(index + 1);
    if (!buffers_[index] || buffers_[index]->size() < bytes) {
      buffers_[index].reset();  // free first: large buffers should not coexist
      buffers_[index] = dev_.alloc(bytes);
      fill(*buffers_[index], b.type);
    }
    return rt::BufferView(*buffers_[index], 0, bytes);
  }

 private:
  // Random floats in [-1, 1] (a pattern of up to 1 MiB repeated), integers and bools 0: any input is valid.
  void fill(rt::Buffer& buf, kir::Type type) {
    if (type != kir::Type::F32 && type != kir::Type::F64) {
      dev_.fill(buf, 0);
      return;
    }
    const uint64_t chunk = std::min<uint64_t>(buf.size(), 1 << 20);
    std::vector<uint8_t> bytes(size_t(chunk), 0);
    std::uniform_real_distribution<double> u(-1, 1);
    if (type == kir::Type::F32)
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        float f = float(u(rng_));
        std::memcpy(&bytes[i], &f, 4);
      }
    else
      for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        double d = u(rng_);
        std::memcpy(&bytes[i], &d, 8);
      }
    for (uint64_t at = 0; at < buf.size(); at += chunk) dev_.upload(buf, bytes.data(), std::min(chunk, buf.size() - at), at);
  }

  rt::Device& dev_;
  std::mt19937_64 rng_;
  std::vector<std::shared_ptr<rt::Buffer>> buffers_;
};

// Progress on one line: rewritten in place on a terminal; on a file or pipe only the start of each op.
class Progress {
 public:
  Progress(std::FILE* out, std::string label, size_t total)
      : out_(out), label_(std::move(label)), total_(total), tty_(out && isatty(fileno(out))) {
    if (out_ && !tty_) std::fprintf(out_, "tuning %s: %zu candidates\n", label_.c_str(), total_);
  }
  // `stage`: "compiled" or "timed", `done` of the candidates so far.
  void update(const char* stage, size_t done, double best_ms) {
    if (!tty_) return;
    std::string best = std::isfinite(best_ms) ? fmt::format(", best {:.4f} ms", best_ms) : "";
    std::fprintf(out_, "\r\033[Ktuning %s: %s %zu/%zu%s", label_.c_str(), stage, done, total_, best.c_str());
    std::fflush(out_);
  }
  ~Progress() {
    if (tty_) {
      std::fprintf(out_, "\r\033[K");
      std::fflush(out_);
    }
  }

 private:
  std::FILE* out_;
  std::string label_;
  size_t total_;
  bool tty_;
};

// A candidate built and compiled, ready to time.
struct Compiled {
  KernelProgram program;
  std::vector<std::shared_ptr<rt::Kernel>> kernels;  // per launch; null for an empty one
};

Compiled compile_candidate(rt::Device& dev, KernelProgram p) {
  Compiled c;
  for (const auto& l : p.launches) c.kernels.push_back(l.groups ? backends::compile_and_load(dev, l.kernel) : nullptr);
  c.program = std::move(p);
  return c;
}

// One candidate's median time; throws what running throws.
double time_candidate(rt::Device& dev, BufferPool& pool, const Compiled& c, const TuneOptions& opt, double best_ms,
                      double warmup_ms, int& runs) {
  const KernelProgram& p = c.program;
  const std::vector<std::shared_ptr<rt::Kernel>>& kernels = c.kernels;
  std::vector<rt::BufferView> views;
  for (size_t i = 0; i < p.buffers.size(); ++i) views.push_back(pool.view(i, p.buffers[i]));
  auto stream = dev.record();
  const uint32_t t0 = stream->timestamp();
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const auto& l = p.launches[i];
    if (!l.groups) continue;
    std::vector<rt::BufferView> bound;
    for (int32_t b : l.buffers) bound.push_back(views.at(size_t(b)));
    stream->dispatch(*kernels[i], bound, l.scalars, rt::Grid::workgroups(l.groups));
    stream->barrier();
  }
  const uint32_t t1 = stream->timestamp();
  stream->finish();
  warm_up(opt.warmup, warmup_ms, [&] { dev.run(*stream); });
  std::vector<double> ms;
  for (int i = 0; i < std::max(opt.runs, 1); ++i) {
    dev.run(*stream);
    ms.push_back(stream->elapsed_ms(t0, t1));
    if (i == 0 && std::isfinite(best_ms) && ms[0] > opt.give_up_factor * best_ms) break;
  }
  runs = int(ms.size());
  ++g_timed;
  return median(ms);
}

}  // namespace

TuneResult tune(rt::Device& device, const std::vector<Config>& candidates,
                const std::function<KernelProgram(const Config&)>& build, const TuneOptions& opt) {
  if (candidates.empty()) throw std::invalid_argument(fmt::format("tune {}: no candidate configs", opt.label));
  TuneResult r;
  r.best_ms = std::numeric_limits<double>::infinity();
  BufferPool pool(device, opt.seed);
  // Every candidate is compiled before any is timed: compiling between timings left a GPU idle long enough for its
  // clocks to fall, and a 50 ms warm-up did not always raise them again (on the H100, vulkan:0 timed split programs
  // 2-5x slower than they run, all seven runs: docs/PERFORMANCE.md, 2026-11-27).
  Progress progress(opt.progress, opt.label, candidates.size());
  std::vector<std::optional<Compiled>> compiled(candidates.size());
  r.times.resize(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    r.times[i] = CandidateTime{candidates[i], std::numeric_limits<double>::infinity(), "", 0};
    try {
      compiled[i] = compile_candidate(device, build(candidates[i]));
    } catch (const std::exception& e) {
      // A config this device or shape refuses is no candidate; the others still compete.
      r.times[i].error = e.what();
    }
    progress.update("compiled", i + 1, r.best_ms);
  }
  // A CPU device has no clock to raise: its warm-up is the run count alone.
  const bool gpu = device.info().type != rt::DeviceType::Cpu;
  bool first_timed = true;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateTime& ct = r.times[i];
    if (compiled[i]) {
      try {
        const double warmup_ms = !gpu ? 0 : first_timed ? opt.first_warmup_ms : opt.warmup_ms;
        first_timed = false;
        ct.ms = time_candidate(device, pool, *compiled[i], opt, r.best_ms, warmup_ms, ct.runs);
      } catch (const std::exception& e) {
        ct.error = e.what();
      }
      compiled[i].reset();
    }
    if (ct.ms < r.best_ms) {
      r.best_ms = ct.ms;
      r.best = ct.config;
    }
    progress.update("timed", i + 1, r.best_ms);
  }
  if (!std::isfinite(r.best_ms))
    throw rt::Error(fmt::format("tuning {} on {}: no candidate ran (the first said: {})", opt.label, device.info().id,
                                r.times.front().error));
  return r;
}

TuneResult tune(rt::Device& device, const std::vector<Config>& candidates,
                const std::function<lowering::heavy::HeavyKernel(const Config&)>& kernel,
                const std::vector<ProgramBuffer>& buffers, const TuneOptions& opt) {
  return tune(
      device, candidates,
      [&](const Config& c) {
        lowering::heavy::HeavyKernel k = kernel(c);
        return lowering::single_kernel_program(buffers, std::move(k.kernel), k.groups);
      },
      opt);
}

uint64_t timed_candidates() { return g_timed.load(); }

}  // namespace spire::tuning
