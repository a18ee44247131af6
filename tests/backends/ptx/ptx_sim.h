// A host interpreter for the straight-line PTX the math routines of backends/ptx/ptx_math.cpp emit, so
// their accuracy can be measured here against libm without a GPU. It knows only the instructions those
// routines use and fails loudly (std::runtime_error naming the line) on anything else.
//
// Registers hold raw bits; each instruction's type suffix says how to read them. ex2.approx is modelled as
// the correctly rounded 2^x moved by `ex2_error_ulps` (the hardware is within about 2 ulp), so a test can
// check that a routine's error bound survives the hardware approximation.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace spire::ptx::testing {

class PtxSim {
 public:
  // Parses `body` (one instruction per line; comments and blank lines skipped) once, to run many times.
  explicit PtxSim(const std::string& body, int ex2_error_ulps = 0);
  void set_f32(const std::string& reg, float v) { regs_[slot(reg)] = to_bits(v); }
  void set_f64(const std::string& reg, double v) { regs_[slot(reg)] = to_bits(v); }
  float f32(const std::string& reg) const;
  double f64(const std::string& reg) const;
  void run();

 private:
  struct Operand {
    bool is_reg = false;
    size_t reg = 0;
    uint64_t imm = 0;
  };
  struct Instr {
    std::string text;                // for error messages
    std::vector<std::string> op;     // "setp.lt.and.f32" split at '.'
    std::vector<Operand> args;
  };
  static uint64_t to_bits(float v);
  static uint64_t to_bits(double v);
  size_t slot(const std::string& reg);
  uint64_t read(const Operand& o) const;
  void exec(const Instr& in);

  std::vector<Instr> code_;
  std::unordered_map<std::string, size_t> names_;
  std::vector<uint64_t> regs_;
  int ex2_error_ulps_;
};

}  // namespace spire::ptx::testing
