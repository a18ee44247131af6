// The builder produces the IR its code reads as: right ops, types, features and nesting.
#include <gtest/gtest.h>

#include "ir/kernel/builder.h"
#include "ir/kernel/printer.h"

using namespace spire::kir;

namespace {

const Instr& instr_at(const Block& b, size_t i) { return std::get<Instr>(b.stmts.at(i)); }

TEST(KernelBuilder, VectorAddHasBoundsCheckAndStore) {
  KernelBuilder kb("add", 128);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { c[i] = a[i] + 1.0f; });
  Kernel k = kb.finish();
  EXPECT_EQ(k.workgroup_size, (std::array<uint32_t, 3>{128, 1, 1}));
  ASSERT_EQ(k.buffers.size(), 2u);
  EXPECT_EQ(k.buffers[1].access, Access::Write);
  ASSERT_EQ(k.body.stmts.size(), 4u);  // param n, builtin, lt, if
  EXPECT_EQ(instr_at(k.body, 0).op, Op::ReadScalar);
  EXPECT_EQ(instr_at(k.body, 1).op, Op::ReadBuiltin);
  EXPECT_EQ(instr_at(k.body, 2).op, Op::Lt);
  EXPECT_EQ(instr_at(k.body, 2).type, Type::Bool);
  const auto& iff = std::get<If>(k.body.stmts[3]);
  ASSERT_TRUE(iff.then_body);
  EXPECT_FALSE(iff.else_body);
  const auto& body = iff.then_body->stmts;
  ASSERT_EQ(body.size(), 4u);  // load, const, add, store
  EXPECT_EQ(instr_at(*iff.then_body, 0).op, Op::LoadBuffer);
  EXPECT_EQ(instr_at(*iff.then_body, 1).op, Op::Const);
  EXPECT_DOUBLE_EQ(instr_at(*iff.then_body, 1).imm.f, 1.0);
  EXPECT_EQ(instr_at(*iff.then_body, 2).op, Op::Add);
  EXPECT_TRUE(std::holds_alternative<StoreBuffer>(body[3]));
  EXPECT_TRUE(k.features.empty());
}

TEST(KernelBuilder, RewriteStoresWrapsEveryStoreOfOneBuffer) {
  KernelBuilder kb("two_stores", 64);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto d = kb.buffer("d", Type::F32, Access::Write);
  auto i = kb.global_id();
  kb.if_(i < 10u, [&] {
    c[i] = a[i];
    kb.for_(kb.u32(0), kb.u32(2), [&](Val j) { c[i + j] = a[j]; });  // a nested store
    d[i] = a[i];
  });
  KernelBuilder rw(kb.finish());
  auto bias = rw.buffer("bias", Type::F32, Access::Read);
  int calls = 0;
  rw.rewrite_stores(1, [&](Val index, Val value) {
    ++calls;
    return max(value + bias[index], 0.0f);
  });
  Kernel k = rw.finish();
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(k.buffers.size(), 4u);
  EXPECT_EQ(k.buffers[3].name, "bias");
  // The first store into c now stores max(load + load(bias), 0), computed right before it; d's store is untouched.
  const Block& body = *std::get<If>(k.body.stmts.back()).then_body;
  const auto& store_c = std::get<StoreBuffer>(body.stmts[5]);  // load a, load bias, add, const, max, store
  EXPECT_EQ(store_c.buffer, 1u);
  EXPECT_EQ(instr_at(body, 4).op, Op::Max);
  EXPECT_EQ(store_c.value, instr_at(body, 4).result);
  const auto& store_d = std::get<StoreBuffer>(body.stmts.back());
  EXPECT_EQ(store_d.buffer, 2u);
  EXPECT_EQ(instr_at(body, body.stmts.size() - 2).op, Op::LoadBuffer);
  EXPECT_EQ(store_d.value, instr_at(body, body.stmts.size() - 2).result);
}

