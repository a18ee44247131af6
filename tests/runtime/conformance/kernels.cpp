#include "tests/runtime/conformance/kernels.h"

#include "ir/kernel/builder.h"

namespace spire::rt::conformance {

using namespace spire::kir;

kir::Kernel vector_add(uint32_t workgroup) {
  KernelBuilder kb("vector_add", workgroup);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Read);
  auto z = kb.buffer("z", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { z[i] = Val(x[i]) + Val(y[i]); });
  return kb.finish();
}

kir::Kernel accumulate(uint32_t workgroup) {
  KernelBuilder kb("accumulate", workgroup);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(y[i]) + Val(x[i]); });
  return kb.finish();
}

kir::Kernel scalars_32bit() {
  KernelBuilder kb("scalars_32bit", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto yf = kb.buffer("yf", Type::F32, Access::Write);
  auto yi = kb.buffer("yi", Type::I32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto k = kb.scalar("k", Type::I32);
  auto a = kb.scalar("a", Type::F32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] {
    yf[i] = Val(x[i]) * a;
    yi[i] = cast(i, Type::I32) + k;
  });
  return kb.finish();
}

kir::Kernel scale_f64() {
  KernelBuilder kb("scale_f64", 64);
  auto y = kb.buffer("y", Type::F64, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto s = kb.scalar("s", Type::F64);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = cast(i, Type::F64) * s; });
  return kb.finish();
}

kir::Kernel offset_i64() {
  KernelBuilder kb("offset_i64", 64);
  auto y = kb.buffer("y", Type::I64, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto k = kb.scalar("k", Type::I64);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = cast(i, Type::I64) + k; });
  return kb.finish();
}

}  // namespace spire::rt::conformance
