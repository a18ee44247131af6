// The text sink of the PTX backend: virtual registers by class, labels, and the instruction stream.
//
// Every value gets a fresh virtual register; ptxas does the register allocation. The register
// declarations are written last (after the body is known), so their counts are exact.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/kernel/types.h"

namespace spire::ptx {

// PTX register classes. I32 and U32 share .b32 (the instruction, not the register, says signedness);
// f16 lives in .b16 and is computed in f32 (see ptx_backend.cpp's legalization).
enum class RegClass : uint8_t { Pred, B16, B32, B64, F32, F64 };
inline constexpr size_t kRegClassCount = 6;

RegClass reg_class_of(kir::Type t);

// The PTX type suffix of arithmetic on t: s32, u32, s64, f16, f32, f64 (pred for Bool).
std::string_view ptx_type(kir::Type t);
// The bit-size suffix of moves/loads/stores/selp on t: b16, b32, b64 (pred for Bool).
std::string_view ptx_bits(kir::Type t);

// PTX immediates.
std::string f32_imm(float v);   // 0f3F800000
std::string f64_imm(double v);  // 0d3FF0000000000000

class PtxWriter {
 public:
  // A new virtual register of the class.
  std::string reg(RegClass c);
  std::string reg(kir::Type t) { return reg(reg_class_of(t)); }

  // A new label name, unique in the entry: $L<hint><n>.
  std::string new_label(std::string_view hint);

  // One instruction or directive, indented, ';' appended by the caller's text.
  void ins(std::string_view text);
  void label(std::string_view name);
  void comment(std::string_view text);

  // `.reg` declarations for every class used so far.
  std::string declarations() const;
  const std::string& body() const { return body_; }

 private:
  std::array<uint32_t, kRegClassCount> count_{};
  uint32_t labels_ = 0;
  std::string body_;
};

}  // namespace spire::ptx