TEST(KernelBuilder, RewriteStoresRefusesABufferTheKernelReads) {
  KernelBuilder kb("accumulate", 64);
  auto c = kb.buffer("c", Type::F32, Access::ReadWrite);
  auto i = kb.global_id();
  c[i] = c[i] + 1.0f;
  KernelBuilder rw(kb.finish());
  try {
    rw.rewrite_stores(0, [](Val, Val v) { return v; });
    FAIL() << "a kernel that reads its result was rewritten";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("reads its buffer 'c'"), std::string::npos) << e.what();
  }
}

// An epilogue that rounds an f32 result to bf16: the buffer becomes bf16 and the kernel needs bfloat16.
TEST(KernelBuilder, RewriteStoresCanChangeTheBuffersType) {
  KernelBuilder kb("product", 64);
  auto a = kb.buffer("a", Type::F32, Access::Read);
  auto c = kb.buffer("c", Type::F32, Access::Write);
  auto i = kb.global_id();
  c[i] = a[i] * 2.0f;
  KernelBuilder rw(kb.finish());
  rw.rewrite_stores(1, [](Val, Val v) { return cast(v, Type::BF16); }, Type::BF16);
  Kernel k = rw.finish();
  EXPECT_EQ(k.buffers[1].elem, Type::BF16);
  EXPECT_TRUE(k.features.has(Feature::BFloat16));
  KernelBuilder wrong(std::move(k));
  EXPECT_THROW(wrong.rewrite_stores(1, [](Val, Val v) { return cast(v, Type::F32); }), std::invalid_argument);
}

