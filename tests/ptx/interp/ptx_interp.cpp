#include "tests/ptx/interp/ptx_interp.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "ir/kernel/half_bits.h"

namespace spire::ptx::interp {

using kir::f16_bits_to_f32;

namespace {

enum class Ty : uint8_t { None, Pred, B16, B32, B64, U16, U32, S32, U64, S64, F16, F32, F64 };

Ty parse_type(const std::string& s) {
  static const std::map<std::string, Ty> m = {
      {"pred", Ty::Pred}, {"b16", Ty::B16}, {"b32", Ty::B32}, {"b64", Ty::B64}, {"u16", Ty::U16},
      {"u32", Ty::U32},   {"s32", Ty::S32}, {"u64", Ty::U64}, {"s64", Ty::S64}, {"f16", Ty::F16},
      {"f32", Ty::F32},   {"f64", Ty::F64}};
  auto it = m.find(s);
  return it == m.end() ? Ty::None : it->second;
}

int type_bytes(Ty t) {
  switch (t) {
    case Ty::B16: case Ty::U16: case Ty::F16: return 2;
    case Ty::B32: case Ty::U32: case Ty::S32: case Ty::F32: return 4;
    case Ty::B64: case Ty::U64: case Ty::S64: case Ty::F64: return 8;
    default: return 0;
  }
}
bool is_float(Ty t) { return t == Ty::F16 || t == Ty::F32 || t == Ty::F64; }
bool is_signed(Ty t) { return t == Ty::S32 || t == Ty::S64; }

enum class Op : uint8_t {
  LdParam, LdGlobal, StGlobal, LdShared, StShared, AtomAdd, Cvta, Mov, Mad, MulLo, MulWide, Add, Sub, Mul, Div,
  Rem, Min, Max, Fma, Sqrt, Neg, Abs, Not, And, Or, Xor, Shl, Shr, Setp, Selp, Cvt, Ex2, Bar, Shfl, Bra, Ret
};

enum class Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Neu, Nan };
enum class Comb : uint8_t { None, And, Or };
enum class Rnd : uint8_t { None, Rn, Rz, Rni, Rzi, Rmi };

struct Opnd {
  enum Kind : uint8_t { Reg, Imm, Special, Symbol } kind = Imm;
  bool memory = false;  // [x]
  uint32_t index = 0;   // register, special register or symbol index
  uint64_t imm = 0;
};

struct Ins {
  Op op;
  Ty t = Ty::None, src = Ty::None;  // src: cvt's source type
  Cmp cmp = Cmp::Eq;
  Comb comb = Comb::None;
  Rnd rnd = Rnd::None;
  int guard = -1;
  bool guard_neg = false;
  uint32_t target = 0;
  std::vector<Opnd> a;
  std::string text;
};

// Special registers: tid, ntid, ctaid, nctaid (x, y, z each), and the lane in the warp.
constexpr uint32_t kSpecialCount = 13;
const char* const kSpecials[kSpecialCount] = {"%tid.x",   "%tid.y",   "%tid.z",    "%ntid.x",   "%ntid.y",
                                              "%ntid.z",  "%ctaid.x", "%ctaid.y", "%ctaid.z",  "%nctaid.x",
                                              "%nctaid.y", "%nctaid.z", "%laneid"};
constexpr uint32_t kWarp = 32;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

float f32_of(uint64_t b) { return std::bit_cast<float>(uint32_t(b)); }
double f64_of(uint64_t b) { return std::bit_cast<double>(b); }
uint64_t bits_of(float v) { return std::bit_cast<uint32_t>(v); }
uint64_t bits_of(double v) { return std::bit_cast<uint64_t>(v); }

// double -> f16 with one rounding: round to odd into f32 first (enough extra bits), then to nearest even.
uint16_t f64_to_f16(double x) {
  float f = float(x);
  if (std::isfinite(x) && double(f) != x) {
    if (std::abs(double(f)) > std::abs(x)) f = std::nextafter(f, 0.0f);
    uint32_t b = std::bit_cast<uint32_t>(f) | 1u;
    f = std::bit_cast<float>(b);
  }
  return spire::kir::f32_to_f16_bits(f);
}

}  // namespace

struct Module::Impl {
  std::vector<Entry> entries;
  std::vector<Ins> code;  // one entry per module (what backends/ptx emits)
  std::vector<uint32_t> entry_pc;
  uint32_t registers = 0;
  std::vector<std::string> symbols;     // params (by entry) and shared arrays
  std::vector<int> symbol_param;        // param index, or -1 for a shared array
  std::vector<uint32_t> symbol_offset;  // shared arrays: offset in the CTA's shared memory
  uint32_t shared_bytes = 0;

  std::unordered_map<std::string, uint32_t> reg_index;
  std::unordered_map<std::string, uint32_t> symbol_index;

