// The printer shows every part of a kernel: header, parameters, statements and nesting.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ir/kernel/builder.h"
#include "ir/kernel/printer.h"

using namespace spire::kir;

namespace {

TEST(KernelPrinter, ShowsHeaderParametersAndBody) {
  KernelBuilder kb("relu", 256);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = max(x[i], 0.0f); });
  std::string text = print(kb.finish());
  const std::string expected =
      "kernel relu workgroup(256, 1, 1) features(none)\n"
      "  buffer x: f32[] read  // binding 0\n"
      "  buffer y: f32[] write  // binding 1\n"
      "  scalar n: u32  // offset 0\n"
      "{\n"
      "  %0 = param n : u32\n"
      "  %1 = builtin global_id : u32\n"
      "  %2 = lt %1, %0 : bool\n"
      "  if %2 {\n"
      "    %3 = load x[%1] : f32\n"
      "    %4 = const 0 : f32\n"
      "    %5 = max %3, %4 : f32\n"
      "    store y[%1], %5\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(text, expected);
}

TEST(KernelPrinter, ShowsLoopsSharedMemoryAndBarriers) {
  KernelBuilder kb("k", 64);
  auto t = kb.shared("tile", Type::F32, 64);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  t[kb.local_id()] = kb.f32(2);
  kb.barrier();
  kb.for_(kb.u32(0), kb.u32(4), [&](Val j) { o[j] = t[j]; });
  std::string text = print(kb.finish());
  EXPECT_NE(text.find("shared tile: f32[64]"), std::string::npos) << text;
  EXPECT_NE(text.find("store_shared tile["), std::string::npos) << text;
  EXPECT_NE(text.find("\n  barrier\n"), std::string::npos) << text;
  EXPECT_NE(text.find("for i0 = "), std::string::npos) << text;
  EXPECT_NE(text.find("load_shared tile["), std::string::npos) << text;
}

TEST(KernelPrinter, ShowsVectorLoadsWithEveryResult) {
  KernelBuilder kb("k", 64);
  auto t = kb.shared("tile", Type::F32, 256);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  t[kb.local_id()] = kb.f32(2);
  kb.barrier();
  std::vector<Val> v = t.load_vector(kb.local_id() * 4u, 4);
  o[kb.local_id()] = v[0] + v[3];
  std::string text = print(kb.finish());
  const std::string line = fmt::format("%{}, %{}, %{}, %{} = load_shared_vector tile[", v[0].id(), v[1].id(), v[2].id(), v[3].id());
  EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

}  // namespace
