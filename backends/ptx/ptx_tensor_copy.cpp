// Tensor copies (kir::TensorCopy) as Hopper's cp.async.bulk.tensor and arrival barriers (kir::ArrivalBarriers) as
// mbarrier objects in shared memory (sm_90, PTX ISA 8.0).
//
// A tensor map is the driver's 128-byte CUtensorMap, passed by value as a kernel parameter; the copy names it by the
// parameter's generic address (cvta.param, as nvcc does for a __grid_constant__ map). Each copy announces its bytes
// to an mbarrier (complete_tx), which an Arrive told to expect them (arrive.expect_tx); AwaitPhase spins on
// try_wait.parity, which itself suspends the thread for a while before it returns false.
#include "backends/ptx/ptx_translator.h"

#include <fmt/format.h>

#include "backends/ptx/ptx_shared_layout.h"

namespace spire::ptx {

void Translator::init_arrival_barriers() {
  if (k_.arrival_barriers.empty()) return;
  // One invocation initializes every barrier before anything else runs, makes the initialization visible to the
  // copy engine (fence.mbarrier_init), and the workgroup barrier publishes it to the other invocations.
  auto tid = w_.reg(RegClass::B32);
  builtin(kir::Builtin::LocalId, tid);
  auto other = w_.reg(RegClass::Pred);
  auto done = w_.new_label("barriers_ready");
  w_.ins(fmt::format("setp.ne.u32 {}, {}, 0;", other, tid));
  w_.ins(fmt::format("@{} bra {};", other, done));
  for (uint32_t i = 0; i < k_.arrival_barriers.size(); ++i)
    for (uint32_t j = 0; j < k_.arrival_barriers[i].count; ++j) {
      auto addr = w_.reg(RegClass::B32);
      w_.ins(fmt::format("add.u32 {}, {}, {};", addr, barriers_[i], j * kArrivalBarrierBytes));
      w_.ins(fmt::format("mbarrier.init.shared::cta.b64 [{}], {};", addr, k_.arrival_barriers[i].arrivals));
    }
  w_.ins("fence.mbarrier_init.release.cluster;");
  w_.label(done);
  w_.ins("bar.sync 0;");
}

std::string Translator::barrier_address(uint32_t barriers, kir::ValueId index) {
  auto addr = w_.reg(RegClass::B32);
  w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", addr, val(index), kArrivalBarrierBytes, barriers_[barriers]));
  return addr;
}

void Translator::stmt(const kir::TensorCopy& s) {
  const size_t rank = s.coords.size();
  auto dst = shared_address(s.array, s.index);
  auto bar = barrier_address(s.barriers, s.barrier);
  std::string coords;
  for (size_t i = 0; i < rank; ++i) coords += (i ? ", " : "") + val(s.coords[i]);
  w_.ins(fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes [{}], [{}, {{{}}}], [{}];",
                     rank, dst, tensor_maps_[s.map], coords, bar));
}

void Translator::stmt(const kir::Arrive& s) {
  auto bar = barrier_address(s.barriers, s.barrier);
  if (s.expect_bytes)
    w_.ins(fmt::format("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{}], {};", bar, s.expect_bytes));
  else
    w_.ins(fmt::format("mbarrier.arrive.shared::cta.b64 _, [{}];", bar));
}

void Translator::stmt(const kir::AwaitPhase& s) {
  auto bar = barrier_address(s.barriers, s.barrier);
  auto ready = w_.reg(RegClass::Pred);
  auto again = w_.new_label("await");
  w_.label(again);
  w_.ins(fmt::format("mbarrier.try_wait.parity.shared::cta.b64 {}, [{}], {};", ready, bar, val(s.parity)));
  w_.ins(fmt::format("@!{} bra {};", ready, again));
}

}  // namespace spire::ptx
