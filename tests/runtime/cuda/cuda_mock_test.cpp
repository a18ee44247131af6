// runtime/cuda against the mock driver (tests/runtime/cuda/mock_driver), for what only the mock can show: parameter
// packing, grid folding past 2^31 workgroups, graph capture and its fallback, timestamps in a launch list, JIT
// and fault error reports, context handling across threads, allocations freed. The contract every backend
// keeps is tests/runtime/conformance's, which also runs on this mock (spire_runtime_conformance_mock_tests). ctest runs this binary with LD_LIBRARY_PATH pointing at the mock's
// libcuda.so.1; run by hand without it, every test skips and says so.
#include "backends/compile_kernel.h"
#include "tests/support/early_read_kernel.h"
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "ir/kernel/builder.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_command_stream.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_resources.h"

namespace spire::rt::cuda::testing {
namespace {

using namespace kir;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct MockApi {
  int (*module_loads)() = nullptr;
  int (*live_allocations)() = nullptr;
  int (*launch_count)() = nullptr;
  int (*launch)(int, char*, int, unsigned*, unsigned*, uint64_t*, int) = nullptr;
  void (*clear_sticky_error)() = nullptr;
  int (*launch_programmatic)(int) = nullptr;
};

struct Launch {
  std::string name;
  std::array<unsigned, 3> grid{}, block{};
  std::vector<uint64_t> args;
};

class CudaMock : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)driver();  // loads libcuda.so.1, whichever one the loader finds
    void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      mock.module_loads = reinterpret_cast<int (*)()>(::dlsym(h, "mock_cuda_module_loads"));
      mock.live_allocations = reinterpret_cast<int (*)()>(::dlsym(h, "mock_cuda_live_allocations"));
      mock.launch_count = reinterpret_cast<int (*)()>(::dlsym(h, "mock_cuda_launch_count"));
      mock.launch = reinterpret_cast<decltype(mock.launch)>(::dlsym(h, "mock_cuda_launch"));
      mock.clear_sticky_error = reinterpret_cast<void (*)()>(::dlsym(h, "mock_cuda_clear_sticky_error"));
      mock.launch_programmatic = reinterpret_cast<int (*)(int)>(::dlsym(h, "mock_cuda_launch_programmatic"));
    }
    if (!mock.launch)
      GTEST_SKIP() << "not running against the mock CUDA driver (ctest sets LD_LIBRARY_PATH to tests/runtime/cuda/mock_driver "
                      "in the build tree); driver: " << driver_status();
    dev = cuda::open(0);
  }
  void TearDown() override {
    ::unsetenv("SPIRE_CUDA_GRAPHS");
    ::unsetenv("SPIRE_CUDA_PDL");
  }

  Launch launch(int i) {
    Launch l;
    char name[256];
    uint64_t args[64];
    int n = mock.launch(i, name, sizeof name, l.grid.data(), l.block.data(), args, 64);
    EXPECT_GE(n, 0) << "no launch " << i;
    l.name = name;
    l.args.assign(args, args + std::max(n, 0));
    return l;
  }
  static CUdeviceptr ptr(const std::shared_ptr<Buffer>& b) { return dynamic_cast<const CudaBuffer&>(*b).ptr(); }

  MockApi mock;
  std::unique_ptr<Device> dev;
};

kir::Kernel scale_kernel(const std::string& name = "scale") {
  KernelBuilder kb(name, {64, 2, 1});
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto s = kb.scalar("s", Type::F32);
  auto big = kb.scalar("big", Type::I64);
  auto d = kb.scalar("d", Type::F64);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = x[i] * s + cast(cast(big, Type::F64) + d, Type::F32); });
  return kb.finish();
}

ScalarArgs scale_args() { return ScalarArgs().u32(1000).f32(2.5f).i64(-(int64_t(1) << 40)).f64(0.125); }