  [[noreturn]] static void fail(int line, const std::string& text, const std::string& why) {
    throw Error("PTX interpreter: line " + std::to_string(line) + ": " + why + ": " + text);
  }

  Opnd operand(const std::string& raw, int line, const std::string& text) {
    Opnd o;
    std::string s = raw;
    if (!s.empty() && s.front() == '[') {
      if (s.back() != ']') fail(line, text, "unterminated memory operand");
      o.memory = true;
      s = trim(s.substr(1, s.size() - 2));
    }
    if (s.empty()) fail(line, text, "empty operand");
    if (s[0] == '%') {
      for (uint32_t i = 0; i < kSpecialCount; ++i)
        if (s == kSpecials[i]) {
          o.kind = Opnd::Special;
          o.index = i;
          return o;
        }
      auto [it, fresh] = reg_index.emplace(s, registers);
      if (fresh) ++registers;
      o.kind = Opnd::Reg;
      o.index = it->second;
      return o;
    }
    if (s.size() == 10 && (s.rfind("0f", 0) == 0 || s.rfind("0F", 0) == 0)) {
      o.imm = std::stoull(s.substr(2), nullptr, 16);
      return o;
    }
    if (s.size() == 18 && (s.rfind("0d", 0) == 0 || s.rfind("0D", 0) == 0)) {
      o.imm = std::stoull(s.substr(2), nullptr, 16);
      return o;
    }
    if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) {
      o.imm = std::stoull(s.substr(2), nullptr, 16);
      return o;
    }
    if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-') {
      o.imm = uint64_t(std::stoll(s));
      return o;
    }
    auto it = symbol_index.find(s);
    if (it == symbol_index.end()) fail(line, text, "unknown symbol '" + s + "'");
    o.kind = Opnd::Symbol;
    o.index = it->second;
    return o;
  }

  void parse(const std::string& ptx) {
    std::stringstream in(ptx);
    std::string raw;
    int line = 0;
    bool in_params = false, in_body = false;
    std::map<std::string, uint32_t> labels;
    std::vector<std::pair<size_t, std::string>> branch_fixups;
    Entry* entry = nullptr;
    while (std::getline(in, raw)) {
      ++line;
      std::string t = raw;
      if (auto c = t.find("//"); c != std::string::npos) t = t.substr(0, c);
      t = trim(t);
      if (t.empty()) continue;
      if (!in_body) {
        if (t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 || t.rfind(".address_size", 0) == 0) continue;
        if (t.rfind(".visible .entry ", 0) == 0) {
          entries.push_back({});
          entry = &entries.back();
          size_t open = t.find('(');
          if (open == std::string::npos) fail(line, t, "entry without '('");
          entry->name = trim(t.substr(16, open - 16));
          in_params = t.find(')') == std::string::npos;
          continue;
        }
        if (in_params) {
          if (t == ")") {
            in_params = false;
            continue;
          }
          // .param .TYPE NAME[,]
          std::string p = t;
          if (!p.empty() && p.back() == ',') p.pop_back();
          auto parts = split(p, ' ');
          if (parts.size() != 3 || parts[0] != ".param") fail(line, t, "parameter expected");
          Ty ty = parse_type(parts[1].substr(1));
          if (ty == Ty::None) fail(line, t, "unknown parameter type");
          entry->params.push_back({parts[2], type_bytes(ty)});
          symbol_index[parts[2]] = uint32_t(symbols.size());
          symbols.push_back(parts[2]);
          symbol_param.push_back(int(entry->params.size() - 1));
          symbol_offset.push_back(0);
          continue;
        }
        if (t.rfind(".reqntid", 0) == 0) {
          auto dims = split(t.substr(8), ',');
          if (!entry || dims.size() != 3) fail(line, t, "bad .reqntid");
          for (int d = 0; d < 3; ++d) entry->reqntid[d] = unsigned(std::stoul(dims[d]));
          continue;
        }
        if (t == "{") {
          if (!entry) fail(line, t, "body without entry");
          if (!code.empty()) fail(line, t, "more than one entry per module is not supported");
          entry_pc.push_back(uint32_t(code.size()));
          in_body = true;
          continue;
        }
        fail(line, t, "unexpected directive");
      }
      if (t == "}") {
        in_body = false;
        continue;
      }
      if (t.rfind(".reg ", 0) == 0) continue;  // registers are created on first use
      if (t.rfind(".shared ", 0) == 0) {
        // .shared .align A .b8 NAME[BYTES];
        auto parts = split(t.substr(0, t.size() - (t.back() == ';' ? 1 : 0)), ' ');
        if (parts.size() != 5 || parts[1] != ".align" || parts[3] != ".b8") fail(line, t, "unsupported .shared form");
        uint32_t align = uint32_t(std::stoul(parts[2]));
        size_t lb = parts[4].find('['), rb = parts[4].find(']');
        std::string name = parts[4].substr(0, lb);
        uint32_t bytes = uint32_t(std::stoul(parts[4].substr(lb + 1, rb - lb - 1)));
        shared_bytes = (shared_bytes + align - 1) / align * align;
        symbol_index[name] = uint32_t(symbols.size());
        symbols.push_back(name);
        symbol_param.push_back(-1);
        symbol_offset.push_back(shared_bytes);
        shared_bytes += bytes;
        continue;
      }
      if (t.back() == ':') {
        labels[t.substr(0, t.size() - 1)] = uint32_t(code.size());
        continue;
      }
      if (t.back() != ';') fail(line, t, "instruction without ';'");
      t.pop_back();
      Ins ins;
      ins.text = t;
      if (t[0] == '@') {
        size_t sp = t.find(' ');
        std::string g = t.substr(1, sp - 1);
        ins.guard_neg = g[0] == '!';
        if (ins.guard_neg) g = g.substr(1);
        ins.guard = int(operand(g, line, t).index);
        t = trim(t.substr(sp + 1));
      }
      size_t sp = t.find(' ');
      std::string opcode = sp == std::string::npos ? t : t.substr(0, sp);
      std::string rest = sp == std::string::npos ? "" : t.substr(sp + 1);
      auto parts = split(opcode, '.');
      const std::string& name = parts[0];
      auto type_at = [&](size_t i) {
        Ty ty = i < parts.size() ? parse_type(parts[i]) : Ty::None;
        if (ty == Ty::None) fail(line, ins.text, "missing or unknown type");
        return ty;
      };
      auto has = [&](const char* mod) {
        for (size_t i = 1; i < parts.size(); ++i)
          if (parts[i] == mod) return true;
        return false;
      };
      if (name == "bra") {
        ins.op = Op::Bra;
        branch_fixups.emplace_back(code.size(), trim(rest));
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "ret") {
        ins.op = Op::Ret;
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "bar") {
        if (!has("sync")) fail(line, ins.text, "only bar.sync is supported");
        ins.op = Op::Bar;
        code.push_back(std::move(ins));
        continue;
      }
      for (const auto& o : split(rest, ',')) ins.a.push_back(operand(o, line, ins.text));
      ins.t = type_at(parts.size() - 1);
      if (name == "ld" || name == "st") {
        const std::string& space = parts[1];
        if (space == "param" && name == "ld") ins.op = Op::LdParam;
        else if (space == "global") ins.op = name == "ld" ? Op::LdGlobal : Op::StGlobal;
        else if (space == "shared") ins.op = name == "ld" ? Op::LdShared : Op::StShared;
        else fail(line, ins.text, "unsupported state space");
      } else if (name == "shfl") {
        // shfl.sync.bfly.b32 d, a, lane_mask, 31, -1: the only form the backend writes (shuffle_xor over the warp).
        if (parts.size() != 4 || parts[1] != "sync" || parts[2] != "bfly" || ins.a.size() != 5 || ins.a[3].imm != 31)
          fail(line, ins.text, "only shfl.sync.bfly.b32 d, a, mask, 31, membermask");
        ins.op = Op::Shfl;
      } else if (name == "atom") {
        if (parts.size() != 4 || parts[1] != "global" || parts[2] != "add") fail(line, ins.text, "only atom.global.add");
        ins.op = Op::AtomAdd;
      } else if (name == "cvta") {
        ins.op = Op::Cvta;
      } else if (name == "mov") {
        ins.op = Op::Mov;
      } else if (name == "mad") {
        if (!has("lo")) fail(line, ins.text, "only mad.lo");
        ins.op = Op::Mad;
      } else if (name == "mul") {
        ins.op = has("wide") ? Op::MulWide : has("lo") ? Op::MulLo : Op::Mul;
        if (ins.op == Op::Mul && !is_float(ins.t)) fail(line, ins.text, "integer mul needs .lo or .wide");
      } else if (name == "add" || name == "sub" || name == "div" || name == "rem" || name == "min" || name == "max" ||
                 name == "fma" || name == "sqrt" || name == "neg" || name == "abs" || name == "not" || name == "and" ||
                 name == "or" || name == "xor" || name == "shl" || name == "shr" || name == "selp" || name == "ex2") {
        static const std::map<std::string, Op> ops = {
            {"add", Op::Add}, {"sub", Op::Sub}, {"div", Op::Div}, {"rem", Op::Rem}, {"min", Op::Min},
            {"max", Op::Max}, {"fma", Op::Fma}, {"sqrt", Op::Sqrt}, {"neg", Op::Neg}, {"abs", Op::Abs},
            {"not", Op::Not}, {"and", Op::And}, {"or", Op::Or}, {"xor", Op::Xor}, {"shl", Op::Shl},
            {"shr", Op::Shr}, {"selp", Op::Selp}, {"ex2", Op::Ex2}};
        ins.op = ops.at(name);
        if (is_float(ins.t) && (ins.op == Op::Div || ins.op == Op::Sqrt || ins.op == Op::Fma) && !has("rn"))
          fail(line, ins.text, "float div/sqrt/fma without .rn is not in the subset");
        if (ins.op == Op::Ex2 && !has("approx")) fail(line, ins.text, "ex2 without .approx");
      } else if (name == "setp") {
        ins.op = Op::Setp;
        static const std::map<std::string, Cmp> cmps = {
            {"eq", Cmp::Eq}, {"ne", Cmp::Ne}, {"lt", Cmp::Lt}, {"le", Cmp::Le}, {"gt", Cmp::Gt}, {"ge", Cmp::Ge},
            {"lo", Cmp::Lo}, {"ls", Cmp::Ls}, {"hi", Cmp::Hi}, {"hs", Cmp::Hs}, {"neu", Cmp::Neu}, {"nan", Cmp::Nan}};
        auto it = cmps.find(parts[1]);
        if (it == cmps.end()) fail(line, ins.text, "unsupported comparison");
        ins.cmp = it->second;
        if (parts.size() == 4) ins.comb = parts[2] == "and" ? Comb::And : parts[2] == "or" ? Comb::Or : Comb::None;
      } else if (name == "cvt") {
        ins.op = Op::Cvt;
        ins.src = type_at(parts.size() - 1);
        ins.t = type_at(parts.size() - 2);
        if (parts.size() == 4) {
          static const std::map<std::string, Rnd> rnds = {
              {"rn", Rnd::Rn}, {"rz", Rnd::Rz}, {"rni", Rnd::Rni}, {"rzi", Rnd::Rzi}, {"rmi", Rnd::Rmi}};
          auto it = rnds.find(parts[1]);
          if (it == rnds.end()) fail(line, ins.text, "unsupported rounding");
          ins.rnd = it->second;
        }
      } else {
        fail(line, ins.text, "instruction not in the interpreter's subset");
      }
      code.push_back(std::move(ins));
    }
    if (entries.empty()) throw Error("PTX interpreter: no .entry in the module");
    for (auto& [at, label] : branch_fixups) {
      auto it = labels.find(label);
      if (it == labels.end()) throw Error("PTX interpreter: branch to unknown label " + label);
      code[at].target = it->second;
    }
  }
};

