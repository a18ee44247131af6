#include "tests/backends/ptx/ptx_sim.h"

#include <bit>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace spire::ptx::testing {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t;");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(trim(part));
  return out;
}

float as_f32(uint64_t b) { return std::bit_cast<float>(uint32_t(b)); }
double as_f64(uint64_t b) { return std::bit_cast<double>(b); }
uint64_t bits(float v) { return std::bit_cast<uint32_t>(v); }
uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }

bool compare(const std::string& op, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  if (op == "eq") return !unordered && a == b;
  if (op == "ne") return !unordered && a != b;
  if (op == "neu") return unordered || a != b;
  if (op == "lt") return !unordered && a < b;
  if (op == "le") return !unordered && a <= b;
  if (op == "gt") return !unordered && a > b;
  if (op == "ge") return !unordered && a >= b;
  throw std::runtime_error("sim: unknown compare " + op);
}

int32_t to_s32(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483647.0) return 2147483647;
  if (v <= -2147483648.0) return int32_t(-2147483647 - 1);
  return int32_t(v);
}

}  // namespace

uint64_t PtxSim::to_bits(float v) { return std::bit_cast<uint32_t>(v); }
uint64_t PtxSim::to_bits(double v) { return std::bit_cast<uint64_t>(v); }

size_t PtxSim::slot(const std::string& reg) {
  auto [it, fresh] = names_.emplace(reg, regs_.size());
  if (fresh) regs_.push_back(0);
  return it->second;
}

float PtxSim::f32(const std::string& reg) const { return as_f32(regs_.at(names_.at(reg))); }
double PtxSim::f64(const std::string& reg) const { return as_f64(regs_.at(names_.at(reg))); }

PtxSim::PtxSim(const std::string& body, int ex2_error_ulps) : ex2_error_ulps_(ex2_error_ulps) {
  std::stringstream ss(body);
  std::string line;
  while (std::getline(ss, line)) {
    std::string t = trim(line);
    if (t.empty() || t.rfind("//", 0) == 0) continue;
    Instr in;
    in.text = t;
    size_t sp = t.find(' ');
    in.op = split(t.substr(0, sp), '.');
    for (const std::string& o : split(t.substr(sp + 1), ',')) {
      Operand a;
      if (o.empty()) throw std::runtime_error("sim: empty operand in: " + t);
      if (o[0] == '%') {
        a.is_reg = true;
        a.reg = slot(o);
      } else if (o.size() == 10 && o.rfind("0f", 0) == 0) {
        a.imm = std::stoull(o.substr(2), nullptr, 16);
      } else if (o.size() == 18 && o.rfind("0d", 0) == 0) {
        a.imm = std::stoull(o.substr(2), nullptr, 16);
      } else if (o.rfind("0x", 0) == 0) {
        a.imm = std::stoull(o.substr(2), nullptr, 16);
      } else {
        a.imm = uint64_t(std::stoll(o));
      }
      in.args.push_back(a);
    }
    code_.push_back(std::move(in));
  }
}

uint64_t PtxSim::read(const Operand& o) const { return o.is_reg ? regs_[o.reg] : o.imm; }

void PtxSim::run() {
  for (const Instr& in : code_) {
    try {
      exec(in);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + " in: " + in.text);
    }
  }
}