TEST_F(CudaMock, ListsAndDescribesTheDevice) {
  auto ds = cuda::list_devices();
  ASSERT_EQ(ds.size(), 1u);
  const DeviceInfo& d = dev->info();
  EXPECT_EQ(d.id, "cuda:0");
  EXPECT_EQ(d.name, "Mock GPU");
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_EQ(d.driver, "CUDA driver 12.8");
  EXPECT_EQ(d.type, DeviceType::DiscreteGpu);
  EXPECT_EQ(d.compute_capability, 90u);
  EXPECT_EQ(d.subgroup_size, 32u);
  EXPECT_EQ(d.shared_memory_bytes, 227u * 1024);  // the opt-in limit (dynamic shared memory)
  EXPECT_EQ(d.max_workgroup_invocations, 1024u);
  EXPECT_EQ(d.max_workgroup_size, (std::array<uint32_t, 3>{1024, 1024, 64}));
  EXPECT_EQ(d.max_workgroup_count, (std::array<uint32_t, 3>{2147483647u, 65535, 65535}));
  EXPECT_EQ(d.memory_bytes, uint64_t(1) << 30);
  for (Feature f : {Feature::Float16, Feature::Float64, Feature::Int64, Feature::AtomicAddInt, Feature::AtomicAddF32})
    EXPECT_TRUE(d.features.has(f)) << feature_name(f);
  EXPECT_NO_THROW(rt::open_device("cuda:0"));
  try {
    rt::open_device("cuda:1");
    FAIL() << "cuda:1 opened";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:1")) << e.what();
  }
  try {
    cuda::open(1);
    FAIL() << "cuda::open(1) succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:1")) << e.what();
    EXPECT_TRUE(contains(e.what(), "reports 1 device")) << e.what();
  }
}

// Every buffer frees its driver allocation, and an empty one takes none (the driver refuses cuMemAlloc(0)).
// Transfers, fills and OutOfMemory are tests/runtime/conformance's, which runs on this mock too.
TEST_F(CudaMock, BuffersFreeTheirAllocations) {
  int before = mock.live_allocations();
  {
    auto b = dev->alloc(1000);
    EXPECT_EQ(mock.live_allocations(), before + 1);
    auto empty = dev->alloc(0);
    EXPECT_EQ(mock.live_allocations(), before + 1);
    dev->fill(*empty, 1);
  }
  EXPECT_EQ(mock.live_allocations(), before);
}

TEST_F(CudaMock, DispatchPacksPointersAndScalars) {
  auto k = spire::backends::compile_and_load(*dev, scale_kernel());
  auto x = dev->alloc(8192), y = dev->alloc(8192);
  int first = mock.launch_count();
  BufferView views[] = {BufferView(*x, 32), BufferView(*y, 4096, 4096)};
  dev->dispatch_now(*k, views, scale_args(), Grid::threads(1000, 128));
  ASSERT_EQ(mock.launch_count(), first + 1);
  Launch l = launch(first);
  EXPECT_EQ(l.name, "scale");
  EXPECT_EQ(l.grid, (std::array<unsigned, 3>{8, 1, 1}));
  EXPECT_EQ(l.block, (std::array<unsigned, 3>{64, 2, 1}));
  ASSERT_EQ(l.args.size(), 6u);
  EXPECT_EQ(l.args[0], ptr(x) + 32);
  EXPECT_EQ(l.args[1], ptr(y) + 4096);
  EXPECT_EQ(l.args[2], 1000u);
  EXPECT_EQ(l.args[3], std::bit_cast<uint32_t>(2.5f));
  EXPECT_EQ(l.args[4], std::bit_cast<uint64_t>(-(int64_t(1) << 40)));
  EXPECT_EQ(l.args[5], std::bit_cast<uint64_t>(0.125));
}

// A tensor copy of an 8 x 32 box at (32, 8) of a 16 x 64 f32 tensor: one invocation arrives expecting the box's bytes
// and issues the copy, every invocation waits for the phase and writes out its element of the box.
kir::Kernel box_copy_kernel() {
  KernelBuilder kb("box_copy", 256);
  auto src = kb.buffer("src", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto tile = kb.shared("tile", Type::F32, 8 * 32);
  const uint32_t map = kb.tensor_map("src_map", src, {64, 16}, {64}, {32, 8}, /*swizzle_128=*/false);
  const uint32_t landed = kb.arrival_barriers("landed", 1, 1);
  Val lid = kb.local_id();
  kb.if_(lid == 0u, [&] {
    kb.arrive(landed, kb.u32(0), 8 * 32 * 4);
    kb.tensor_copy(tile, kb.u32(0), map, {kb.u32(32), kb.u32(8)}, landed, kb.u32(0));
  });
  kb.await_phase(landed, kb.u32(0), kb.u32(0));
  out[lid] = tile[lid];
  return kb.finish();
}

// Tensor maps are encoded at dispatch against the bound view (its start is element 0), and a view smaller than the
// tensor the map describes is refused by name before anything runs.
TEST_F(CudaMock, TensorMapsAreEncodedAgainstTheBoundView) {
  ASSERT_TRUE(dev->info().features.has(Feature::TensorCopy));
  auto k = spire::backends::compile_and_load(*dev, box_copy_kernel());
  std::vector<float> src(64 * 16 + 4);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
  auto in = dev->alloc(src.size() * 4), out = dev->alloc(256 * 4);
  dev->upload(*in, src.data(), src.size() * 4);
  BufferView views[] = {BufferView(*in, 16), BufferView(*out)};  // the tensor starts at src[4]
  dev->dispatch_now(*k, views, ScalarArgs(), Grid{1});
  std::vector<float> got(256);
  dev->download(*out, got.data(), got.size() * 4);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], float(4 + (8 + i / 32) * 64 + 32 + i % 32)) << i;

  BufferView short_views[] = {BufferView(*in, 16, 64 * 16 * 4 - 16), BufferView(*out)};
  try {
    dev->dispatch_now(*k, short_views, ScalarArgs(), Grid{1});
    FAIL() << "a view smaller than the tensor map was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "tensor map src_map (buffer src): the tensor spans 4096 bytes and the view holds 4080"))
        << e.what();
  }
}

