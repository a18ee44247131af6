// The validator wiring: broken modules are reported, compile() refuses malformed kernels, and the
// spirv-val tool agrees with the library on a written .spv file.
#include <gtest/gtest.h>
#include <spirv/unified1/spirv.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends/spirv/require_valid.h"
#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/builder.h"
#include "ir/kernel/printer.h"
#include "tests/backends/spirv/spirv_test_util.h"

namespace spire::spirv {
namespace {

using namespace kir;

Kernel saxpy() {
  KernelBuilder kb("saxpy", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::ReadWrite);
  auto a = kb.scalar("a", Type::F32);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = a * x[i] + y[i]; });
  return kb.finish();
}

// Index of the first instruction with `opcode` after the header, or 0.
size_t find_instruction(const std::vector<uint32_t>& words, SpvOp opcode) {
  for (size_t at = 5; at < words.size(); at += words[at] >> 16) {
    if ((words[at] >> 16) == 0) return 0;
    if ((words[at] & 0xFFFF) == uint32_t(opcode)) return at;
  }
  return 0;
}

TEST(SpirvValidation, ValidModuleHasNoMessage) { EXPECT_EQ(validate(compile(saxpy())), ""); }

TEST(SpirvValidation, CorruptedOpcodeIsReported) {
  std::vector<uint32_t> words = compile(saxpy());
  // An integer add turned into a float add on integers: well-formed words, wrong types.
  size_t at = find_instruction(words, SpvOpIAdd);
  ASSERT_NE(at, 0u);
  words[at] = (words[at] & 0xFFFF0000u) | uint32_t(SpvOpFAdd);
  std::string message = validate(words);
  EXPECT_NE(message, "");
  EXPECT_NE(message.find("FAdd"), std::string::npos) << message;
}

TEST(SpirvValidation, CorruptedIdIsReported) {
  std::vector<uint32_t> words = compile(saxpy());
  // The store's pointer operand replaced by an id beyond the bound.
  size_t at = find_instruction(words, SpvOpStore);
  ASSERT_NE(at, 0u);
  words[at + 1] = words[3] + 10;
  EXPECT_NE(validate(words), "");
}

TEST(SpirvValidation, TruncatedAndEmptyModulesAreReported) {
  std::vector<uint32_t> words = compile(saxpy());
  words.resize(words.size() - 3);
  EXPECT_NE(validate(words), "");
  EXPECT_NE(validate({}), "");
  EXPECT_NE(validate({0xDEADBEEF, 0, 0, 0, 0}), "");
}

TEST(SpirvValidation, SkippingValidationGivesTheSameWords) {
  Options no_validation;
  no_validation.validate = false;
  EXPECT_EQ(compile(saxpy(), no_validation), compile(saxpy()));
}

TEST(SpirvValidation, MalformedKernelIsRefusedByName) {
  Kernel k = saxpy();
  // A store of a value that does not exist, at the global id.
  ValueId index = kNoValue;
  for (const Stmt& s : k.body.stmts)
    if (const auto* in = std::get_if<Instr>(&s); in && in->op == Op::ReadBuiltin) index = in->result;
  ASSERT_NE(index, kNoValue);
  k.body.stmts.push_back(StoreBuffer{1, index, 9999});
  try {
    compile(k);
    FAIL() << "compile() accepted a malformed kernel";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("saxpy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("9999"), std::string::npos) << e.what();
  }
}

TEST(SpirvValidation, CompileErrorNamesTheKernelAndShowsItsText) {
  // What compile() throws when its own module fails validation, fed a module broken on purpose.
  Kernel k = saxpy();
  std::vector<uint32_t> words = compile(k);
  EXPECT_NO_THROW(require_valid(words, k));
  size_t at = find_instruction(words, SpvOpIAdd);
  ASSERT_NE(at, 0u);
  words[at] = (words[at] & 0xFFFF0000u) | uint32_t(SpvOpFAdd);
  try {
    require_valid(words, k);
    FAIL() << "a broken module passed";
  } catch (const CompileError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("SPIR-V for kernel 'saxpy' failed validation (a compiler bug): ", 0), 0u) << m;
    EXPECT_NE(m.find("FAdd"), std::string::npos) << "the validator's words\n" << m;
    EXPECT_NE(m.find("\n" + print(k)), std::string::npos) << "the kernel's text\n" << m;
  }
  const std::runtime_error* base = nullptr;
  CompileError e("x");
  base = &e;
  EXPECT_STREQ(base->what(), "x");
}

