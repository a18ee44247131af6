// Layout ops: reshape, flatten, permute, broadcast_to and sum_to over several ranks and dtypes.
#include "op_harness/cases.h"

namespace spire::harness {

void layout_cases(CaseList& cl) {
  auto reshape = [&](Shape from, Shape to) {
    cl.add(OpKind::Reshape, {f32(from)}, [to](Graph& g, const std::vector<Value>& x) { return g.reshape(x[0], to); },
           "shape=" + ints(to));
  };
  reshape({7, 33}, {33, 7});
  reshape({2, 3, 5}, {30});
  reshape({257}, {1, 257, 1});
  auto flatten = [&](Shape from, int64_t a, int64_t b) {
    cl.add(OpKind::Flatten, {f32(from)}, [a, b](Graph& g, const std::vector<Value>& x) { return g.flatten(x[0], a, b); },
           fmt::format("start_dim={} end_dim={}", a, b));
  };
  flatten({2, 3, 5, 7}, 1, -1);
  flatten({2, 3, 5, 7}, 1, 2);
  auto permute = [&](OpInput from, std::vector<int64_t> perm) {
    cl.add(OpKind::Permute, {from}, [perm](Graph& g, const std::vector<Value>& x) { return g.permute(x[0], perm); },
           "perm=" + ints(perm));
  };
  permute(f32({7, 33}), {1, 0});
  permute(f32({2, 3, 5}), {2, 0, 1});
  permute(f32({2, 3, 5, 7}), {0, 2, 3, 1});
  permute(f32({1, 7, 1, 33}), {2, 3, 0, 1});
  permute(f64({7, 33}), {1, 0});
  permute(in(DType::I32, {3, 5}, Draw::Integers, -9, 9), {1, 0});
  auto broadcast = [&](OpInput from, Shape to) {
    cl.add(OpKind::BroadcastTo, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.broadcast_to(x[0], to); },
           "shape=" + ints(to));
  };
  broadcast(f32({33}), {7, 33});
  broadcast(f32({7, 1}), {7, 33});
  broadcast(f32({}), {4, 5});
  broadcast(f32({1, 5}), {2, 3, 5});
  broadcast(f32({3, 1}), {1, 3, 257});
  broadcast(f64({33}), {7, 33});
  auto sum_to = [&](OpInput from, Shape to) {
    cl.add(OpKind::SumTo, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.sum_to(x[0], to); },
           "shape=" + ints(to));
  };
  sum_to(f32({7, 33}), {33});
  sum_to(f32({7, 33}), {7, 1});
  sum_to(f32({2, 3, 5}), {3, 1});
  sum_to(f32({4, 5}), {});
  sum_to(f32({300, 257}), {1, 257});
  sum_to(f64({7, 33}), {33});
  sum_to(in(DType::I32, {7, 33}, Draw::Integers, -9, 9), {33});
  for (DType t : kHalfTypes) permute(in(t, {2, 3, 5}), {2, 0, 1});
}


}  // namespace spire::harness