void PtxSim::exec(const Instr& in) {
  const std::vector<std::string>& op = in.op;
  const std::vector<Operand>& a = in.args;
  auto set = [&](uint64_t v) { regs_[a[0].reg] = v; };
  const std::string& name = op[0];
  const std::string& type = op.back();
  const bool f32 = type == "f32", f64 = type == "f64";
  auto fl = [&](size_t i) { return f64 ? as_f64(read(a[i])) : double(as_f32(read(a[i]))); };
  auto put_float = [&](double v) { set(f64 ? bits(v) : bits(float(v))); };
  auto u32 = [&](size_t i) { return uint32_t(read(a[i])); };

  if (name == "setp") {
    bool r;
    if (type == "s32") {
      int32_t x = int32_t(u32(1)), y = int32_t(u32(2));
      r = compare(op[1], double(x), double(y));
    } else if (type == "s64") {
      int64_t x = int64_t(read(a[1])), y = int64_t(read(a[2]));
      r = compare(op[1], double(x > y) - double(x < y), 0.0);  // exact for any int64 pair
    } else {
      r = compare(op[1], fl(1), fl(2));
    }
    if (op.size() == 4) {
      bool c = read(a[3]) != 0;
      r = op[2] == "and" ? (r && c) : op[2] == "or" ? (r || c) : throw std::runtime_error("sim: setp combiner");
    }
    set(r);
  } else if (name == "selp") {
    set(read(a[3]) ? read(a[1]) : read(a[2]));
  } else if (name == "mov") {
    set(read(a[1]));
  } else if ((name == "add" || name == "sub" || name == "mul" || name == "div") && (f32 || f64)) {
    // Each step is computed in the type itself (float ops on floats round once, as PTX .rn does).
    if (f32) {
      float x = as_f32(read(a[1])), y = as_f32(read(a[2]));
      float r = name == "add" ? x + y : name == "sub" ? x - y : name == "mul" ? x * y : x / y;
      set(bits(r));
    } else {
      double x = as_f64(read(a[1])), y = as_f64(read(a[2]));
      double r = name == "add" ? x + y : name == "sub" ? x - y : name == "mul" ? x * y : x / y;
      set(bits(r));
    }
  } else if (name == "fma") {
    if (f32)
      set(bits(std::fma(as_f32(read(a[1])), as_f32(read(a[2])), as_f32(read(a[3])))));
    else
      set(bits(std::fma(as_f64(read(a[1])), as_f64(read(a[2])), as_f64(read(a[3])))));
  } else if (name == "neg" && (f32 || f64)) {
    put_float(-fl(1));
  } else if (name == "abs" && (f32 || f64)) {
    put_float(std::fabs(fl(1)));
  } else if (name == "ex2") {
    float x = as_f32(read(a[1]));
    if (std::fpclassify(x) == FP_SUBNORMAL) x = 0;  // .ftz
    float r = float(std::exp2(double(x)));
    for (int i = 0; i < std::abs(ex2_error_ulps_); ++i) r = std::nextafter(r, ex2_error_ulps_ > 0 ? INFINITY : 0.0f);
    if (std::fpclassify(r) == FP_SUBNORMAL) r = std::copysign(0.0f, r);
    set(bits(r));
  } else if (name == "cvt") {
    // cvt[.rnd].dst.src
    std::string rnd = op.size() == 4 ? op[1] : "", dst = op[op.size() - 2], src = op.back();
    double v = src == "s32"   ? double(int32_t(u32(1)))
               : src == "s64" ? double(int64_t(read(a[1])))
               : src == "f64" ? as_f64(read(a[1]))
                              : double(as_f32(read(a[1])));
    if (rnd == "rni") v = std::nearbyint(v);
    if (rnd == "rzi") v = std::trunc(v);
    if (dst == "s32") set(uint32_t(to_s32(v)));
    else if (dst == "s64") set(uint64_t(int64_t(v)));  // only exact small integers reach here
    else if (dst == "f32") set(bits(float(v)));  // .rn narrowing or exact
    else if (dst == "f64") set(bits(v));
    else throw std::runtime_error("sim: cvt to " + dst);
  } else if (type == "s32" || type == "u32" || type == "b32") {
    uint32_t x = u32(1), y = a.size() > 2 ? u32(2) : 0, r;
    if (name == "add") r = x + y;
    else if (name == "sub") r = x - y;
    else if (name == "and") r = x & y;
    else if (name == "or") r = x | y;
    else if (name == "shl") r = y >= 32 ? 0 : x << y;
    else if (name == "shr" && type == "s32") r = uint32_t(int32_t(x) >> std::min(y, 31u));
    else if (name == "shr") r = y >= 32 ? 0 : x >> y;
    else throw std::runtime_error("sim: unknown instruction");
    set(r);
  } else if (type == "b64" || type == "s64" || type == "u64") {
    uint64_t x = read(a[1]), y = read(a[2]);
    if (name == "and") set(x & y);
    else if (name == "or") set(x | y);
    else if (name == "add") set(x + y);
    else if (name == "sub") set(x - y);
    else if (name == "shl") set(y >= 64 ? 0 : x << y);
    else if (name == "shr" && type == "s64") set(uint64_t(int64_t(x) >> std::min<uint64_t>(y, 63)));
    else if (name == "shr") set(y >= 64 ? 0 : x >> y);
    else throw std::runtime_error("sim: unknown instruction");
  } else if (type == "pred") {
    bool x = read(a[1]) != 0;
    if (name == "not") set(!x);
    else if (name == "and") set(x && read(a[2]) != 0);
    else if (name == "or") set(x || read(a[2]) != 0);
    else throw std::runtime_error("sim: unknown instruction");
  } else {
    throw std::runtime_error("sim: unknown instruction");
  }
}

}  // namespace spire::ptx::testing