namespace {

struct Thread {
  std::vector<uint64_t> regs;
  uint32_t pc = 0;
  // AtShuffle: stopped at a shfl.sync until every lane of its warp is there too (pc still on the shfl).
  enum State : uint8_t { Running, AtBarrier, AtShuffle, Exited } state = Running;
  uint32_t special[kSpecialCount];
};

bool compare(Cmp c, Ty t, uint64_t a, uint64_t b) {
  if (is_float(t)) {
    double x = t == Ty::F64 ? f64_of(a) : t == Ty::F32 ? double(f32_of(a)) : double(f16_bits_to_f32(uint16_t(a)));
    double y = t == Ty::F64 ? f64_of(b) : t == Ty::F32 ? double(f32_of(b)) : double(f16_bits_to_f32(uint16_t(b)));
    bool un = std::isnan(x) || std::isnan(y);
    switch (c) {
      case Cmp::Eq: return !un && x == y;
      case Cmp::Ne: return !un && x != y;
      case Cmp::Neu: return un || x != y;
      case Cmp::Nan: return un;
      case Cmp::Lt: return !un && x < y;
      case Cmp::Le: return !un && x <= y;
      case Cmp::Gt: return !un && x > y;
      case Cmp::Ge: return !un && x >= y;
      default: throw Error("PTX interpreter: unsigned comparison on floats");
    }
  }
  bool wide = type_bytes(t) == 8;
  int64_t sx = wide ? int64_t(a) : int64_t(int32_t(uint32_t(a))), sy = wide ? int64_t(b) : int64_t(int32_t(uint32_t(b)));
  uint64_t ux = wide ? a : uint32_t(a), uy = wide ? b : uint32_t(b);
  bool sgn = is_signed(t);
  switch (c) {
    case Cmp::Eq: return ux == uy;
    case Cmp::Ne: case Cmp::Neu: return ux != uy;
    case Cmp::Nan: throw Error("PTX interpreter: setp.nan on integers");
    case Cmp::Lt: return sgn ? sx < sy : ux < uy;
    case Cmp::Le: return sgn ? sx <= sy : ux <= uy;
    case Cmp::Gt: return sgn ? sx > sy : ux > uy;
    case Cmp::Ge: return sgn ? sx >= sy : ux >= uy;
    case Cmp::Lo: return ux < uy;
    case Cmp::Ls: return ux <= uy;
    case Cmp::Hi: return ux > uy;
    case Cmp::Hs: return ux >= uy;
  }
  return false;
}

// PTX min/max on floats: a NaN operand yields the other; -0 orders below +0.
template <class F>
F fminmax(F x, F y, bool is_max) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  if (x == y && x == 0) return (std::signbit(x) != is_max) ? x : y;
  return is_max ? (x > y ? x : y) : (x < y ? x : y);
}