// A prologue fused into a reduction's loads: every element load of `x` (here inside a loop) becomes the value the
// callback computes for its index, emitted right before it; the load's result id now selects that value, so the
// instructions after it are untouched. Buffers written, or read with vector loads, are refused by name.
TEST(KernelBuilder, RewriteLoadsComputesEachLoadedElement) {
  KernelBuilder kb("sum_rows", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto i = kb.global_id();
  Var acc = kb.var("acc", kb.f32(0));
  kb.for_(kb.u32(0), kb.u32(8), [&](Val k) { acc = acc + x[i * 8u + k]; });
  y[i] = acc.get();
  KernelBuilder rw(kb.finish());
  auto g = rw.buffer("g", Type::F32, Access::Read);
  auto p = rw.buffer("p", Type::F32, Access::Read);
  int calls = 0;
  rw.rewrite_loads(0, [&](Val index) {
    ++calls;
    return select(p[index] > 0.0f, Val(g[index]), rw.f32(0));
  });
  Kernel k = rw.finish();
  EXPECT_EQ(calls, 1);
  const Block* loop_body = nullptr;
  for (const Stmt& s : k.body.stmts)
    if (const auto* f = std::get_if<For>(&s)) loop_body = f->body.get();
  ASSERT_NE(loop_body, nullptr);
  const Block& loop = *loop_body;
  size_t loads_of_x = 0, selects = 0;
  for (const Stmt& s : loop.stmts)
    if (const auto* in = std::get_if<Instr>(&s)) {
      loads_of_x += in->op == Op::LoadBuffer && in->index == 0;
      selects += in->op == Op::Select;
    }
  EXPECT_EQ(loads_of_x, 0u);
  EXPECT_EQ(selects, 2u);  // the mask's, and the former load's (the value selected with itself)
  KernelBuilder written([] {
    KernelBuilder b("copy", 64);
    auto a = b.buffer("a", Type::F32, Access::ReadWrite);
    a[b.global_id()] = a[b.global_id()] * 2.0f;
    return b.finish();
  }());
  EXPECT_THROW(written.rewrite_loads(0, [](Val i) { return cast(i, Type::F32); }), std::invalid_argument);
  KernelBuilder typed([] {
    KernelBuilder b("copy", 64);
    auto a = b.buffer("a", Type::F32, Access::Read);
    auto c = b.buffer("c", Type::F32, Access::Write);
    c[b.global_id()] = a[b.global_id()];
    return b.finish();
  }());
  EXPECT_THROW(typed.rewrite_loads(0, [](Val i) { return i; }), std::invalid_argument);  // u32 for an f32 buffer
}

// A bf16 load rewritten into a value computed in f32 and rounded to bf16 (an attention's launch computing its query's
// rotary embedding where it loads it, lowering/fuse.h): bf16 has no select, so the former load becomes a second
// conversion of the same f32 value, and the kernel verifies. A bf16 value that is no such conversion is refused.
TEST(KernelBuilder, RewritingABf16LoadConvertsTheSameF32Value) {
  auto make = [] {
    KernelBuilder b("widen", 64);
    auto a = b.buffer("a", Type::BF16, Access::Read);
    auto c = b.buffer("c", Type::F32, Access::Write);
    c[b.global_id()] = cast(a[b.global_id()].load(), Type::F32);
    return b.finish();
  };
  KernelBuilder rw(make());
  auto x = rw.buffer("x", Type::F32, Access::Read);
  rw.rewrite_loads(0, [&](Val index) { return cast(x[index].load() * 2.0f, Type::BF16); });
  const Kernel k = rw.finish();
  EXPECT_EQ(verify(k), "");
  size_t loads_of_a = 0, to_bf16 = 0, selects = 0;
  for (const Stmt& s : k.body.stmts)
    if (const auto* in = std::get_if<Instr>(&s)) {
      loads_of_a += in->op == Op::LoadBuffer && in->index == 0;
      to_bf16 += in->op == Op::Convert && in->type == Type::BF16;
      selects += in->op == Op::Select;
    }
  EXPECT_EQ(loads_of_a, 0u) << print(k);
  EXPECT_EQ(to_bf16, 2u) << print(k);  // the new value's, and the former load's
  EXPECT_EQ(selects, 0u) << print(k);
  KernelBuilder loaded(make());
  auto y = loaded.buffer("y", Type::BF16, Access::Read);
  EXPECT_THROW(loaded.rewrite_loads(0, [&](Val index) { return y[index].load(); }), std::invalid_argument);
}

// An epilogue tap stands for what y's epilogue makes of a value: the value itself until rewrite_taps gives it the
// epilogue's (here +1), and the kernel's other uses of the tap (a second buffer) see the rewritten value too.
TEST(KernelBuilder, RewriteTapsGivesEveryTapOfOneBufferItsEpilogue) {
  KernelBuilder kb("tap", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto m = kb.buffer("m", Type::F32, Access::Write);
  auto i = kb.global_id();
  Val v = kb.epilogue_tap(y, i, x[i] * 2.0f);
  y[i] = v;
  m[i] = v * 3.0f;
  Kernel k = kb.finish();
  EXPECT_EQ(verify(k), "");
  EXPECT_TRUE(taps_epilogue_of(k, 1));
  EXPECT_FALSE(taps_epilogue_of(k, 2));
  EXPECT_TRUE(writes_buffer(k, 1) && writes_buffer(k, 2));
  EXPECT_FALSE(writes_buffer(k, 0));
  EXPECT_NE(print(k).find("epilogue_tap y["), std::string::npos) << print(k);
  KernelBuilder rw(std::move(k));
  int calls = 0;
  rw.rewrite_taps(1, [&](Val index, Val value) {
    ++calls;
    EXPECT_EQ(index.type(), Type::U32);
    return value + 1.0f;
  });
  Kernel done = rw.finish();
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(taps_epilogue_of(done, 1));  // the tap became a select of the new value with itself
  EXPECT_EQ(verify(done), "");
  KernelBuilder wrong_type([] {
    KernelBuilder b("tap", 64);
    auto y = b.buffer("y", Type::F32, Access::Write);
    y[b.global_id()] = b.epilogue_tap(y, b.global_id(), b.f32(1));
    return b.finish();
  }());
  EXPECT_THROW(wrong_type.rewrite_taps(0, [](Val i, Val) { return i; }), std::invalid_argument);
  // Tapped but not stored (a pooled side output's kernel whose result nothing else reads), inside a branch.
  Kernel tapped_only = [] {
    KernelBuilder b("tap", 64);
    auto y = b.buffer("y", Type::F32, Access::Write);
    auto m = b.buffer("m", Type::F32, Access::Write);
    b.if_(b.global_id() < 8u, [&] { m[b.global_id()] = b.epilogue_tap(y, b.global_id(), b.f32(1)); });
    return b.finish();
  }();
  EXPECT_FALSE(writes_buffer(tapped_only, 0));
  EXPECT_TRUE(writes_buffer(tapped_only, 1));
  // Only a result buffer has an epilogue to tap.
  KernelBuilder read("tap_read", 64);
  auto r = read.buffer("r", Type::F32, Access::Read);
  auto o = read.buffer("o", Type::F32, Access::Write);
  o[read.global_id()] = read.epilogue_tap(r, read.global_id(), read.f32(1));
  try {
    read.finish();  // finish() verifies
    ADD_FAILURE() << "a tap of a read-only buffer was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("epilogue_tap"), std::string::npos) << e.what();
  }
}

TEST(KernelBuilder, NumbersTakeTheValsType) {
  KernelBuilder kb("k");
  auto x = kb.scalar("x", Type::I32);
  Val y = x * 3 + 2;
  EXPECT_EQ(y.type(), Type::I32);
  Val f = kb.f32(1.5f) * 2;
  EXPECT_EQ(f.type(), Type::F32);
}

TEST(KernelBuilder, MixedTypesNeedACast) {
  KernelBuilder kb("k");
  auto x = kb.scalar("x", Type::I32);
  auto y = kb.scalar("y", Type::F32);
  EXPECT_THROW(x + y, std::invalid_argument);
  Val z = cast(x, Type::F32) + y;
  EXPECT_EQ(z.type(), Type::F32);
}

TEST(KernelBuilder, TypesImplyFeatures) {
  KernelBuilder kb("k");
  kb.buffer("d", Type::F64, Access::ReadWrite);
  kb.buffer("h", Type::F16, Access::Read);
  auto l = kb.scalar("l", Type::I64);
  (void)l;
  Kernel k = kb.finish();
  EXPECT_TRUE(k.features.has(Feature::Float64));
  EXPECT_TRUE(k.features.has(Feature::Float16));
  EXPECT_TRUE(k.features.has(Feature::Int64));
  EXPECT_FALSE(k.features.has(Feature::AtomicAddF32));
}

TEST(KernelBuilder, AtomicAddDeclaresItsFeature) {
  KernelBuilder kb("k");
  auto b = kb.buffer("b", Type::F32, Access::ReadWrite);
  b.atomic_add(kb.u32(0), kb.f32(1));
  EXPECT_TRUE(kb.finish().features.has(Feature::AtomicAddF32));
}

TEST(KernelBuilder, ForLoopAccumulatesThroughAVariable) {
  KernelBuilder kb("k");
  auto out = kb.buffer("out", Type::I32, Access::Write);
  auto acc = kb.var("acc", kb.i32(0));
  kb.for_(kb.i32(0), kb.i32(10), [&](Val i) { acc += i; });
  out[0] = acc;
  Kernel k = kb.finish();
  ASSERT_EQ(k.vars.size(), 2u);  // acc and the loop counter
  size_t loops = 0;
  for (const auto& s : k.body.stmts) loops += std::holds_alternative<For>(s);
  EXPECT_EQ(loops, 1u);
}

TEST(KernelBuilder, AssigningAVarStoresRatherThanRebinding) {
  KernelBuilder kb("k");
  auto a = kb.var("a", kb.f32(1));
  auto b = kb.var("b", kb.f32(2));
  a = b;  // must emit loadvar b; storevar a
  Kernel k = kb.finish();
  const auto& last = k.body.stmts.back();
  ASSERT_TRUE(std::holds_alternative<StoreVar>(last));
  EXPECT_EQ(std::get<StoreVar>(last).var, 0u);
}

TEST(KernelBuilder, UseOutsideItsBlockIsRejected) {
  KernelBuilder kb("k");
  auto o = kb.buffer("o", Type::U32, Access::Write);
  Val inner;
  kb.if_(kb.global_id() < 4u, [&] { inner = kb.global_id() + 1u; });
  o[0] = inner;  // inner is defined inside the if: not visible here
  EXPECT_THROW(kb.finish(), std::invalid_argument);
}

}  // namespace
