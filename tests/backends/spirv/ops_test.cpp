// Every kir::Op on every type it accepts: the module must validate, and the disassembly must use the
// SPIR-V instruction of the right variant (signed/unsigned/float/bool) and result type. The expectations
// are written out per case from the SPIR-V and GLSL.std.450 specifications, not derived from the emitter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/builder.h"
#include "tests/backends/spirv/spirv_test_util.h"

namespace spire::spirv {
namespace {

using namespace kir;
using test::compile_to_text;
using test::has_line;

struct OpCase {
  Op op;
  Type type;                    // operand type
  std::vector<std::string> expect;  // regexes each matching some line
  std::vector<std::string> forbid;  // regexes matching no line
};

std::string case_name(const OpCase& c) {
  return std::string(op_name(c.op)) + "_" + std::string(dtype_name(c.type));
}

bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

// out[i] = OP(a[i], b[i]) (or OP(a[i]) / select), with bools made from u32 buffers and stored as 0/1.
Kernel op_kernel(const OpCase& c) {
  KernelBuilder kb("k_" + case_name(c), 64);
  Type mem = c.type == Type::Bool ? Type::U32 : c.type;
  auto a = kb.buffer("a", mem, Access::Read);
  auto b = kb.buffer("b", mem, Access::Read);
  Type result = is_comparison(c.op) ? Type::Bool : c.type;
  Type out_type = result == Type::Bool ? Type::U32 : result;
  auto out = kb.buffer("out", out_type, Access::Write);
  auto i = kb.global_id();
  Val av = a[i], bv = b[i];
  if (c.type == Type::Bool) {
    av = av != 0u;
    bv = bv != 0u;
  }
  Val r;
  int arity = op_arity(c.op);
  if (arity == 1) r = kb.emit(c.op, result, {av});
  else if (arity == 3) r = kb.emit(c.op, result, {av, bv, av});
  else r = kb.emit(c.op, result, {av, bv});
  out[i] = result == Type::Bool ? select(r, kb.u32(1), kb.u32(0)) : r;
  return kb.finish();
}

class SpirvOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(SpirvOps, ValidatesAndUsesTheRightInstruction) {
  const OpCase& c = GetParam();
  std::string text = compile_to_text(op_kernel(c));
  for (const auto& e : c.expect) EXPECT_TRUE(has_line(text, e)) << "missing " << e << "\n" << text;
  for (const auto& f : c.forbid) EXPECT_FALSE(has_line(text, f)) << "unexpected " << f << "\n" << text;
}

// Friendly type names in the disassembly.
constexpr const char* F16 = "half";
constexpr const char* F32 = "float";
constexpr const char* F64 = "double";
constexpr const char* I32 = "int";
constexpr const char* U32 = "uint";
constexpr const char* I64 = "long";

std::string inst(const char* opcode, const char* type) { return std::string("= ") + opcode + " %" + type + " "; }
std::string glsl(const char* name, const char* type) {
  return std::string("= OpExtInst %") + type + " %\\w+ " + name + " ";
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> v;
  struct T { Type t; const char* n; };
  const T floats[] = {{Type::F16, F16}, {Type::F32, F32}, {Type::F64, F64}};
  const T signed_ints[] = {{Type::I32, I32}, {Type::I64, I64}};
  for (const T& f : floats) {
    v.push_back({Op::Add, f.t, {inst("OpFAdd", f.n)}, {}});
    v.push_back({Op::Sub, f.t, {inst("OpFSub", f.n)}, {}});
    v.push_back({Op::Mul, f.t, {inst("OpFMul", f.n)}, {}});
    v.push_back({Op::Div, f.t, {inst("OpFDiv", f.n)}, {}});
    v.push_back({Op::Rem, f.t, {inst("OpFRem", f.n)}, {"OpFMod"}});
    v.push_back({Op::Min, f.t, {glsl("FMin", f.n)}, {}});
    v.push_back({Op::Max, f.t, {glsl("FMax", f.n)}, {}});
    v.push_back({Op::Eq, f.t, {inst("OpFOrdEqual", "bool")}, {}});
    v.push_back({Op::Ne, f.t, {inst("OpFUnordNotEqual", "bool")}, {}});  // NaN != x is true, as in C
    v.push_back({Op::Lt, f.t, {inst("OpFOrdLessThan", "bool")}, {}});
    v.push_back({Op::Le, f.t, {inst("OpFOrdLessThanEqual", "bool")}, {}});
    v.push_back({Op::Gt, f.t, {inst("OpFOrdGreaterThan", "bool")}, {}});
    v.push_back({Op::Ge, f.t, {inst("OpFOrdGreaterThanEqual", "bool")}, {}});
    v.push_back({Op::Neg, f.t, {inst("OpFNegate", f.n)}, {}});
    v.push_back({Op::Abs, f.t, {glsl("FAbs", f.n)}, {}});
    v.push_back({Op::Sqrt, f.t, {glsl("Sqrt", f.n)}, {}});
    v.push_back({Op::Rsqrt, f.t, {glsl("InverseSqrt", f.n)}, {}});
    v.push_back({Op::Floor, f.t, {glsl("Floor", f.n)}, {}});
    v.push_back({Op::Fma, f.t, {glsl("Fma", f.n)}, {inst("OpFMul", f.n)}});
  }
  // GLSL.std.450 Exp/Log/Pow/Tanh exist for 16/32-bit floats only.
  for (const T& f : {floats[0], floats[1]}) {
    v.push_back({Op::Exp, f.t, {glsl("Exp", f.n)}, {}});
    v.push_back({Op::Log, f.t, {glsl("Log", f.n)}, {}});
    // pow(|x|, y) plus C's rules for negative and zero bases.
    v.push_back({Op::Pow, f.t, {glsl("FAbs", f.n), glsl("Pow", f.n), glsl("Floor", f.n)}, {}});
    // Clamped to [-20, 20] before Tanh (drivers that overflow e^2x give NaN otherwise).
    std::string bounds = f.t == Type::F16 ? "%half_n0x1_4p_4 %half_0x1_4p_4" : "%float_n20 %float_20";  // +-20
    v.push_back({Op::Tanh, f.t, {glsl("FClamp", f.n) + "%\\w+ " + bounds, glsl("Tanh", f.n), "OpIsNan %bool"}, {}});
  }
  // f64 has no GLSL.std.450 Exp/Log/Pow/Tanh: range reduction (RoundEven, Ldexp, FrexpStruct) and series.
  const std::string no_f32_detour = "OpFConvert %float";
  // Their series are evaluated in the written order: NoContraction keeps spirv-opt and drivers from fusing.
  v.push_back({Op::Exp, Type::F64, {glsl("RoundEven", F64), glsl("Ldexp", F64), "OpDecorate %\\w+ NoContraction"},
               {glsl("(Exp|Log|Pow|Tanh)", F64), no_f32_detour}});
  v.push_back({Op::Log, Type::F64, {"= OpExtInst %\\w+ %\\w+ FrexpStruct %\\w+"}, {glsl("(Exp|Log|Pow|Tanh)", F64), no_f32_detour}});
  v.push_back({Op::Pow, Type::F64, {"FrexpStruct", glsl("Ldexp", F64)}, {glsl("(Exp|Log|Pow|Tanh)", F64), no_f32_detour}});
  v.push_back({Op::Tanh, Type::F64, {glsl("Ldexp", F64), inst("OpFDiv", F64)}, {glsl("(Exp|Log|Pow|Tanh)", F64), no_f32_detour}});
  for (const T& s : signed_ints) {
    v.push_back({Op::Add, s.t, {inst("OpIAdd", s.n)}, {}});
    v.push_back({Op::Sub, s.t, {inst("OpISub", s.n)}, {}});
    v.push_back({Op::Mul, s.t, {inst("OpIMul", s.n)}, {}});
    v.push_back({Op::Div, s.t, {inst("OpSDiv", s.n)}, {"OpUDiv"}});
    // C remainder without OpSRem (undefined for negative operands in Vulkan): |a| umod |b|, a's sign.
    const char* u = s.t == Type::I32 ? U32 : "ulong";
    v.push_back({Op::Rem, s.t, {inst("OpUMod", u), glsl("SAbs", s.n), inst("OpSNegate", s.n), inst("OpSelect", s.n)},
                 {"OpSRem", "OpSMod"}});
    v.push_back({Op::Min, s.t, {glsl("SMin", s.n)}, {}});
    v.push_back({Op::Max, s.t, {glsl("SMax", s.n)}, {}});
    v.push_back({Op::And, s.t, {inst("OpBitwiseAnd", s.n)}, {}});
    v.push_back({Op::Or, s.t, {inst("OpBitwiseOr", s.n)}, {}});
    v.push_back({Op::Xor, s.t, {inst("OpBitwiseXor", s.n)}, {}});
    v.push_back({Op::Shl, s.t, {inst("OpShiftLeftLogical", s.n)}, {}});
    v.push_back({Op::Shr, s.t, {inst("OpShiftRightArithmetic", s.n)}, {"OpShiftRightLogical"}});
    v.push_back({Op::Eq, s.t, {inst("OpIEqual", "bool")}, {}});
    v.push_back({Op::Ne, s.t, {inst("OpINotEqual", "bool")}, {}});
    v.push_back({Op::Lt, s.t, {inst("OpSLessThan", "bool")}, {"OpULessThan"}});
    v.push_back({Op::Le, s.t, {inst("OpSLessThanEqual", "bool")}, {}});
    v.push_back({Op::Gt, s.t, {inst("OpSGreaterThan", "bool")}, {}});
    v.push_back({Op::Ge, s.t, {inst("OpSGreaterThanEqual", "bool")}, {}});
    v.push_back({Op::Neg, s.t, {inst("OpSNegate", s.n)}, {}});
    v.push_back({Op::Not, s.t, {inst("OpNot", s.n)}, {}});
    v.push_back({Op::Abs, s.t, {glsl("SAbs", s.n)}, {}});
  }
  v.push_back({Op::Add, Type::U32, {inst("OpIAdd", U32)}, {}});
  v.push_back({Op::Sub, Type::U32, {inst("OpISub", U32)}, {}});
  v.push_back({Op::Mul, Type::U32, {inst("OpIMul", U32)}, {}});
  v.push_back({Op::Div, Type::U32, {inst("OpUDiv", U32)}, {"OpSDiv"}});
  v.push_back({Op::Rem, Type::U32, {inst("OpUMod", U32)}, {"OpSRem", "OpSNegate"}});
  v.push_back({Op::Min, Type::U32, {glsl("UMin", U32)}, {}});
  v.push_back({Op::Max, Type::U32, {glsl("UMax", U32)}, {}});
  v.push_back({Op::And, Type::U32, {inst("OpBitwiseAnd", U32)}, {}});
  v.push_back({Op::Or, Type::U32, {inst("OpBitwiseOr", U32)}, {}});
  v.push_back({Op::Xor, Type::U32, {inst("OpBitwiseXor", U32)}, {}});
  v.push_back({Op::Shl, Type::U32, {inst("OpShiftLeftLogical", U32)}, {}});
  v.push_back({Op::Shr, Type::U32, {inst("OpShiftRightLogical", U32)}, {"OpShiftRightArithmetic"}});
  v.push_back({Op::Eq, Type::U32, {inst("OpIEqual", "bool")}, {}});
  v.push_back({Op::Ne, Type::U32, {inst("OpINotEqual", "bool")}, {}});
  v.push_back({Op::Lt, Type::U32, {inst("OpULessThan", "bool")}, {"OpSLessThan"}});
  v.push_back({Op::Le, Type::U32, {inst("OpULessThanEqual", "bool")}, {}});
  v.push_back({Op::Gt, Type::U32, {inst("OpUGreaterThan", "bool")}, {}});
  v.push_back({Op::Ge, Type::U32, {inst("OpUGreaterThanEqual", "bool")}, {}});
  v.push_back({Op::Not, Type::U32, {inst("OpNot", U32)}, {}});
  // Bool in registers.
  v.push_back({Op::And, Type::Bool, {inst("OpLogicalAnd", "bool")}, {"OpBitwiseAnd"}});
  v.push_back({Op::Or, Type::Bool, {inst("OpLogicalOr", "bool")}, {"OpBitwiseOr"}});
  v.push_back({Op::Xor, Type::Bool, {inst("OpLogicalNotEqual", "bool")}, {"OpBitwiseXor"}});
  v.push_back({Op::Not, Type::Bool, {inst("OpLogicalNot", "bool")}, {}});
  v.push_back({Op::Eq, Type::Bool, {inst("OpLogicalEqual", "bool")}, {}});
  v.push_back({Op::Ne, Type::Bool, {inst("OpLogicalNotEqual", "bool")}, {}});
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, SpirvOps, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return case_name(info.param); });

TEST(SpirvOpsCoverage, EveryArithmeticOpHasACase) {
  // A new kir::Op between Add and Floor needs its cases here (and its lowering in emit_ops.cpp).
  auto cases = all_cases();
  for (int o = int(Op::Add); o <= int(Op::Floor); ++o) {
    bool found = false;
    for (const auto& c : cases) found |= int(c.op) == o;
    EXPECT_TRUE(found) << op_name(Op(o)) << " has no test case";
  }
}

TEST(SpirvOps, SelectOnEveryType) {
  for (Type t : {Type::I32, Type::U32, Type::I64, Type::F16, Type::F32, Type::F64}) {
    KernelBuilder kb(std::string("select_") + std::string(dtype_name(t)), 64);
    auto a = kb.buffer("a", t, Access::Read);
    auto out = kb.buffer("out", t, Access::Write);
    auto i = kb.global_id();
    Val cond = kb.local_id() < 7u;
    out[i] = select(cond, Val(a[i]), kb.constant(t, 3));
    Kernel k = kb.finish();
    std::string text = compile_to_text(k);
    // The constant 3 of the type is the third operand (half constants print in hex: 0x1.8p+1).
    std::string three = t == Type::F16 ? "half_0x1_8p_1" : std::string(t == Type::F64 ? "double" : t == Type::F32 ? "float" : t == Type::I64 ? "long" : t == Type::I32 ? "int" : "uint") + "_3";
    EXPECT_TRUE(has_line(text, "= OpSelect %\\w+ %\\w+ %\\w+ %" + three + "$")) << text;
  }
  KernelBuilder kb("select_bool", 64);
  auto out = kb.buffer("out", Type::U32, Access::Write);
  auto i = kb.global_id();
  Val c = select(i < 3u, i > 1u, kb.boolean(false));
  out[i] = select(c, kb.u32(1), kb.u32(0));
  EXPECT_TRUE(has_line(compile_to_text(kb.finish()), R"(= OpSelect %bool )"));
}

// Conversions between every pair of numeric types.
struct ConvertCase {
  Type from, to;
  std::vector<std::string> expect;
};

std::string convert_name(const ConvertCase& c) {
  return std::string(dtype_name(c.from)) + "_to_" + std::string(dtype_name(c.to));
}

class SpirvConvert : public ::testing::TestWithParam<ConvertCase> {};

TEST_P(SpirvConvert, ValidatesWithTheSpecsConversion) {
  const ConvertCase& c = GetParam();
  KernelBuilder kb("convert_" + convert_name(c), 64);
  auto a = kb.buffer("a", c.from, Access::Read);
  auto out = kb.buffer("out", c.to, Access::Write);
  auto i = kb.global_id();
  out[i] = cast(a[i], c.to);
  std::string text = compile_to_text(kb.finish());
  for (const auto& e : c.expect) EXPECT_TRUE(has_line(text, e)) << "missing " << e << "\n" << text;
}

std::vector<ConvertCase> convert_cases() {
  auto I = [](const char* op, const char* t) { return std::string("= ") + op + " %" + t + " "; };
  return {
      // Same width, other signedness: a bitcast (SConvert/UConvert must change the width).
      {Type::I32, Type::U32, {I("OpBitcast", U32)}},
      {Type::U32, Type::I32, {I("OpBitcast", I32)}},
      // Widening follows the source's signedness; UConvert produces an unsigned type in shaders.
      {Type::I32, Type::I64, {I("OpSConvert", I64)}},
      {Type::U32, Type::I64, {I("OpUConvert", "ulong"), I("OpBitcast", I64)}},
      // Narrowing keeps the low bits.
      {Type::I64, Type::I32, {I("OpSConvert", I32)}},
      {Type::I64, Type::U32, {I("OpSConvert", I32), I("OpBitcast", U32)}},
      // Float <-> float.
      {Type::F16, Type::F32, {I("OpFConvert", F32)}},
      {Type::F32, Type::F16, {I("OpFConvert", F16)}},
      {Type::F32, Type::F64, {I("OpFConvert", F64)}},
      {Type::F64, Type::F32, {I("OpFConvert", F32)}},
      {Type::F16, Type::F64, {I("OpFConvert", F64)}},
      {Type::F64, Type::F16, {I("OpFConvert", F16)}},
      // Float -> int, toward zero.
      {Type::F32, Type::I32, {I("OpConvertFToS", I32)}},
      {Type::F32, Type::U32, {I("OpConvertFToU", U32)}},
      {Type::F32, Type::I64, {I("OpConvertFToS", I64)}},
      {Type::F16, Type::I32, {I("OpConvertFToS", I32)}},
      {Type::F16, Type::U32, {I("OpConvertFToU", U32)}},
      {Type::F64, Type::I32, {I("OpConvertFToS", I32)}},
      {Type::F64, Type::U32, {I("OpConvertFToU", U32)}},
      {Type::F64, Type::I64, {I("OpConvertFToS", I64)}},
      {Type::F16, Type::I64, {I("OpConvertFToS", I64)}},
      // Int -> float, by the source's signedness.
      {Type::I32, Type::F32, {I("OpConvertSToF", F32)}},
      {Type::U32, Type::F32, {I("OpConvertUToF", F32)}},
      {Type::I64, Type::F32, {I("OpConvertSToF", F32)}},
      {Type::I32, Type::F16, {I("OpConvertSToF", F16)}},
      {Type::U32, Type::F16, {I("OpConvertUToF", F16)}},
      {Type::I32, Type::F64, {I("OpConvertSToF", F64)}},
      {Type::U32, Type::F64, {I("OpConvertUToF", F64)}},
      {Type::I64, Type::F64, {I("OpConvertSToF", F64)}},
      {Type::I64, Type::F16, {I("OpConvertSToF", F16)}},
  };
}

INSTANTIATE_TEST_SUITE_P(AllPairs, SpirvConvert, ::testing::ValuesIn(convert_cases()),
                         [](const ::testing::TestParamInfo<ConvertCase>& info) { return convert_name(info.param); });

TEST(SpirvConvertCoverage, EveryOrderedPairOfNumericTypesIsListed) {
  const Type numeric[] = {Type::I32, Type::U32, Type::I64, Type::F16, Type::F32, Type::F64};
  auto cases = convert_cases();
  for (Type from : numeric)
    for (Type to : numeric) {
      if (from == to) continue;
      bool found = false;
      for (const auto& c : cases) found |= c.from == from && c.to == to;
      EXPECT_TRUE(found) << dtype_name(from) << " -> " << dtype_name(to) << " has no conversion case";
    }
}

}  // namespace
}  // namespace spire::spirv