TEST_F(CudaMock, HugeGridsFoldWithinLimits) {
  KernelBuilder kb("mock_noexec_wide", 32);  // 5e9 workgroups: logged, not interpreted
  auto o = kb.buffer("o", Type::U32, Access::Write);
  o[kb.global_id() % 16u] = kb.group_id();
  auto k = spire::backends::compile_and_load(*dev, kb.finish());
  auto b = dev->alloc(64);
  int first = mock.launch_count();
  BufferView views[] = {*b};
  const uint64_t groups = 5000000000ull;
  dev->dispatch_now(*k, views, ScalarArgs(), Grid::workgroups(groups));
  Launch l = launch(first);
  EXPECT_EQ(l.grid, fold_grid(groups, dev->info().max_workgroup_count));
  EXPECT_GE(uint64_t(l.grid[0]) * l.grid[1] * l.grid[2], groups);
  // An empty grid launches nothing.
  dev->dispatch_now(*k, views, ScalarArgs(), Grid::workgroups(0));
  EXPECT_EQ(mock.launch_count(), first + 1);
}

std::string launch_name(const MockApi& mock, int i) {
  char name[256] = {};
  unsigned grid[3], block[3];
  uint64_t args[64];
  return mock.launch(i, name, sizeof name, grid, block, args, 64) < 0 ? std::string("(none)") : std::string(name);
}

// fill, dispatch, copy in one stream, replayed three times.
void record_and_replay(Device& dev, MockApi& mock, const std::string& kernel, bool expect_graph,
                       const std::string& expect_reason) {
  auto k = spire::backends::compile_and_load(dev, scale_kernel(kernel));
  auto x = dev.alloc(4096), y = dev.alloc(4096), z = dev.alloc(4096);
  auto s = dev.record();
  s->fill(BufferView(*x, 0, 1024), 0x11111111u);
  BufferView views[] = {*x, *y};
  s->dispatch(*k, views, scale_args(), Grid{3});
  s->barrier();
  s->copy(BufferView(*x, 0, 1024), BufferView(*z, 1024));
  s->finish();
  auto* cs = dynamic_cast<CudaCommandStream*>(s.get());
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->uses_graph(), expect_graph);
  EXPECT_TRUE(contains(cs->graph_fallback_reason(), expect_reason)) << cs->graph_fallback_reason();
  int first = mock.launch_count();
  for (int r = 0; r < 3; ++r) dev.run(*s);
  EXPECT_EQ(mock.launch_count(), first + 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(launch_name(mock, first + r), kernel);
  std::vector<uint32_t> got(256);
  dev.download(*z, got.data(), 1024, 1024);
  for (uint32_t v : got) ASSERT_EQ(v, 0x11111111u);
  EXPECT_THROW(s->fill(*x, 0), Error);  // finished streams take no more commands
}

TEST_F(CudaMock, StreamReplaysAsGraph) { record_and_replay(*dev, mock, "scale", true, ""); }