TEST(SpirvValidation, SpirvValToolAgrees) {
  if (std::system("command -v spirv-val > /dev/null 2>&1") != 0) GTEST_SKIP() << "spirv-val is not on PATH";
  auto dir = std::filesystem::temp_directory_path();
  auto good = dir / ("spire_spirv_test_good_" + std::to_string(::getpid()) + ".spv");
  auto bad = dir / ("spire_spirv_test_bad_" + std::to_string(::getpid()) + ".spv");
  std::vector<uint32_t> words = compile(saxpy());
  auto write = [](const std::filesystem::path& p, const std::vector<uint32_t>& w) {
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.data()), std::streamsize(w.size() * 4));
  };
  write(good, words);
  size_t at = find_instruction(words, SpvOpIAdd);
  ASSERT_NE(at, 0u);
  words[at] = (words[at] & 0xFFFF0000u) | uint32_t(SpvOpFAdd);
  write(bad, words);
  int good_rc = std::system(("spirv-val --target-env vulkan1.1 " + good.string() + " > /dev/null 2>&1").c_str());
  int bad_rc = std::system(("spirv-val --target-env vulkan1.1 " + bad.string() + " > /dev/null 2>&1").c_str());
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
  EXPECT_EQ(good_rc, 0);
  EXPECT_NE(bad_rc, 0);
}

}  // namespace
}  // namespace spire::spirv

namespace spire::spirv {
namespace {

TEST(SpirvDisassemble, ShowsTheModuleWithFriendlyNames) {
  std::string text = disassemble(compile(saxpy()));
  EXPECT_NE(text.find("OpEntryPoint GLCompute %saxpy \"main\""), std::string::npos) << text;
  EXPECT_NE(text.find("%y = OpVariable"), std::string::npos) << text;
}

TEST(SpirvDisassemble, RefusesGarbage) {
  EXPECT_THROW(disassemble({1, 2, 3}), std::invalid_argument);
}

TEST(SpirvOptimize, OptimizedModulesValidateAndKeepTheInterface) {
  Options optimized;
  optimized.optimize = true;
  KernelBuilder kb("loop_reduce", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto tile = kb.shared("tile", Type::F32, 64);
  auto acc = kb.var("acc", kb.f32(0));
  kb.for_(kb.global_id(), n, kb.global_size(), [&](Val i) { acc += exp(Val(x[i])); });
  tile[kb.local_id()] = acc;
  kb.barrier();
  kb.if_(kb.local_id() == 0u, [&] {
    auto s = kb.var("s", kb.f32(0));
    kb.for_(kb.u32(0), kb.u32(64), [&](Val j) { s += tile[j]; });
    out[kb.group_id()] = s;
  });
  Kernel k = kb.finish();
  std::vector<uint32_t> plain = compile(k);
  std::vector<uint32_t> words = compile(k, optimized);  // compile() validates the optimized module too
  EXPECT_EQ(validate(words), "");
  EXPECT_NE(words, plain);
  std::string text = disassemble(words);
  EXPECT_NE(text.find("OpEntryPoint GLCompute"), std::string::npos) << text;
  EXPECT_NE(text.find("LocalSize 64 1 1"), std::string::npos) << text;
  EXPECT_NE(text.find("OpControlBarrier"), std::string::npos) << text;
  EXPECT_NE(text.find("Binding 1"), std::string::npos) << text;
  EXPECT_NE(text.find("OpLoopMerge"), std::string::npos) << text;
  EXPECT_NE(text.find("PushConstant"), std::string::npos) << text;
}

TEST(SpirvOptimize, F64SeriesAreNotFused) {
  // Fusing the Cody-Waite reduction x - k ln2_hi - k ln2_lo into Fma cost 50 ulp on lavapipe.
  Options optimized;
  optimized.optimize = true;
  KernelBuilder kb("exp64", 64);
  auto a = kb.buffer("a", Type::F64, Access::Read);
  auto out = kb.buffer("out", Type::F64, Access::Write);
  out[kb.global_id()] = exp(Val(a[kb.global_id()])) + log(Val(a[kb.global_id()]));
  std::string text = disassemble(compile(kb.finish(), optimized));
  EXPECT_EQ(text.find(" Fma "), std::string::npos) << text;
  EXPECT_NE(text.find("NoContraction"), std::string::npos) << text;
}

}  // namespace
}  // namespace spire::spirv
