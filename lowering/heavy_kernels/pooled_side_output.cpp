#include "lowering/heavy_kernels/pooled_side_output.h"

namespace spire::lowering::heavy {

using namespace kir;

bool pools_in_pairs(const Pool2dShape& pool, int64_t ho, int64_t wo, const Limits& limits) {
  return pool.kh == 2 && pool.kw == 2 && pool.stride_h == 2 && pool.stride_w == 2 && pool.pad_h == 0 &&
         pool.pad_w == 0 && pool.h == ho && pool.w == wo && ho % 2 == 0 && wo % 2 == 0 && limits.subgroup_size >= 2;
}

uint32_t pooled_workgroup(uint32_t wg, const Limits& limits) { return limits.ptx ? (wg + 31) / 32 * 32 : wg; }

Val pool_max(Val a, Val b) { return select(takes_window_max(b, a), b, a); }

void store_pair_maxima(KernelBuilder& kb, PairStores split, Val lid, Val valid, const std::vector<Val>& halves,
                       const std::function<Val(uint32_t)>& index_of, const std::function<void(Val, Val)>& store,
                       const std::function<Val(uint32_t)>& exists) {
  const uint32_t values = uint32_t(halves.size()), first = (values + 1) / 2;
  std::vector<Val> window;
  for (Val h : halves) window.push_back(pool_max(h, kb.shuffle_xor(h, 1)));
  Val odd = (lid % 2) == 1u;
  auto store_one = [&](uint32_t k) {
    if (exists) kb.if_(exists(k), [&] { store(index_of(k), window[k]); });
    else store(index_of(k), window[k]);
  };
  if (split == PairStores::Branched) {
    kb.if_(valid & !odd, [&] {
      for (uint32_t k = 0; k < first; ++k) store_one(k);
    });
    kb.if_(valid & odd, [&] {
      for (uint32_t k = first; k < values; ++k) store_one(k);
    });
    return;
  }
  for (uint32_t k = 0; k < first; ++k) {
    const bool pair = first + k < values;  // else (an odd count) the even invocation stores the last window alone
    Val at = pair ? select(odd, index_of(first + k), index_of(k)) : index_of(k);
    Val m = pair ? select(odd, window[first + k], window[k]) : window[k];
    Val keep = pair ? valid : valid & !odd;
    if (exists) keep = keep & (pair ? select(odd, exists(first + k), exists(k)) : exists(k));
    kb.if_(keep, [&] { store(at, m); });
  }
}

}  // namespace spire::lowering::heavy
