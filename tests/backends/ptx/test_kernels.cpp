#include "tests/backends/ptx/test_kernels.h"
#include "tests/support/early_read_kernel.h"

#include <fmt/format.h>

#include "ir/kernel/builder.h"

namespace spire::ptx::testing {

using namespace kir;

Kernel arithmetic_kernel(Type t) {
  KernelBuilder kb(fmt::format("arith_{}", dtype_name(t)), 128);
  auto a = kb.buffer("a", t, Access::Read);
  auto b = kb.buffer("b", t, Access::Read);
  auto out = kb.buffer("out", t, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    Val x = a[i], y = b[i];
    uint32_t k = 0;
    auto put = [&](Val v) { out[i * 32u + k++] = v; };
    put(x + y);
    put(x - y);
    put(x * y);
    put(x / y);
    put(x % y);
    put(min(x, y));
    put(max(x, y));
    put(select(x < y, x, y));
    put(select(x <= y, x, y));
    put(select(x > y, x, y));
    put(select(x >= y, x, y));
    put(select(x == y, x, y));
    put(select(x != y, x, y));
    if (t != Type::U32) {
      put(-x);
      put(abs(x));
    }
    if (is_int(t)) {
      put(x & y);
      put(x | y);
      put(x ^ y);
      put(x << (y & 7));
      put(x >> (y & 7));
      put(!x);
    }
    if (is_float(t)) {
      put(sqrt(x));
      put(rsqrt(x));
      put(floor(x));
      put(exp(x));
      put(log(x));
      put(tanh(x));
      put(pow(x, y));
      put(fma(x, y, x));
    }
  });
  return kb.finish();
}

Kernel conversion_kernel(Type from) {
  KernelBuilder kb(fmt::format("convert_from_{}", dtype_name(from)), 64);
  auto src = kb.buffer("src", from, Access::Read);
  const Type all[] = {Type::I32, Type::U32, Type::I64, Type::F16, Type::F32, Type::F64};
  std::vector<Buf> outs;
  for (Type to : all) outs.push_back(kb.buffer(fmt::format("to_{}", dtype_name(to)), to, Access::Write));
  auto back = kb.buffer("back", from, Access::Write);
  auto i = kb.global_id();
  Val x = src[i];
  for (size_t j = 0; j < std::size(all); ++j) {
    Val c = cast(x, all[j]);
    outs[j][i] = c;
    back[i * 8u + uint32_t(j)] = cast(c, from);
  }
  return kb.finish();
}

Kernel vector_add_kernel() {
  KernelBuilder kb("vector_add", 256);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto b = kb.buffer("b", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { c[i] = a[i] + b[i]; });
  return kb.finish();
}