template <class I>
I int_div(I x, I y) {
  if (y == 0) return I(~I(0));  // PTX: all ones
  if constexpr (std::is_signed_v<I>)
    if (y == -1) return I(0) - x;  // wraps for the minimum value, as the hardware does
  return x / y;
}
template <class I>
I int_rem(I x, I y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<I>)
    if (y == -1) return 0;
  return x % y;
}

double float_value(Ty t, uint64_t b) {
  return t == Ty::F64 ? f64_of(b) : t == Ty::F32 ? double(f32_of(b)) : double(f16_bits_to_f32(uint16_t(b)));
}

uint64_t float_bits(Ty t, double v) {
  // v must already be representable in t (or be rounded by the caller's choice of path).
  return t == Ty::F64 ? bits_of(v) : t == Ty::F32 ? bits_of(float(v)) : uint64_t(f64_to_f16(v));
}

uint64_t convert(const Ins& in, uint64_t s) {
  Ty d = in.t, st = in.src;
  if (!is_float(st) && !is_float(d)) {
    if (type_bytes(st) == 2) s &= 0xFFFF;  // u16 / b16 sources (no s16 in the subset)
    int64_t v = is_signed(st) ? (type_bytes(st) == 8 ? int64_t(s) : int64_t(int32_t(uint32_t(s))))
                              : int64_t(type_bytes(st) == 8 ? s : uint64_t(uint32_t(s)));
    const int bytes = type_bytes(d);
    return bytes == 8 ? uint64_t(v) : bytes == 2 ? uint64_t(v) & 0xFFFF : uint64_t(uint32_t(v));
  }
  if (!is_float(st)) {  // int -> float, round to nearest
    if (d == Ty::F32) {
      if (is_signed(st)) return bits_of(type_bytes(st) == 8 ? float(int64_t(s)) : float(int32_t(uint32_t(s))));
      return bits_of(type_bytes(st) == 8 ? float(s) : float(uint32_t(s)));
    }
    if (d == Ty::F64) {
      if (is_signed(st)) return bits_of(type_bytes(st) == 8 ? double(int64_t(s)) : double(int32_t(uint32_t(s))));
      return bits_of(type_bytes(st) == 8 ? double(s) : double(uint32_t(s)));
    }
    // f16: every 32-bit integer is exact in double; 64-bit ones beyond 2^53 overflow f16 anyway.
    double v = is_signed(st) ? (type_bytes(st) == 8 ? double(int64_t(s)) : double(int32_t(uint32_t(s))))
                             : (type_bytes(st) == 8 ? double(s) : double(uint32_t(s)));
    return f64_to_f16(v);
  }
  double v = float_value(st, s);
  if (!is_float(d)) {  // float -> int: round as asked, saturate, NaN -> 0
    if (in.rnd == Rnd::Rzi || in.rnd == Rnd::Rz) v = std::trunc(v);
    else if (in.rnd == Rnd::Rni || in.rnd == Rnd::Rn) v = std::nearbyint(v);
    else if (in.rnd == Rnd::Rmi) v = std::floor(v);
    else throw Error("PTX interpreter: float-to-int cvt without rounding: " + in.text);
    if (std::isnan(v)) return 0;
    switch (d) {
      case Ty::S32: return uint32_t(int32_t(std::clamp(v, -2147483648.0, 2147483647.0)));
      case Ty::U32: return uint32_t(std::clamp(v, 0.0, 4294967295.0));
      case Ty::S64: return v >= 9223372036854775807.0 ? uint64_t(INT64_MAX) : v <= -9223372036854775808.0 ? uint64_t(INT64_MIN) : uint64_t(int64_t(v));
      case Ty::U64: return v >= 18446744073709551615.0 ? UINT64_MAX : v <= 0 ? 0 : uint64_t(v);
      default: throw Error("PTX interpreter: cvt to " + in.text);
    }
  }
  // float -> float
  switch (in.rnd) {
    case Rnd::Rni: v = std::nearbyint(v); break;
    case Rnd::Rzi: v = std::trunc(v); break;
    case Rnd::Rmi: v = std::floor(v); break;
    default: break;
  }
  if (d == Ty::F32 && st == Ty::F64) return bits_of(float(v));  // one rounding, to nearest
  return float_bits(d, v);
}

}  // namespace

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::~Module() = default;

