#include "kernels/pooled_side_output.h"

namespace spire::lowering::heavy {

using namespace kir;

bool pools_in_pairs(const Pool2dShape& pool, int64_t ho, int64_t wo, const Limits& limits) {
  return pool.kh == 2 && pool.kw == 2 && pool.stride_h == 2 && pool.stride_w == 2 && pool.pad_h == 0 &&
         pool.pad_w == 0 && pool.h == ho && pool.w == wo && ho % 2 == 0 && wo % 2 == 0 && limits.subgroup_size >= 2;
}

uint32_t pooled_workgroup(uint32_t wg, const Limits& limits) { return limits.ptx ? (wg + 31) / 32 * 32 : wg; }

std::string PooledOutputs::suffix() const {
  return std::string("_pooled") + (argmax ? "_argmax" : "") + (result ? "" : "_only");
}

PooledBuffers declare_pooled_buffers(KernelBuilder& kb, const PooledOutputs& out, Type t) {
  PooledBuffers b{kb.buffer("pooled", t, Access::Write), std::nullopt};
  if (out.argmax) b.argmax = kb.buffer("argmax", Type::I32, Access::Write);
  return b;
}

namespace {

// A candidate for a window's maximum: a value and its position in the window.
struct Candidate {
  Val value, position;
};

// The window's pick among two candidates of distinct positions, by max_pool2d's sequential rule (a later element
// replaces the best when larger, or a NaN): any NaN beats a number and the later NaN wins; else the larger wins, and
// of equals (+0 and -0 too) the earlier. Symmetric, so both invocations of a pair pick the same.
Candidate pick(Candidate a, Candidate b) {
  Val a_nan = a.value != a.value, b_nan = b.value != b.value;
  Val later = b.position > a.position;
  Val take_b = select(a_nan | b_nan, b_nan & ((!a_nan) | later),
                      (b.value > a.value) | ((b.value == a.value) & !later));
  return {select(take_b, b.value, a.value), select(take_b, b.position, a.position)};
}

}  // namespace

void store_pair_maxima(KernelBuilder& kb, PairStores split, PairHalves layout, Val lid, Val valid,
                       const std::vector<WindowHalf>& halves, const std::function<Val(uint32_t)>& index_of,
                       const PooledBuffers& out, const std::function<Val(uint32_t)>& exists) {
  const uint32_t values = uint32_t(halves.size()), first = (values + 1) / 2;
  Val odd = (lid % 2) == 1u;
  // The invocation's two positions in the window: 2 parity, 2 parity + 1 (Rows) or parity, parity + 2 (Columns).
  Val parity = cast(lid % 2, Type::I32);
  Val p0 = layout == PairHalves::Rows ? parity * 2 : parity;
  Val p1 = p0 + (layout == PairHalves::Rows ? 1 : 2);
  std::vector<Candidate> window;
  for (const WindowHalf& h : halves) {
    // Within the half, the sequential rule: the second element replaces the first when larger, or a NaN.
    Val second_wins = takes_window_max(h.second, h.first);
    Candidate mine{select(second_wins, h.second, h.first), select(second_wins, p1, p0)};
    Candidate theirs{kb.shuffle_xor(mine.value, 1), kb.shuffle_xor(mine.position, 1)};
    window.push_back(pick(mine, theirs));
  }
  auto store = [&](Val at, const Candidate& c) {
    out.pooled[at] = c.value;
    if (out.argmax) (*out.argmax)[at] = c.position;
  };
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
    Candidate m = window[k];
    if (pair) m = {select(odd, window[first + k].value, m.value), select(odd, window[first + k].position, m.position)};
    Val keep = pair ? valid : valid & !odd;
    if (exists) keep = keep & (pair ? select(odd, exists(first + k), exists(k)) : exists(k));
    kb.if_(keep, [&] { store(at, m); });
  }
}

}  // namespace spire::lowering::heavy
