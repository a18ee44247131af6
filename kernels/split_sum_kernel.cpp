#include "kernels/split_sum_kernel.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint64_t kWantedWorkgroups = 264;  // two per core of a 132-core GPU
constexpr uint32_t kManySplits = 64;          // fewer are short walks: the splits in order, as always

}  // namespace

uint32_t split_sum_parts(uint32_t count, uint32_t splits) {
  if (count == 0 || splits < kManySplits) return 1;
  uint32_t parts = 1;
  while (parts < 32 && parts * 2 <= splits && uint64_t(count) * parts < kWantedWorkgroups * kElementWorkgroup) parts *= 2;
  return parts;
}

HeavyKernel split_sum_kernel(std::string name, Type t, uint32_t count, uint32_t splits,
                             std::optional<uint32_t> first_count) {
  if (count == 0) return empty_result(name);
  if (first_count && *first_count > count)
    throw std::invalid_argument(fmt::format("{}: {} outputs of {} in the first result", name, *first_count, count));
  const uint32_t parts = split_sum_parts(count, splits);
  KernelBuilder kb(std::move(name), kElementWorkgroup);
  Buf partial = kb.buffer("partial", t, Access::Read);
  Buf out = kb.buffer("out", t, Access::Write);
  std::optional<Buf> rest;
  if (first_count && *first_count < count) rest = kb.buffer("out_rest", t, Access::Write);
  auto store = [&](Val e, Val v) {
    if (!rest) {
      out[e] = v;
      return;
    }
    kb.if_else(e < *first_count, [&] { out[e] = v; }, [&] { (*rest)[e - *first_count] = v; });
  };
  if (parts == 1) {
    Val e = kb.global_id();
    kb.if_(e < count, [&] {
      Val acc = partial[e];
      for (uint32_t sp = 1; sp < splits; ++sp) acc = acc + partial[e + sp * count];
      store(e, acc);
    });
    return {kb.finish(), groups_for_threads(count, kElementWorkgroup)};
  }
  // Invocation lid: output kElementWorkgroup / parts x group + lid % (kElementWorkgroup / parts), part lid / (kElementWorkgroup / parts), so that
  // a subgroup reads neighbouring outputs of one split.
  const uint32_t per_group = kElementWorkgroup / parts;
  Shared tile = kb.shared("parts", t, kElementWorkgroup);
  Val lid = kb.local_id();
  Val e = kb.group_id() * per_group + lid % per_group, part = lid / per_group;
  Val valid = e < count;
  Val at = min(e, count - 1);  // past the last output: a real element, never stored
  Var acc = kb.var("acc", kb.constant(t, 0));
  const uint32_t rounds = (splits + parts - 1) / parts;
  for (uint32_t r = 0; r < rounds; ++r) {
    Val sp = part + r * parts;
    if ((r + 1) * parts <= splits) acc = acc + partial[at + sp * count];
    else kb.if_(sp < splits, [&] { acc = acc + partial[at + sp * count]; });
  }
  tile[lid] = acc.get();
  kb.barrier();
  kb.if_(valid & (part == 0u), [&] {
    Val sum = tile[lid];
    for (uint32_t j = 1; j < parts; ++j) sum = sum + tile[lid + j * per_group];
    store(e, sum);
  });
  return {kb.finish(), (uint64_t(count) + per_group - 1) / per_group};
}

}  // namespace spire::lowering::heavy