// On compute capability 9.0 (the mock's) a kernel that follows a kernel is launched programmatically (it waits for the
// one before in its first instructions, griddepcontrol.wait, which the PTX for sm_90 holds); the first, and one after
// a copy, are plain. The chain's result is the same (y = x * 2.5 + c twice), in a graph and in a launch list. That is
// the default (SPIRE_CUDA_PDL unset) and SPIRE_CUDA_PDL=1; with SPIRE_CUDA_PDL=0 nothing is.
TEST_F(CudaMock, ChainedKernelsLaunchProgrammatically) {
  ASSERT_NE(mock.launch_programmatic, nullptr);
  auto k = spire::backends::compile_and_load(*dev, scale_kernel());
  ASSERT_TRUE(dynamic_cast<const CudaKernel&>(*k).waits_for_previous());
  const double c = double(-(int64_t(1) << 40)) + 0.125;
  for (const char* graphs : {"1", "0"})
    for (const char* pdl : {"1", "0", "unset"}) {
      SCOPED_TRACE(fmt::format("SPIRE_CUDA_GRAPHS={} SPIRE_CUDA_PDL={}", graphs, pdl));
      ::setenv("SPIRE_CUDA_GRAPHS", graphs, 1);
      if (std::string(pdl) == "unset")
        ::unsetenv("SPIRE_CUDA_PDL");
      else
        ::setenv("SPIRE_CUDA_PDL", pdl, 1);
      auto x = dev->alloc(4096), y = dev->alloc(4096), z = dev->alloc(4096), w = dev->alloc(4096);
      std::vector<float> in(1000);
      for (size_t i = 0; i < in.size(); ++i) in[i] = float(i);
      dev->upload(*x, in.data(), 4000);
      auto s = dev->record();
      BufferView first[] = {*x, *y}, second[] = {*y, *z}, third[] = {*w, *x};
      s->dispatch(*k, first, scale_args(), Grid{8});
      s->barrier();
      s->dispatch(*k, second, scale_args(), Grid{8});
      s->barrier();
      s->copy(BufferView(*z, 0, 4000), BufferView(*w, 0, 4000));
      s->barrier();
      s->dispatch(*k, third, scale_args(), Grid{8});
      const int before = mock.launch_count();
      dev->run(*s);
      ASSERT_EQ(mock.launch_count(), before + 3);
      const bool on = std::string(pdl) != "0";
      EXPECT_EQ(mock.launch_programmatic(before), 0) << "the first kernel follows nothing";
      EXPECT_EQ(mock.launch_programmatic(before + 1), on ? 1 : 0) << "the second follows the first";
      EXPECT_EQ(mock.launch_programmatic(before + 2), 0) << "the third follows a copy";
      std::vector<float> got(1000);
      dev->download(*x, got.data(), 4000);
      auto step = [&](double v) { return v * 2.5 + float(c); };
      for (size_t i = 0; i < got.size(); ++i) {
        const double want = step(step(step(double(i))));
        ASSERT_NEAR(got[i], want, 1e-6 * std::abs(want)) << i;
      }
    }
}

// A kernel that reads a buffer before its wait (kir::WaitForPriorKernels: a few-rows product's weights) is launched
// programmatically only where the launch before it writes none of what it reads early: after a launch that wrote its
// early buffer it starts only once that one has ended. Results as without overlap, in a graph and a launch list.
TEST_F(CudaMock, AnEarlyReadOfWhatTheLaunchBeforeWroteIsNotOverlapped) {
  auto k = spire::backends::compile_and_load(*dev, spire::testing::early_read_kernel());
  ASSERT_TRUE(dynamic_cast<const CudaKernel&>(*k).interface().buffers[0].read_before_wait);
  ::setenv("SPIRE_CUDA_PDL", "1", 1);
  for (const char* graphs : {"1", "0"}) {
    SCOPED_TRACE(fmt::format("SPIRE_CUDA_GRAPHS={}", graphs));
    ::setenv("SPIRE_CUDA_GRAPHS", graphs, 1);
    auto a = dev->alloc(1024), zero = dev->alloc(1024), b = dev->alloc(1024), c = dev->alloc(1024), d = dev->alloc(1024);
    std::vector<float> in(256), zeros(256, 0.0f);
    for (size_t j = 0; j < in.size(); ++j) in[j] = float(j) + 0.5f;
    dev->upload(*a, in.data(), 1024);
    dev->upload(*zero, zeros.data(), 1024);
    auto s = dev->record();
    BufferView writes_b[] = {*a, *zero, *b}, reads_b_early[] = {*b, *a, *c}, reads_a_early[] = {*a, *b, *d};
    s->dispatch(*k, writes_b, ScalarArgs(), Grid{4});  // b = a
    s->barrier();
    s->dispatch(*k, reads_b_early, ScalarArgs(), Grid{4});  // c = b + a: b written by the launch before
    s->barrier();
    s->dispatch(*k, reads_a_early, ScalarArgs(), Grid{4});  // d = a + b: a written by no launch
    const int before = mock.launch_count();
    dev->run(*s);
    ASSERT_EQ(mock.launch_count(), before + 3);
    EXPECT_EQ(mock.launch_programmatic(before + 1), 0) << "reads early what the launch before wrote";
    EXPECT_EQ(mock.launch_programmatic(before + 2), 1) << "reads early only what no launch wrote";
    std::vector<float> got_c(256), got_d(256);
    dev->download(*c, got_c.data(), 1024);
    dev->download(*d, got_d.data(), 1024);
    for (size_t j = 0; j < in.size(); ++j) {
      ASSERT_EQ(got_c[j], 2 * in[j]) << j;
      ASSERT_EQ(got_d[j], 2 * in[j]) << j;
    }
  }
}

