// Every kernel lowering produces -- each op of the op harness forward and backward, and the whole LeNet
// training step -- compiled to PTX for sm_90 and assembled by ptxas. This runs the real lowering on a device
// that compiles but does not execute (results are not checked here; tests/runtime/cuda and `spire test-ops` do that on
// a GPU), so a kernel the PTX backend mishandles is found on a machine without one.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "tests/support/h100_like_target.h"
#include "backends/ptx/ptx_backend.h"
#include "frontend/lenet.h"
#include "ir/kernel/printer.h"
#include "op_harness/op_harness.h"
#include "lowering/plan.h"
#include "ir/kernel/kernel.h"
#include "tests/backends/ptx/ptxas_runner.h"

namespace spire::ptx::testing {
namespace {

rt::DeviceInfo h100_like() { return testing_support::h100_like_target("ptx-only:0"); }

// Compiles every distinct kernel once (by PTX text) and remembers which failed and why.
class PtxChecker {
 public:
  explicit PtxChecker(std::string ptxas) : ptxas_(std::move(ptxas)) {}
  void check(const kir::Kernel& k, uint32_t sm = 90) {
    std::string ptx;
    try {
      ptx = compile(k, Target{sm});
    } catch (const std::exception& e) {
      failures_.push_back(fmt::format("kernel '{}': {}\n{}", k.name, e.what(), kir::print(k)));
      return;
    }
    check_text(ptx, k.name, sm, kir::print(k));
  }
  // PTX already generated (a loaded binary, whose kernel IR the runtime does not keep): assembled once per distinct
  // text; `detail` goes into a failure's message.
  void check_text(const std::string& ptx, const std::string& name, uint32_t sm = 90, const std::string& detail = "") {
    if (!seen_.insert(ptx).second) return;
    AssembleResult r = assemble(ptxas_, ptx, sm);
    if (!r.ok) failures_.push_back(fmt::format("kernel '{}':\n{}\n--- kernel ---\n{}", name, r.log, detail));
  }
  size_t distinct() const { return seen_.size(); }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::string ptxas_;
  std::set<std::string> seen_;
  std::vector<std::string> failures_;
};

// A device that compiles through PtxChecker and otherwise only keeps bytes on the host.
class CompileOnlyDevice final : public rt::Device {
 public:
  explicit CompileOnlyDevice(PtxChecker& checker) : checker_(checker), info_(h100_like()) {}
  const rt::DeviceInfo& info() const override { return info_; }
  rt::SyncCounts sync_counts() const override { return {}; }

  std::shared_ptr<rt::Buffer> alloc(uint64_t bytes, rt::Memory memory) override {
    return std::make_shared<HostBuffer>(bytes, memory);
  }
  void upload(rt::Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) override {
    std::memcpy(static_cast<HostBuffer&>(dst).data.data() + offset, src, bytes);
  }
  void download(const rt::Buffer& src, void* dst, uint64_t bytes, uint64_t offset) override {
    std::memcpy(dst, static_cast<const HostBuffer&>(src).data.data() + offset, bytes);
  }
  void fill(rt::Buffer& dst, uint32_t pattern) override {
    auto& d = static_cast<HostBuffer&>(dst).data;
    for (size_t i = 0; i < d.size(); ++i) d[i] = uint8_t(pattern >> (8 * (i % 4)));
  }
  std::shared_ptr<rt::Kernel> load(const rt::KernelBinary& b) override {
    checker_.check_text(b.ptx, b.interface.name, b.ptx_sm);
    return std::make_shared<LoadedKernel>(b.interface);
  }
  std::unique_ptr<rt::CommandStream> record() override { return std::make_unique<NullStream>(); }
  std::unique_ptr<rt::Fence> submit(rt::CommandStream&) override { return std::make_unique<DoneFence>(); }
  void wait_idle() override {}

 private:
  struct HostBuffer final : rt::Buffer {
    HostBuffer(uint64_t bytes, rt::Memory m) : data(bytes), mem(m) {}
    uint64_t size() const override { return data.size(); }
    rt::Memory memory() const override { return mem; }
    void* mapped() const override { return const_cast<uint8_t*>(data.data()); }
    std::vector<uint8_t> data;
    rt::Memory mem;
  };
  struct LoadedKernel final : rt::Kernel {
    explicit LoadedKernel(rt::KernelInterface k) : k_(std::move(k)) {}
    const rt::KernelInterface& interface() const override { return k_; }
    rt::KernelInterface k_;
  };
  struct NullStream final : rt::CommandStream {
    void dispatch(const rt::Kernel&, std::span<const rt::BufferView>, const rt::ScalarArgs&, rt::Grid) override {}
    void barrier() override {}
    void copy(rt::BufferView, rt::BufferView) override {}
    void fill(rt::BufferView, uint32_t) override {}
    uint32_t timestamp() override { return n_++; }
    double elapsed_ms(uint32_t, uint32_t) const override { return 0; }
    void finish() override {}
    uint32_t n_ = 0;
  };
  struct DoneFence final : rt::Fence {
    void wait() override {}
    bool ready() override { return true; }
  };

  PtxChecker& checker_;
  rt::DeviceInfo info_;
};

std::string joined(const std::vector<std::string>& failures) {
  std::string out;
  for (size_t i = 0; i < failures.size() && i < 5; ++i) out += failures[i] + "\n";
  if (failures.size() > 5) out += fmt::format("... and {} more\n", failures.size() - 5);
  return out;
}

TEST(PtxLowering, LeNetTrainingStepAssembles) {
  auto ptxas = find_ptxas();
  if (!ptxas) GTEST_SKIP() << "ptxas not found: PTX not assembled (looked on PATH and in /usr/local/cuda/bin)";
  PtxChecker checker(*ptxas);
  for (bool sgd : {false, true}) {
    nn::LeNetGraphOptions opt;
    opt.batch = 64;
    opt.sgd = sgd;
    lowering::Plan plan = lowering::lower(nn::build_lenet_graph(opt), h100_like());
    ASSERT_FALSE(plan.kernels.empty());
    for (const kir::Kernel& k : plan.kernels) checker.check(k);
  }
  std::cout << checker.distinct() << " distinct LeNet kernels assembled for sm_90\n";
  EXPECT_TRUE(checker.failures().empty()) << joined(checker.failures());
}

TEST(PtxLowering, EveryOpHarnessCaseAssembles) {
  auto ptxas = find_ptxas();
  if (!ptxas) GTEST_SKIP() << "ptxas not found: PTX not assembled (looked on PATH and in /usr/local/cuda/bin)";
  PtxChecker checker(*ptxas);
  CompileOnlyDevice dev(checker);
  std::vector<std::string> lowering_errors;
  for (const harness::OpCase& c : harness::op_cases()) {
    // Outcomes are meaningless here (nothing runs); a row whose note is not about values is a lowering
    // problem worth seeing, but only the PTX failures are this test's business.
    for (const auto& row : harness::run_op_case(c, dev))
      if (row.check == "all" && row.outcome == harness::Outcome::Fail)
        lowering_errors.push_back(fmt::format("{} {}: {}", row.op, row.label, row.note));
  }
  std::cout << checker.distinct() << " distinct kernels assembled for sm_90 over " << harness::op_cases().size()
            << " op cases\n";
  for (const auto& e : lowering_errors) std::cout << "note (not a PTX failure): " << e << "\n";
  EXPECT_TRUE(checker.failures().empty()) << joined(checker.failures());
}

}  // namespace
}  // namespace spire::ptx::testing