Kernel control_flow_kernel() {
  KernelBuilder kb("control_flow", 64);
  auto x = kb.buffer("x", Type::I32, Access::Read);
  auto y = kb.buffer("y", Type::I32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  auto acc = kb.var("acc", kb.i32(0));
  kb.if_(i < n, [&] {
    Val v = x[i];
    kb.if_else(v > 0, [&] {
      kb.for_(kb.i32(0), v, [&](Val j) {
        kb.if_else((j % 2) == 0, [&] { acc += j; }, [&] { acc = acc - 1; });
      });
    }, [&] {
      kb.if_(v < -10, [&] { acc = kb.i32(-10); });
    });
    y[i] = acc.get();
  });
  return kb.finish();
}

Kernel shared_reduce_kernel() {
  constexpr uint32_t wg = 128;
  KernelBuilder kb("shared_reduce", wg);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto partial = kb.buffer("partial", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto tile = kb.shared("tile", Type::F32, wg);
  auto counts = kb.shared("counts", Type::U32, 4);
  auto lid = kb.local_id();
  auto i = kb.global_id();
  auto v = kb.var("v", kb.f32(0.0f));
  kb.if_(i < n, [&] { v = x[i]; });
  tile[lid] = v.get();
  kb.if_(lid < 4u, [&] { counts[lid] = lid; });
  kb.barrier();
  for (uint32_t stride = wg / 2; stride > 0; stride /= 2) {
    kb.if_(lid < stride, [&] { tile[lid] = tile[lid] + tile[lid + stride]; });
    kb.barrier();
  }
  kb.if_(lid == 0u, [&] { partial[kb.group_id()] = tile[0u] + cast(counts[3u], Type::F32); });
  return kb.finish();
}

Kernel atomics_kernel() {
  KernelBuilder kb("atomics", 64);
  auto ci = kb.buffer("ci", Type::I32, Access::ReadWrite);
  auto cu = kb.buffer("cu", Type::U32, Access::ReadWrite);
  auto cf = kb.buffer("cf", Type::F32, Access::ReadWrite);
  auto old = kb.buffer("old", Type::F32, Access::Write);
  auto i = kb.global_id();
  Val a = ci.atomic_add(kb.i32(0), kb.i32(-1));
  Val b = cu.atomic_add(i % 4u, kb.u32(1));
  Val c = cf.atomic_add(kb.u32(0), kb.f32(0.5f));
  old[i] = c + cast(a, Type::F32) + cast(b, Type::F32);
  return kb.finish();
}

Kernel builtins_kernel() {
  KernelBuilder kb("builtins", {8, 4, 2});
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto g = kb.global_id();
  Builtin all[] = {Builtin::GlobalId, Builtin::LocalId, Builtin::GroupId, Builtin::NumGroups,
                   Builtin::WorkgroupSize, Builtin::GlobalSize, Builtin::LocalIdX, Builtin::LocalIdY,
                   Builtin::LocalIdZ};
  uint32_t k = 0;
  for (Builtin b : all) out[g * 9u + k++] = kb.builtin(b);
  return kb.finish();
}

// Subgroup builtins and shuffle_xor on every 32- and 64-bit type.
Kernel subgroup_kernel() {
  KernelBuilder kb("subgroup", 64);
  auto fx = kb.buffer("fx", Type::F32, Access::Read);
  auto dx = kb.buffer("dx", Type::F64, Access::Read);
  auto lx = kb.buffer("lx", Type::I64, Access::Read);
  auto out_f = kb.buffer("out_f", Type::F32, Access::Write);
  auto out_d = kb.buffer("out_d", Type::F64, Access::Write);
  auto out_l = kb.buffer("out_l", Type::I64, Access::Write);
  auto out_u = kb.buffer("out_u", Type::U32, Access::Write);
  auto g = kb.global_id();
  out_f[g] = kb.shuffle_xor(fx[g], 3);
  out_d[g] = kb.shuffle_xor(dx[g], 5);
  out_l[g] = kb.shuffle_xor(lx[g], 16);
  Val u = kb.shuffle_xor(kb.subgroup_local_id() + kb.subgroup_id() * kb.subgroup_size(), 1);
  out_u[g] = u + cast(kb.shuffle_xor(cast(u, Type::I32), 2), Type::U32);
  return kb.finish();
}

Kernel bool_logic_kernel() {
  KernelBuilder kb("bool_logic", 64);
  auto x = kb.buffer("x", Type::U32, Access::Read);
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto i = kb.global_id();
  Val v = x[i];
  Val p = v > 3u, q = (v & 1u) == 1u;
  Val r = select(p == q, p & q, (p | q) ^ !p);
  Val s = select(r != kb.boolean(true), kb.boolean(false), p);
  out[i] = select(s, kb.u32(1), kb.u32(0)) + cast(r, Type::U32);
  return kb.finish();
}

Kernel scalars_kernel() {
  KernelBuilder kb("scalars", 32);
  auto out = kb.buffer("out", Type::F64, Access::Write);
  Val si = kb.scalar("si", Type::I32);
  Val su = kb.scalar("su", Type::U32);
  Val sl = kb.scalar("sl", Type::I64);
  Val sh = kb.scalar("sh", Type::F16);
  Val sf = kb.scalar("sf", Type::F32);
  Val sd = kb.scalar("sd", Type::F64);
  Val sum = cast(si, Type::F64) + cast(su, Type::F64) + cast(sl, Type::F64) + cast(sh, Type::F64) +
            cast(sf, Type::F64) + sd;
  out[kb.global_id()] = sum;
  return kb.finish();
}

Kernel loops_kernel(Type t) {
  KernelBuilder kb(fmt::format("loops_{}", dtype_name(t)), 32);
  auto out = kb.buffer("out", t, Access::Write);
  auto acc = kb.var("acc", kb.constant(t, 0));
  // A negative start only makes sense for signed types; unsigned loops start at 0.
  Val begin = kb.constant(t, is_signed_int(t) ? -5 : 0);
  kb.for_(begin, kb.constant(t, 17), kb.constant(t, 3), [&](Val j) {
    kb.for_(j, kb.constant(t, 20), [&](Val k) { acc += k - j; });
  });
  out[kb.global_id()] = acc.get();
  return kb.finish();
}

std::vector<NamedKernel> coverage_kernels() {
  std::vector<NamedKernel> ks;
  for (Type t : {Type::I32, Type::U32, Type::I64, Type::F16, Type::F32, Type::F64})
    ks.push_back({fmt::format("arith_{}", dtype_name(t)), [t] { return arithmetic_kernel(t); }});
  for (Type t : {Type::I32, Type::U32, Type::I64, Type::F16, Type::F32, Type::F64})
    ks.push_back({fmt::format("convert_from_{}", dtype_name(t)), [t] { return conversion_kernel(t); }});
  for (Type t : {Type::I32, Type::U32, Type::I64})
    ks.push_back({fmt::format("loops_{}", dtype_name(t)), [t] { return loops_kernel(t); }});
  ks.push_back({"vector_add", vector_add_kernel});
  ks.push_back({"control_flow", control_flow_kernel});
  ks.push_back({"shared_reduce", shared_reduce_kernel});
  ks.push_back({"atomics", atomics_kernel});
  ks.push_back({"builtins", builtins_kernel});
  ks.push_back({"subgroup", subgroup_kernel});
  ks.push_back({"bool_logic", bool_logic_kernel});
  ks.push_back({"scalars", scalars_kernel});
  ks.push_back({"early_read", spire::testing::early_read_kernel});  // a placed wait (sm_90: griddepcontrol.wait)
  return ks;
}

}  // namespace spire::ptx::testing