TEST_F(CudaMock, StreamReplaysAsLaunchListWhenGraphsAreOff) {
  ::setenv("SPIRE_CUDA_GRAPHS", "0", 1);
  record_and_replay(*dev, mock, "scale", false, "SPIRE_CUDA_GRAPHS=0");
}

TEST_F(CudaMock, FailedCaptureFallsBackToLaunchList) {
  ::testing::internal::CaptureStderr();
  record_and_replay(*dev, mock, "mock_no_capture", false, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "CUDA graph capture failed")) << err;  // said out loud, once
}

void timestamps(Device& dev) {
  auto k = spire::backends::compile_and_load(dev, scale_kernel());
  auto x = dev.alloc(4096), y = dev.alloc(4096);
  BufferView views[] = {*x, *y};
  auto s = dev.record();
  uint32_t t0 = s->timestamp();
  s->dispatch(*k, views, scale_args(), Grid{1});
  uint32_t t1 = s->timestamp();
  s->dispatch(*k, views, scale_args(), Grid{1});
  s->dispatch(*k, views, scale_args(), Grid{1});
  uint32_t t2 = s->timestamp();
  EXPECT_THROW(s->elapsed_ms(t0, t1), Error);  // before any submission
  dev.run(*s);
  double a = s->elapsed_ms(t0, t1), b = s->elapsed_ms(t0, t2);
  EXPECT_GT(a, 0.0);
  EXPECT_GT(b, a);
  EXPECT_THROW(s->elapsed_ms(t0, 3), Error);
}

// Timestamps recorded as events in a launch list (in a CUDA graph, the default, they are
// tests/runtime/conformance's).
TEST_F(CudaMock, TimestampsInLaunchList) {
  ::setenv("SPIRE_CUDA_GRAPHS", "0", 1);
  timestamps(*dev);
}

TEST_F(CudaMock, RejectedPtxReportsTheJitLogAndSavesTheModule) {
  try {
    spire::backends::compile_and_load(*dev, scale_kernel("mock_reject_me"));
    FAIL() << "rejected module compiled";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "cuda:0")) << msg;
    EXPECT_TRUE(contains(msg, "mock_reject_me")) << msg;
    EXPECT_TRUE(contains(msg, "CUDA_ERROR_INVALID_PTX")) << msg;
    EXPECT_TRUE(contains(msg, "mock rejected this module")) << msg;
    auto at = msg.find("PTX saved to ");
    ASSERT_NE(at, std::string::npos) << msg;
    std::string path = msg.substr(at + 13);
    std::stringstream saved;
    saved << std::ifstream(path).rdbuf();
    EXPECT_TRUE(contains(saved.str(), ".visible .entry mock_reject_me(")) << path;
    std::remove(path.c_str());
  }
}

TEST_F(CudaMock, KernelFaultIsReportedAsSticky) {
  auto k = spire::backends::compile_and_load(*dev, scale_kernel("mock_fault"));
  auto x = dev->alloc(4096), y = dev->alloc(4096);
  BufferView views[] = {*x, *y};
  try {
    dev->dispatch_now(*k, views, scale_args(), Grid{1});
    FAIL() << "fault not reported";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "CUDA_ERROR_ILLEGAL_ADDRESS")) << e.what();
    EXPECT_TRUE(contains(e.what(), "a kernel faulted")) << e.what();
  }
  mock.clear_sticky_error();
}

TEST_F(CudaMock, WorksFromAnotherThread) {
  auto b = dev->alloc(64);
  uint32_t v = 0;
  std::thread t([&] {
    uint32_t w = 77;
    dev->upload(*b, &w, 4);
    dev->download(*b, &v, 4);
  });
  t.join();
  EXPECT_EQ(v, 77u);
}

TEST_F(CudaMock, BuffersAndKernelsMayOutliveTheDevice) {
  int before = mock.live_allocations();
  std::shared_ptr<Buffer> b;
  std::shared_ptr<Kernel> k;
  {
    auto d = cuda::open(0);
    b = d->alloc(128);
    k = spire::backends::compile_and_load(*d, scale_kernel());
  }
  EXPECT_EQ(mock.live_allocations(), before + 1);
  b.reset();
  k.reset();
  EXPECT_EQ(mock.live_allocations(), before);
}

}  // namespace
}  // namespace spire::rt::cuda::testing