std::unique_ptr<Module> Module::parse(const std::string& ptx) {
  auto impl = std::make_unique<Impl>();
  impl->parse(ptx);
  return std::unique_ptr<Module>(new Module(std::move(impl)));
}

const std::vector<Entry>& Module::entries() const { return impl_->entries; }

const Entry* Module::find(const std::string& name) const {
  for (const auto& e : impl_->entries)
    if (e.name == name) return &e;
  return nullptr;
}

void Module::launch(const Entry& entry, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, void** params,
                    const GlobalCheck& check, uint64_t max_instructions) const {
  const Impl& m = *impl_;
  const std::vector<Ins>& code = m.code;
  uint64_t budget = max_instructions;
  std::vector<uint8_t> shared(m.shared_bytes);
  unsigned threads = block[0] * block[1] * block[2];
  std::vector<Thread> ts(threads);

  auto run_thread = [&](Thread& th) {
    auto rd = [&](const Opnd& o) -> uint64_t {
      switch (o.kind) {
        case Opnd::Reg: return th.regs[o.index];
        case Opnd::Imm: return o.imm;
        case Opnd::Special: return th.special[o.index];
        case Opnd::Symbol: return m.symbol_offset[o.index];
      }
      return 0;
    };
    while (th.state == Thread::Running) {
      if (budget-- == 0) throw Error("PTX interpreter: instruction budget exhausted (an endless loop?)");
      const Ins& in = code[th.pc];
      if (in.guard >= 0 && ((th.regs[size_t(in.guard)] != 0) == in.guard_neg)) {
        ++th.pc;
        continue;
      }
      const Ty t = in.t;
      const bool w64 = type_bytes(t) == 8;
      auto set = [&](uint64_t v) {
        th.regs[in.a[0].index] = t == Ty::Pred ? (v != 0) : w64 ? v : type_bytes(t) == 2 ? uint64_t(uint16_t(v)) : uint64_t(uint32_t(v));
      };
      auto fl = [&](size_t i) { return float_value(t, rd(in.a[i])); };
      auto put_f = [&](double v) { th.regs[in.a[0].index] = t == Ty::F64 ? bits_of(v) : bits_of(float(v)); };
      auto s32 = [&](size_t i) { return int32_t(uint32_t(rd(in.a[i]))); };
      auto u32 = [&](size_t i) { return uint32_t(rd(in.a[i])); };
      auto s64 = [&](size_t i) { return int64_t(rd(in.a[i])); };
      auto u64 = [&](size_t i) { return rd(in.a[i]); };
      auto global_addr = [&](const Opnd& o, uint32_t bytes) {
        uint64_t addr = rd(o);
        try {
          check(addr, bytes);
        } catch (const std::exception& e) {
          throw Error(std::string("PTX interpreter: ") + e.what() + " at: " + in.text);
        }
        return reinterpret_cast<uint8_t*>(addr);
      };
      auto shared_addr = [&](const Opnd& o, uint32_t bytes) {
        uint64_t off = uint32_t(rd(o));
        if (off + bytes > shared.size())
          throw Error("PTX interpreter: shared memory access at " + std::to_string(off) + " past " +
                      std::to_string(shared.size()) + " bytes at: " + in.text);
        return shared.data() + off;
      };
      auto load = [&](const uint8_t* p) {
        uint64_t v = 0;
        std::memcpy(&v, p, size_t(type_bytes(t)));
        return v;
      };
      auto store = [&](uint8_t* p, uint64_t v) { std::memcpy(p, &v, size_t(type_bytes(t))); };
      switch (in.op) {
        case Op::LdParam: {
          const Opnd& src = in.a[1];
          int pi = m.symbol_param[src.index];
          if (pi < 0) throw Error("PTX interpreter: ld.param of a non-parameter at: " + in.text);
          uint64_t v = 0;
          std::memcpy(&v, params[pi], size_t(entry.params[size_t(pi)].bytes));
          set(v);
          break;
        }
        case Op::LdGlobal: set(load(global_addr(in.a[1], uint32_t(type_bytes(t))))); break;
        case Op::StGlobal: store(global_addr(in.a[0], uint32_t(type_bytes(t))), rd(in.a[1])); break;
        case Op::LdShared: set(load(shared_addr(in.a[1], uint32_t(type_bytes(t))))); break;
        case Op::StShared: store(shared_addr(in.a[0], uint32_t(type_bytes(t))), rd(in.a[1])); break;
        case Op::AtomAdd: {
          uint8_t* p = global_addr(in.a[1], 4);
          uint32_t old;
          std::memcpy(&old, p, 4);
          uint32_t v = uint32_t(rd(in.a[2])), r;
          if (t == Ty::F32) r = std::bit_cast<uint32_t>(std::bit_cast<float>(old) + std::bit_cast<float>(v));
          else r = old + v;
          std::memcpy(p, &r, 4);
          set(old);
          break;
        }
        case Op::Cvta: case Op::Mov: set(rd(in.a[1])); break;
        case Op::Mad: set(u64(1) * u64(2) + u64(3)); break;
        case Op::MulLo: set(u64(1) * u64(2)); break;
        case Op::MulWide:
          th.regs[in.a[0].index] = t == Ty::S32 ? uint64_t(int64_t(s32(1)) * int64_t(s32(2))) : uint64_t(u32(1)) * u32(2);
          break;
        case Op::Add: if (is_float(t)) put_f(t == Ty::F64 ? fl(1) + fl(2) : double(float(fl(1)) + float(fl(2)))); else set(u64(1) + u64(2)); break;
        case Op::Sub: if (is_float(t)) put_f(t == Ty::F64 ? fl(1) - fl(2) : double(float(fl(1)) - float(fl(2)))); else set(u64(1) - u64(2)); break;
        case Op::Mul: put_f(t == Ty::F64 ? fl(1) * fl(2) : double(float(fl(1)) * float(fl(2)))); break;
        case Op::Div:
          if (t == Ty::F64) put_f(fl(1) / fl(2));
          else if (t == Ty::F32) put_f(double(float(fl(1)) / float(fl(2))));
          else if (t == Ty::S32) set(uint32_t(int_div(s32(1), s32(2))));
          else if (t == Ty::U32) set(int_div(u32(1), u32(2)));
          else if (t == Ty::S64) set(uint64_t(int_div(s64(1), s64(2))));
          else set(int_div(u64(1), u64(2)));
          break;
        case Op::Rem:
          if (t == Ty::S32) set(uint32_t(int_rem(s32(1), s32(2))));
          else if (t == Ty::U32) set(int_rem(u32(1), u32(2)));
          else if (t == Ty::S64) set(uint64_t(int_rem(s64(1), s64(2))));
          else set(int_rem(u64(1), u64(2)));
          break;
        case Op::Min: case Op::Max: {
          bool mx = in.op == Op::Max;
          if (t == Ty::F64) put_f(fminmax(fl(1), fl(2), mx));
          else if (t == Ty::F32) put_f(double(fminmax(float(fl(1)), float(fl(2)), mx)));
          else if (t == Ty::S32) set(uint32_t(mx ? std::max(s32(1), s32(2)) : std::min(s32(1), s32(2))));
          else if (t == Ty::U32) set(mx ? std::max(u32(1), u32(2)) : std::min(u32(1), u32(2)));
          else if (t == Ty::S64) set(uint64_t(mx ? std::max(s64(1), s64(2)) : std::min(s64(1), s64(2))));
          else set(mx ? std::max(u64(1), u64(2)) : std::min(u64(1), u64(2)));
          break;
        }
        case Op::Fma:
          if (t == Ty::F64) put_f(std::fma(fl(1), fl(2), fl(3)));
          else put_f(double(std::fma(float(fl(1)), float(fl(2)), float(fl(3)))));
          break;
        case Op::Sqrt: put_f(t == Ty::F64 ? std::sqrt(fl(1)) : double(std::sqrt(float(fl(1))))); break;
        case Op::Neg:
          if (is_float(t)) th.regs[in.a[0].index] = rd(in.a[1]) ^ (t == Ty::F64 ? 0x8000000000000000ull : 0x80000000ull);
          else set(0 - u64(1));
          break;
        case Op::Abs:
          if (is_float(t)) th.regs[in.a[0].index] = rd(in.a[1]) & (t == Ty::F64 ? 0x7FFFFFFFFFFFFFFFull : 0x7FFFFFFFull);
          else if (t == Ty::S32) set(uint32_t(s32(1) < 0 ? 0u - u32(1) : u32(1)));
          else set(s64(1) < 0 ? 0 - u64(1) : u64(1));
          break;
        case Op::Not: set(t == Ty::Pred ? !rd(in.a[1]) : ~rd(in.a[1])); break;
        case Op::And: set(t == Ty::Pred ? (rd(in.a[1]) && rd(in.a[2])) : (rd(in.a[1]) & rd(in.a[2]))); break;
        case Op::Or: set(t == Ty::Pred ? (rd(in.a[1]) || rd(in.a[2])) : (rd(in.a[1]) | rd(in.a[2]))); break;
        case Op::Xor: set(t == Ty::Pred ? ((rd(in.a[1]) != 0) != (rd(in.a[2]) != 0)) : (rd(in.a[1]) ^ rd(in.a[2]))); break;
        case Op::Shl: {
          uint32_t n = u32(2);
          uint32_t width = w64 ? 64 : 32;
          set(n >= width ? 0 : u64(1) << n);
          break;
        }
        case Op::Shr: {
          uint32_t n = std::min<uint32_t>(u32(2), w64 ? 64 : 32);
          if (t == Ty::S32) set(uint32_t(n >= 32 ? (s32(1) < 0 ? -1 : 0) : s32(1) >> n));
          else if (t == Ty::S64) set(uint64_t(n >= 64 ? (s64(1) < 0 ? -1 : 0) : s64(1) >> n));
          else if (w64) set(n >= 64 ? 0 : u64(1) >> n);
          else set(n >= 32 ? 0 : u32(1) >> n);
          break;
        }
        case Op::Setp: {
          bool r = compare(in.cmp, t, rd(in.a[1]), rd(in.a[2]));
          if (in.comb == Comb::And) r = r && rd(in.a[3]) != 0;
          if (in.comb == Comb::Or) r = r || rd(in.a[3]) != 0;
          th.regs[in.a[0].index] = r;
          break;
        }
        case Op::Selp: set(rd(in.a[3]) ? rd(in.a[1]) : rd(in.a[2])); break;
        case Op::Cvt: th.regs[in.a[0].index] = convert(in, rd(in.a[1])); break;
        case Op::Ex2: {
          float x = f32_of(rd(in.a[1]));
          if (std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0f, x);  // .ftz
          float r = float(std::exp2(double(x)));
          if (std::fpclassify(r) == FP_SUBNORMAL) r = 0.0f;
          th.regs[in.a[0].index] = bits_of(r);
          break;
        }
        case Op::Bar: th.state = Thread::AtBarrier; break;
        case Op::Shfl: th.state = Thread::AtShuffle; continue;  // resolved per warp below
        case Op::Bra: th.pc = in.target; continue;
        case Op::Ret: th.state = Thread::Exited; continue;
      }
      ++th.pc;
    }
  };

  uint32_t entry_pc = m.entry_pc.at(size_t(&entry - m.entries.data()));
  for (unsigned gz = 0; gz < grid[2]; ++gz)
    for (unsigned gy = 0; gy < grid[1]; ++gy)
      for (unsigned gx = 0; gx < grid[0]; ++gx) {
        std::fill(shared.begin(), shared.end(), uint8_t(0xA5));  // shared memory starts as garbage
        for (unsigned i = 0; i < threads; ++i) {
          Thread& th = ts[i];
          th.regs.assign(m.registers, 0);
          th.pc = entry_pc;
          th.state = Thread::Running;
          unsigned tx = i % block[0], ty = (i / block[0]) % block[1], tz = i / (block[0] * block[1]);
          uint32_t sp[kSpecialCount] = {tx, ty, tz, block[0], block[1], block[2], gx, gy, gz, grid[0], grid[1], grid[2],
                                        i % kWarp};
          std::memcpy(th.special, sp, sizeof sp);
        }
        // Run every thread up to its next barrier, shuffle or exit. A warp whose lanes all stopped at one shfl
        // exchanges values and runs on; the barrier is released when every thread got there.
        for (;;) {
          bool waiting = false;
          for (Thread& th : ts)
            if (th.state == Thread::Running) run_thread(th);
          bool shuffled = false;
          for (unsigned w = 0; w < threads; w += kWarp) {
            const unsigned end = std::min(threads, w + kWarp);
            if (ts[w].state != Thread::AtShuffle) continue;
            for (unsigned i = w; i < end; ++i)
              if (ts[i].state != Thread::AtShuffle || ts[i].pc != ts[w].pc)
                throw Error("PTX interpreter: the lanes of a warp do not all reach the same shfl.sync (divergence, "
                            "or a partial warp)");
            if (end - w != kWarp) throw Error("PTX interpreter: shfl.sync names 32 lanes, but the warp is partial");
            const Ins& in = code[ts[w].pc];
            auto value = [&](Thread& th, const Opnd& o) {
              return o.kind == Opnd::Reg ? th.regs[o.index] : o.kind == Opnd::Special ? th.special[o.index] : o.imm;
            };
            std::vector<uint64_t> source(kWarp);
            for (unsigned i = w; i < end; ++i) source[i - w] = value(ts[i], in.a[1]) & 0xffffffffu;
            for (unsigned i = w; i < end; ++i) {
              const uint32_t from = ((i - w) ^ uint32_t(value(ts[i], in.a[2]))) & 31u;
              ts[i].regs[in.a[0].index] = source[from];
              ts[i].pc++;
              ts[i].state = Thread::Running;
            }
            shuffled = true;
          }
          if (shuffled) continue;
          for (Thread& th : ts) {
            if (th.state == Thread::AtShuffle)
              throw Error("PTX interpreter: a warp waits at shfl.sync while others wait at a barrier");
            waiting |= th.state == Thread::AtBarrier;
          }
          if (!waiting) break;
          for (Thread& th : ts)
            if (th.state == Thread::AtBarrier) th.state = Thread::Running;  // pc is already past bar.sync
        }
      }
}

}  // namespace spire::ptx::interp
