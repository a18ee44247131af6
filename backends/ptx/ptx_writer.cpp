#include "backends/ptx/ptx_writer.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

namespace spire::ptx {

namespace {

struct ClassInfo {
  const char* decl_type;
  const char* prefix;
};

constexpr std::array<ClassInfo, kRegClassCount> kClasses = {{
    {".pred", "%p"},
    {".b16", "%h"},
    {".b32", "%r"},
    {".b64", "%rd"},
    {".f32", "%f"},
    {".f64", "%fd"},
}};

}  // namespace

RegClass reg_class_of(kir::Type t) {
  switch (t) {
    case kir::Type::Bool: return RegClass::Pred;
    case kir::Type::F16: case kir::Type::BF16: return RegClass::B16;
    case kir::Type::I32: case kir::Type::U32: return RegClass::B32;
    case kir::Type::I64: return RegClass::B64;
    case kir::Type::F32: return RegClass::F32;
    case kir::Type::F64: return RegClass::F64;
  }
  return RegClass::B32;
}

std::string_view ptx_type(kir::Type t) {
  switch (t) {
    case kir::Type::Bool: return "pred";
    case kir::Type::I32: return "s32";
    case kir::Type::U32: return "u32";
    case kir::Type::I64: return "s64";
    case kir::Type::F16: return "f16";
    case kir::Type::F32: return "f32";
    case kir::Type::F64: return "f64";
    case kir::Type::BF16: return "b16";  // no arithmetic on it (types.h): moves and converts as bits
  }
  return "?";
}

std::string_view ptx_bits(kir::Type t) {
  switch (t) {
    case kir::Type::Bool: return "pred";
    case kir::Type::F16: case kir::Type::BF16: return "b16";
    case kir::Type::I32: case kir::Type::U32: case kir::Type::F32: return "b32";
    case kir::Type::I64: case kir::Type::F64: return "b64";
  }
  return "?";
}

std::string f32_imm(float v) { return fmt::format("0f{:08X}", std::bit_cast<uint32_t>(v)); }
std::string f64_imm(double v) { return fmt::format("0d{:016X}", std::bit_cast<uint64_t>(v)); }

std::string PtxWriter::reg(RegClass c) {
  auto i = size_t(c);
  return fmt::format("{}{}", kClasses[i].prefix, count_[i]++);
}

std::string PtxWriter::new_label(std::string_view hint) { return fmt::format("$L{}{}", hint, labels_++); }

void PtxWriter::ins(std::string_view text) {
  body_ += "  ";
  body_ += text;
  body_ += '\n';
}

void PtxWriter::label(std::string_view name) {
  body_ += name;
  body_ += ":\n";
}

void PtxWriter::comment(std::string_view text) {
  body_ += "  // ";
  body_ += text;
  body_ += '\n';
}

std::string PtxWriter::declarations() const {
  std::string out;
  for (size_t i = 0; i < kRegClassCount; ++i)
    if (count_[i]) out += fmt::format("  .reg {} {}<{}>;\n", kClasses[i].decl_type, kClasses[i].prefix, count_[i]);
  return out;
}

}  // namespace spire::ptx
