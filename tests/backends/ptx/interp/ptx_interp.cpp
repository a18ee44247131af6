#include "tests/backends/ptx/interp/ptx_interp.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "base/half_bits.h"
#include "tests/runtime/cuda/mock_driver/mock_tensor_map.h"
#include "tests/backends/ptx/interp/ptx_interp_hopper.h"

namespace spire::ptx::interp {

using spire::f16_bits_to_f32;

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

int dtype_bytes(Ty t) {
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
  Rem, Min, Max, Fma, Sqrt, Neg, Abs, Not, And, Or, Xor, Shl, Shr, Setp, Selp, Cvt, Ex2, Bar, Shfl, WmmaLoad,
  WmmaMma, WmmaStore, CpAsync, CpAsyncCommit, CpAsyncWait, Bra, Ret,
  // Hopper (sm_90a): fences and register hints that change nothing here, generic addresses of kernel parameters,
  // mbarrier objects, tensor copies, and warpgroup MMA (wgmma.fence, mma_async, commit_group, wait_group).
  Nop, CvtaParam, MbarInit, MbarArrive, MbarTryWait, TensorCopy, WgFence, WgMma, WgCommit, WgWait
};

// The element type of a wmma fragment: bf16 and f16 fragments (a, b) pack two elements into each register, f32
// ones (c, d) hold one, and so do tf32 ones (a, b of shape m16n16k8: an f32's bits, of which mma reads the top 19).
// bf16 and tf32 are no types of the rest of the subset, so they are not in Ty.
enum class Frag : uint8_t { BF16, F16, F32, TF32 };

enum class Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Neu, Nan };
enum class Comb : uint8_t { None, And, Or };
// Rna: cvt.rna.tf32.f32, to nearest with ties away from zero, to TF32's 10 mantissa bits (the low 13 bits zero).
enum class Rnd : uint8_t { None, Rn, Rz, Rni, Rzi, Rmi, Rna };

// cp.async.wait_all's operand in Ins: commit the open group, then wait for every group.
constexpr uint64_t kWaitAll = ~uint64_t(0);

struct Opnd {
  enum Kind : uint8_t { Reg, Imm, Special, Symbol } kind = Imm;
  bool memory = false;  // [x]
  uint32_t index = 0;   // register, special register or symbol index
  uint64_t imm = 0;
  int64_t offset = 0;   // [x+offset] (a global address; the offset may be negative: [x+-8])
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
  std::vector<Opnd> a;  // wmma.load / wmma.store: the address ([...]) and the stride (elements)
  std::string text;
  // wmma: the element type (of the memory side for load / store, of a and b for mma), .col (load / store: the
  // matrix is column-major in memory), .global (else .shared), and the {...} register lists in operand order:
  // the fragment for load / store; d, a, b, c for mma.
  Frag frag = Frag::F32;
  bool col = false, global = false;
  bool k8 = false;  // shape m16n16k8 (tf32 operands; c and d as for m16n16k16), else m16n16k16
  bool b_matrix = false;  // wmma.load.b (a tf32 b is 8 x 16, a tf32 a 16 x 8)
  std::vector<std::vector<uint32_t>> frags;
};

// Special registers: tid, ntid, ctaid, nctaid (x, y, z each), and the lane in the warp.
constexpr uint32_t kSpecialCount = 13;
const char* const kSpecials[kSpecialCount] = {"%tid.x",   "%tid.y",   "%tid.z",    "%ntid.x",   "%ntid.y",
                                              "%ntid.z",  "%ctaid.x", "%ctaid.y", "%ctaid.z",  "%nctaid.x",
                                              "%nctaid.y", "%nctaid.z", "%laneid"};
constexpr uint32_t kWarp = 32;
constexpr uint32_t kWarpgroup = 4 * kWarp;

// Generic addresses of the kernel's parameters (cvta.param): the parameter space's byte offsets from here. No host
// pointer is non-canonical, so none falls in this window.
constexpr uint64_t kParamWindow = uint64_t(1) << 62;
constexpr uint64_t kParamWindowBytes = uint64_t(1) << 32;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits at `sep` outside braces and brackets (trimming each piece), so that a {...} vector operand and a
// [map, {coordinates}] tensor operand stay one piece.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    depth += c == '{' || c == '[' ? 1 : c == '}' || c == ']' ? -1 : 0;
    if (c == sep && depth == 0) {
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
  return spire::f32_to_f16_bits(f);
}

}  // namespace

struct Module::Impl {
  std::vector<Entry> entries;
  std::vector<Ins> code;  // one entry per module (what backends/ptx emits)
  std::vector<uint32_t> entry_pc;
  uint32_t registers = 0;
  std::vector<std::string> symbols;     // params (by entry) and shared arrays
  std::vector<int> symbol_param;        // param index, or -1 for a shared array
  // shared arrays: offset in the CTA's shared memory; params: offset in the entry's parameter space
  std::vector<uint32_t> symbol_offset;
  std::vector<std::vector<uint32_t>> param_offsets;  // by entry, then parameter
  uint32_t shared_bytes = 0;                // static arrays
  uint32_t dynamic_align = 1, dynamic_offset = 0;  // where the .extern .shared array starts
  std::vector<uint32_t> dynamic_symbols;

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
      if (const size_t plus = s.find('+'); plus != std::string::npos && s[0] == '%') {
        try {
          size_t used = 0;
          const std::string number = trim(s.substr(plus + 1));
          o.offset = std::stoll(number, &used, 0);
          if (used != number.size()) throw std::invalid_argument(number);
        } catch (const std::exception&) {
          fail(line, text, "an address offset [register+integer] expected");
        }
        s = trim(s.substr(0, plus));
      }
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

  // A {...} list of `count` registers: a wmma fragment or wgmma's accumulators.
  std::vector<uint32_t> register_list(const std::string& s, size_t count, const std::string& what, int line,
                                      const std::string& text) {
    if (s.size() < 2 || s.front() != '{' || s.back() != '}') fail(line, text, "register list {...} expected");
    std::vector<uint32_t> out;
    for (const auto& r : split(s.substr(1, s.size() - 2), ',')) {
      Opnd o = operand(r, line, text);
      if (o.kind != Opnd::Reg || o.memory) fail(line, text, "a " + what + " is a list of registers");
      out.push_back(o.index);
    }
    if (out.size() != count) fail(line, text, "a fragment of " + std::to_string(count) + " registers expected");
    return out;
  }

  // A value operand: a register or an immediate.
  Opnd value_operand(const std::string& s, int line, const std::string& text) {
    Opnd o = operand(s, line, text);
    if (o.memory || (o.kind != Opnd::Reg && o.kind != Opnd::Imm)) fail(line, text, "a register or an immediate expected");
    return o;
  }

  // A shared-memory address operand of the Hopper instructions: [register] or [shared array]; its value is the address.
  Opnd shared_operand(const std::string& s, int line, const std::string& text) {
    Opnd o = operand(s, line, text);
    const bool shared_symbol = o.kind == Opnd::Symbol && symbol_param[o.index] < 0;
    if (!o.memory || (o.kind != Opnd::Reg && !shared_symbol))
      fail(line, text, "a shared address [register] or [shared array] expected");
    return o;
  }

  // mbarrier objects, in the forms backends/ptx writes (PTX ISA 8.0; the arrival state result discarded):
  //   mbarrier.init.shared::cta.b64 [bar], count;
  //   mbarrier.arrive.shared::cta.b64 _, [bar];
  //   mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;
  //   mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity;
  void parse_mbarrier(Ins& ins, const std::string& opcode, const std::string& rest, int line) {
    const std::string& text = ins.text;
    const std::vector<std::string> ops = split(rest, ',');
    if (opcode == "mbarrier.init.shared::cta.b64") {
      if (ops.size() != 2) fail(line, text, "mbarrier.init takes [bar], count");
      ins.op = Op::MbarInit;
      ins.a = {shared_operand(ops[0], line, text), value_operand(ops[1], line, text)};
    } else if (opcode == "mbarrier.arrive.shared::cta.b64" || opcode == "mbarrier.arrive.expect_tx.shared::cta.b64") {
      const bool tx = opcode == "mbarrier.arrive.expect_tx.shared::cta.b64";
      if (ops.size() != (tx ? 3u : 2u) || ops[0] != "_")
        fail(line, text, tx ? "mbarrier.arrive.expect_tx takes _, [bar], bytes" : "mbarrier.arrive takes _, [bar]");
      ins.op = Op::MbarArrive;
      ins.a = {shared_operand(ops[1], line, text)};
      if (tx) ins.a.push_back(value_operand(ops[2], line, text));
    } else if (opcode == "mbarrier.try_wait.parity.shared::cta.b64") {
      if (ops.size() != 3) fail(line, text, "mbarrier.try_wait.parity takes p, [bar], parity");
      Opnd p = operand(ops[0], line, text);
      if (p.kind != Opnd::Reg || p.memory) fail(line, text, "try_wait's result is a predicate register");
      ins.op = Op::MbarTryWait;
      ins.a = {p, shared_operand(ops[1], line, text), value_operand(ops[2], line, text)};
    } else {
      fail(line, text, "only mbarrier.init, arrive, arrive.expect_tx and try_wait.parity of .shared::cta .b64 objects");
    }
  }

  //   cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {c0, ...}], [bar];
  // dst and bar: shared addresses; map: a register holding the tensor map's generic address; N coordinates.
  void parse_tensor_copy(Ins& ins, const std::vector<std::string>& parts, const std::string& rest, int line) {
    const std::string& text = ins.text;
    const std::string rank = parts.size() > 4 ? parts[4] : "";
    if (parts.size() != 8 || parts[5] != "shared::cluster" || parts[6] != "global" ||
        parts[7] != "mbarrier::complete_tx::bytes" || rank.size() != 2 || rank[1] != 'd' || rank[0] < '1' || rank[0] > '5')
      fail(line, text, "only cp.async.bulk.tensor.{1..5}d.shared::cluster.global.mbarrier::complete_tx::bytes");
    const std::vector<std::string> ops = split(rest, ',');
    if (ops.size() != 3) fail(line, text, "a tensor copy takes [dst], [map, {coordinates}], [bar]");
    const std::string& source = ops[1];
    if (source.size() < 2 || source.front() != '[' || source.back() != ']')
      fail(line, text, "[map, {coordinates}] expected");
    const std::vector<std::string> inner = split(source.substr(1, source.size() - 2), ',');
    if (inner.size() != 2 || inner[1].size() < 2 || inner[1].front() != '{' || inner[1].back() != '}')
      fail(line, text, "[map, {coordinates}] expected");
    Opnd map = operand(inner[0], line, text);
    if (map.kind != Opnd::Reg || map.memory) fail(line, text, "the tensor map is a register holding its generic address");
    ins.op = Op::TensorCopy;
    ins.a = {shared_operand(ops[0], line, text), map, shared_operand(ops[2], line, text)};
    for (const auto& c : split(inner[1].substr(1, inner[1].size() - 2), ',')) ins.a.push_back(value_operand(c, line, text));
    if (ins.a.size() != 3 + size_t(rank[0] - '0'))
      fail(line, text, "a " + rank + " tensor copy takes " + rank.substr(0, 1) + " coordinates");
  }

  // Warpgroup MMA, in the forms backends/ptx writes (PTX ISA 8.0, sm_90a):
  //   wgmma.fence.sync.aligned;  wgmma.commit_group.sync.aligned;  wgmma.wait_group.sync.aligned N;
  //   wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d}, desc-a, desc-b, scale-d, 1, 1, trans-a, trans-b;
  // T bf16 or f16, N a multiple of 8 up to 256, N / 2 f32 accumulator registers, both operands in shared memory.
  void parse_wgmma(Ins& ins, const std::vector<std::string>& parts, const std::string& opcode, const std::string& rest,
                   int line) {
    const std::string& text = ins.text;
    // A guard could leave threads of the warpgroup out, and wgmma needs all 128; the backend writes none.
    if (ins.guard >= 0) fail(line, text, "guarded wgmma is not in the subset");
    if (opcode == "wgmma.fence.sync.aligned" || opcode == "wgmma.commit_group.sync.aligned") {
      if (!rest.empty()) fail(line, text, "takes no operands");
      ins.op = opcode == "wgmma.fence.sync.aligned" ? Op::WgFence : Op::WgCommit;
      return;
    }
    if (opcode == "wgmma.wait_group.sync.aligned") {
      Opnd n = operand(rest, line, text);
      if (n.kind != Opnd::Imm || n.memory) fail(line, text, "wgmma.wait_group needs a count");
      ins.op = Op::WgWait;
      ins.a = {n};
      return;
    }
    const std::string shape = parts.size() > 4 ? parts[4] : "";
    uint32_t n = 0;
    if (shape.size() > 7 && shape.rfind("m64n", 0) == 0 && shape.substr(shape.size() - 3) == "k16" &&
        shape.find_first_not_of("0123456789", 4) == shape.size() - 3)
      n = uint32_t(std::stoul(shape.substr(4, shape.size() - 7)));
    if (parts.size() != 8 || parts[1] != "mma_async" || parts[2] != "sync" || parts[3] != "aligned" || n == 0 ||
        n % 8 != 0 || n > 256 || parts[5] != "f32" || parts[6] != parts[7] || (parts[6] != "bf16" && parts[6] != "f16"))
      fail(line, text, "only wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T (N = 8 .. 256 by 8, T bf16 or f16), and "
                       "wgmma.fence, commit_group, wait_group");
    const std::vector<std::string> ops = split(rest, ',');
    if (ops.size() != 8) fail(line, text, "wgmma.mma_async takes {d}, desc-a, desc-b, scale-d, 1, 1, trans-a, trans-b");
    if (!ops[1].empty() && ops[1].front() == '{')
      fail(line, text, "wgmma with A in registers is not in the subset (A and B are descriptors)");
    ins.op = Op::WgMma;
    ins.frag = parts[6] == "bf16" ? Frag::BF16 : Frag::F16;
    ins.frags.push_back(register_list(ops[0], n / 2, "wgmma accumulator", line, text));
    ins.a = {value_operand(ops[1], line, text), value_operand(ops[2], line, text), value_operand(ops[3], line, text)};
    for (size_t i = 4; i < 8; ++i) {
      Opnd o = operand(ops[i], line, text);
      if (o.kind != Opnd::Imm || o.memory || (i < 6 ? o.imm != 1 : o.imm > 1))
        fail(line, text, i < 6 ? "only scale-a and scale-b 1" : "trans-a and trans-b are 0 or 1");
      if (i >= 6) ins.a.push_back(o);
    }
  }

  // wmma.load, wmma.mma and wmma.store of shape m16n16k16, in the forms backends/ptx writes:
  //   wmma.load.{a,b}.sync.aligned.{row,col}.m16n16k16.{shared,global}.{bf16,f16} {frag}, [addr], stride;
  //   wmma.load.c.sync.aligned.{row,col}.m16n16k16.{shared,global}.f32 {frag}, [addr], stride;
  //   wmma.store.d.sync.aligned.{row,col}.m16n16k16.{shared,global}.f32 [addr], {frag}, stride;
  //   wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16k16.f32.bf16.bf16.f32 {d}, {a}, {b}, {c};
  //   wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16k16.f32.f32 {d}, {a}, {b}, {c};  (f16 a and b)
  // and of shape m16n16k8 with tf32 operands (a 16 x 8, b 8 x 16; c and d 16 x 16 f32 as above):
  //   wmma.load.{a,b}.sync.aligned.{row,col}.m16n16k8.{shared,global}.tf32 {frag}, [addr], stride;
  //   wmma.{load.c,store.d}.sync.aligned.{row,col}.m16n16k8.{shared,global}.f32 ...;
  //   wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16k8.f32.tf32.tf32.f32 {d}, {a}, {b}, {c};
  // A fragment is 4 registers for bf16 and tf32 a / b, 8 for f16 a / b and for f32 c / d. The mma's layouts must be those
  // the fragments were loaded with; the fragments do not record them, so the interpreter cannot check that and takes
  // any. The launch checks what depends on values (one address and stride for the warp, alignment, bounds).
  void parse_wmma(Ins& ins, const std::vector<std::string>& parts, const std::string& rest, int line) {
    const std::string& text = ins.text;
    // A guard could leave some lanes out, and wmma needs the whole warp; the backend writes none.
    if (ins.guard >= 0) fail(line, text, "guarded wmma is not in the subset");
    const std::vector<std::string> ops = split(rest, ',');
    auto regs = [&](const std::string& s, size_t count) { return register_list(s, count, "wmma fragment", line, text); };
    auto frag_regs = [](Frag f) { return f == Frag::BF16 || f == Frag::TF32 ? size_t(4) : size_t(8); };
    auto shape = [](const std::string& p) { return p == "m16n16k16" || p == "m16n16k8"; };
    auto layout = [](const std::string& p) { return p == "row" || p == "col"; };
    const std::string kind = parts.size() > 1 ? parts[1] : "";
    if (kind == "load" || kind == "store") {
      const bool load = kind == "load";
      if (parts.size() != 9 || parts[3] != "sync" || parts[4] != "aligned" || !layout(parts[5]) || !shape(parts[6]) ||
          (parts[7] != "shared" && parts[7] != "global"))
        fail(line, text, "only wmma." + kind + ".M.sync.aligned.{row,col}.{m16n16k16,m16n16k8}.{shared,global}.TYPE");
      const std::string &matrix = parts[2], &type = parts[8];
      ins.k8 = parts[6] == "m16n16k8";
      const bool ab = matrix == "a" || matrix == "b";
      const bool ok = load ? (ab && (ins.k8 ? type == "tf32" : type == "bf16" || type == "f16")) ||
                                 (matrix == "c" && type == "f32")
                           : matrix == "d" && type == "f32";
      if (!ok) fail(line, text, "unsupported wmma matrix or type (a, b: bf16 or f16, m16n16k8: tf32; c, d: f32)");
      ins.op = load ? Op::WmmaLoad : Op::WmmaStore;
      ins.frag = type == "bf16" ? Frag::BF16 : type == "f16" ? Frag::F16 : type == "tf32" ? Frag::TF32 : Frag::F32;
      ins.col = parts[5] == "col";
      ins.b_matrix = matrix == "b";
      ins.global = parts[7] == "global";
      if (ops.size() != 3) fail(line, text, "wmma." + kind + " takes a fragment, an address and a stride");
      ins.frags.push_back(regs(load ? ops[0] : ops[1], frag_regs(ins.frag)));
      Opnd addr = operand(load ? ops[1] : ops[0], line, text);
      if (!addr.memory || (addr.kind != Opnd::Reg && addr.kind != Opnd::Symbol))
        fail(line, text, "a wmma address is [register] or [shared array]");
      if (addr.kind == Opnd::Symbol && (ins.global || symbol_param[addr.index] >= 0))
        fail(line, text, "a wmma address names a register or a shared array");
      Opnd stride = operand(ops[2], line, text);
      if (stride.memory || (stride.kind != Opnd::Reg && stride.kind != Opnd::Imm))
        fail(line, text, "a wmma stride is a register or an immediate");
      ins.a = {addr, stride};
      return;
    }
    if (kind == "mma") {
      if (parts.size() < 7 || parts[2] != "sync" || parts[3] != "aligned" || !layout(parts[4]) || !layout(parts[5]) ||
          !shape(parts[6]))
        fail(line, text, "only wmma.mma.sync.aligned.{row,col}.{row,col}.{m16n16k16,m16n16k8}");
      ins.k8 = parts[6] == "m16n16k8";
      const std::vector<std::string> types(parts.begin() + 7, parts.end());
      if (ins.k8) {
        if (types != std::vector<std::string>{"f32", "tf32", "tf32", "f32"})
          fail(line, text, "only wmma.mma of shape m16n16k8 with f32.tf32.tf32.f32");
        ins.frag = Frag::TF32;
      } else if (types == std::vector<std::string>{"f32", "bf16", "bf16", "f32"}) {
        ins.frag = Frag::BF16;
      } else if (types == std::vector<std::string>{"f32", "f32"}) {
        ins.frag = Frag::F16;
      } else {
        fail(line, text, "only wmma.mma of f32.bf16.bf16.f32 or (f16 operands) f32.f32");
      }
      ins.op = Op::WmmaMma;
      if (ops.size() != 4) fail(line, text, "wmma.mma takes the fragments d, a, b, c");
      for (size_t i = 0; i < 4; ++i) ins.frags.push_back(regs(ops[i], i == 1 || i == 2 ? frag_regs(ins.frag) : 8));
      return;
    }
    fail(line, text, "only wmma.load, wmma.mma and wmma.store are in the subset");
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
        if (t.rfind(".extern .shared ", 0) == 0) {
          // .extern .shared .align A .b8 NAME[]; the launch sizes it, after the static arrays.
          auto parts = split(t.substr(0, t.size() - (t.back() == ';' ? 1 : 0)), ' ');
          if (parts.size() != 6 || parts[2] != ".align" || parts[4] != ".b8" || parts[5].find("[]") == std::string::npos)
            fail(line, t, "unsupported .extern .shared form");
          dynamic_align = std::max(dynamic_align, uint32_t(std::stoul(parts[3])));
          const std::string name = parts[5].substr(0, parts[5].find('['));
          symbol_index[name] = uint32_t(symbols.size());
          symbols.push_back(name);
          symbol_param.push_back(-1);
          symbol_offset.push_back(0);  // set once the static arrays are known
          dynamic_symbols.push_back(uint32_t(symbols.size() - 1));
          continue;
        }
        if (t.rfind(".visible .entry ", 0) == 0) {
          entries.push_back({});
          param_offsets.emplace_back();
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
          // .param .TYPE NAME[,], or .param .align A .b8 NAME[BYTES][,] (a tensor map passed by value)
          std::string p = t;
          if (!p.empty() && p.back() == ',') p.pop_back();
          auto parts = split(p, ' ');
          std::string name;
          uint32_t bytes = 0, align = 0;
          if (parts.size() == 3 && parts[0] == ".param") {
            Ty ty = parse_type(parts[1].substr(1));
            if (ty == Ty::None) fail(line, t, "unknown parameter type");
            name = parts[2];
            bytes = align = uint32_t(dtype_bytes(ty));
          } else if (parts.size() == 5 && parts[0] == ".param" && parts[1] == ".align" && parts[3] == ".b8") {
            const size_t lb = parts[4].find('['), rb = parts[4].find(']');
            if (lb == std::string::npos || rb != parts[4].size() - 1 || rb == lb + 1) fail(line, t, "NAME[BYTES] expected");
            name = parts[4].substr(0, lb);
            bytes = uint32_t(std::stoul(parts[4].substr(lb + 1, rb - lb - 1)));
            align = uint32_t(std::stoul(parts[2]));
            if (align == 0 || (align & (align - 1)) != 0) fail(line, t, "parameter alignment must be a power of two");
          } else {
            fail(line, t, "parameter expected");
          }
          // The parameter space lays the parameters out in order, each at its alignment.
          std::vector<uint32_t>& offsets = param_offsets.back();
          const uint32_t end = entry->params.empty() ? 0 : offsets.back() + uint32_t(entry->params.back().bytes);
          offsets.push_back((end + align - 1) / align * align);
          entry->params.push_back({name, int(bytes)});
          symbol_index[name] = uint32_t(symbols.size());
          symbols.push_back(name);
          symbol_param.push_back(int(entry->params.size() - 1));
          symbol_offset.push_back(offsets.back());
          continue;
        }
        if (t.rfind(".reqntid", 0) == 0) {
          auto dims = split(t.substr(8), ',');
          if (!entry || dims.size() != 3) fail(line, t, "bad .reqntid");
          for (int d = 0; d < 3; ++d) entry->reqntid[d] = unsigned(std::stoul(dims[d]));
          continue;
        }
        // An occupancy hint for ptxas's register allocation: nothing to emulate, but it must be a positive count.
        if (t.rfind(".minnctapersm", 0) == 0) {
          const std::string n = trim(t.substr(13));
          if (!entry || n.empty() || n.find_first_not_of("0123456789") != std::string::npos || std::stoul(n) == 0)
            fail(line, t, "bad .minnctapersm");
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
      if (name == "wmma") {
        parse_wmma(ins, parts, rest, line);
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "wgmma") {
        parse_wgmma(ins, parts, opcode, trim(rest), line);
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "mbarrier") {
        parse_mbarrier(ins, opcode, rest, line);
        code.push_back(std::move(ins));
        continue;
      }
      if (opcode == "griddepcontrol.launch_dependents" || opcode == "griddepcontrol.wait") {
        // Launches run one after another here: the next kernel starts after this one ends whatever it says.
        if (!trim(rest).empty()) fail(line, ins.text, "takes no operands");
        ins.op = Op::Nop;
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "fence" || name == "setmaxnreg") {
        // The interpreter runs every access in program order on one memory, so the proxy and barrier-init fences order
        // nothing more; setmaxnreg only moves the register budget between warpgroups.
        if (opcode == "fence.mbarrier_init.release.cluster" || opcode == "fence.proxy.async.shared::cta") {
          if (!trim(rest).empty()) fail(line, ins.text, "takes no operands");
        } else if (opcode == "setmaxnreg.inc.sync.aligned.u32" || opcode == "setmaxnreg.dec.sync.aligned.u32") {
          Opnd n = operand(trim(rest), line, ins.text);
          if (n.kind != Opnd::Imm || n.imm < 24 || n.imm > 256 || n.imm % 8 != 0)
            fail(line, ins.text, "setmaxnreg needs a count of 24 .. 256, a multiple of 8");
        } else {
          fail(line, ins.text, "only fence.mbarrier_init.release.cluster, fence.proxy.async.shared::cta and setmaxnreg");
        }
        ins.op = Op::Nop;
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "cp" && parts.size() > 3 && parts[1] == "async" && parts[2] == "bulk" && parts[3] == "tensor") {
        parse_tensor_copy(ins, parts, rest, line);
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "cp") {
        // cp.async.cg.shared.global [dst], [src], 16, src_bytes: the only copy the backend writes; and
        // cp.async.commit_group, cp.async.wait_group N, cp.async.wait_all (a commit, then wait_group 0).
        if (opcode == "cp.async.wait_all" || opcode == "cp.async.commit_group") {
          ins.op = opcode == "cp.async.commit_group" ? Op::CpAsyncCommit : Op::CpAsyncWait;
          ins.a.push_back(Opnd{});
          ins.a[0].kind = Opnd::Imm;
          ins.a[0].imm = opcode == "cp.async.wait_all" ? kWaitAll : 0;
          code.push_back(std::move(ins));
          continue;
        }
        if (opcode == "cp.async.wait_group") {
          ins.a.push_back(operand(rest, line, ins.text));
          if (ins.a[0].kind != Opnd::Imm || ins.a[0].imm >= kWaitAll) fail(line, ins.text, "cp.async.wait_group needs a count");
          ins.op = Op::CpAsyncWait;
          code.push_back(std::move(ins));
          continue;
        }
        if (opcode != "cp.async.cg.shared.global")
          fail(line, ins.text, "only cp.async.cg.shared.global, commit_group, wait_group and wait_all");
        for (const auto& o : split(rest, ',')) ins.a.push_back(operand(o, line, ins.text));
        if (ins.a.size() != 4 || !ins.a[0].memory || !ins.a[1].memory || ins.a[2].kind != Opnd::Imm || ins.a[2].imm != 16)
          fail(line, ins.text, "cp.async needs [shared], [global], 16, source bytes");
        ins.op = Op::CpAsync;
        code.push_back(std::move(ins));
        continue;
      }
      if (name == "ld" && (has("v2") || has("v4"))) {
        // ld.{shared,global}.v2/.v4.<32-bit type> {regs}, [addr]: the registers in frags[0], a[0] unused.
        auto ops = split(rest, ',');
        if (ops.size() != 2) fail(line, ins.text, "a vector load needs {registers}, [address]");
        ins.frags.push_back(register_list(ops[0], has("v4") ? 4 : 2, "vector load's destination", line, ins.text));
        ins.a = {Opnd{}, operand(ops[1], line, ins.text)};
        if (!ins.a[1].memory) fail(line, ins.text, "a vector load reads [address]");
      } else if (name == "st" && (has("v2") || has("v4"))) {
        // st.{shared,global}.v2/.v4.<32-bit type> [addr], {regs}: the registers in frags[0], a[1] unused.
        auto ops = split(rest, ',');
        if (ops.size() != 2) fail(line, ins.text, "a vector store needs [address], {registers}");
        ins.frags.push_back(register_list(ops[1], has("v4") ? 4 : 2, "vector store's source", line, ins.text));
        ins.a = {operand(ops[0], line, ins.text), Opnd{}};
        if (!ins.a[0].memory) fail(line, ins.text, "a vector store writes [address]");
      } else {
        for (const auto& o : split(rest, ',')) ins.a.push_back(operand(o, line, ins.text));
      }
      ins.t = type_at(parts.size() - 1);
      if (!ins.frags.empty() && dtype_bytes(ins.t) != 4 && !(name == "ld" && dtype_bytes(ins.t) == 2))
        fail(line, ins.text, "vector accesses of 32-bit types only (and loads of 16-bit ones)");
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
        ins.op = parts[1] == "param" ? Op::CvtaParam : Op::Cvta;
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
      } else if (name == "cvt" && parts.size() == 4 && parts[1] == "rna" && parts[2] == "tf32") {
        // cvt.rna.tf32.f32 d, a: the f32 a rounded to TF32, as a .b32 (its low 13 bits zero).
        if (parts[3] != "f32") fail(line, ins.text, "only cvt.rna.tf32.f32");
        ins.op = Op::Cvt;
        ins.t = Ty::B32;
        ins.src = Ty::F32;
        ins.rnd = Rnd::Rna;
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
    dynamic_offset = (shared_bytes + dynamic_align - 1) / dynamic_align * dynamic_align;
    for (uint32_t s : dynamic_symbols) symbol_offset[s] = dynamic_offset;
  }
};

namespace {

struct Thread {
  std::vector<uint64_t> regs;
  uint32_t pc = 0;
  // AtWarpOp: stopped at a warp-collective instruction (shfl.sync, wmma) until every lane of its warp is there too
  // (pc still on it); the launch then runs it for the whole warp. AtWarpgroupOp: likewise for the 128 threads of a
  // warpgroup (wgmma). Polling: an mbarrier.try_wait returned false (pc past it), so the thread lets the others run
  // before it polls again; the launch resumes it once the phase it polled completes, or when nothing else can run.
  enum State : uint8_t { Running, AtBarrier, AtWarpOp, AtWarpgroupOp, Polling, Exited } state = Running;
  uint32_t poll_barrier = 0, poll_parity = 0;  // Polling: the mbarrier and the phase parity it waits for
  uint32_t special[kSpecialCount];
  // cp.async copies issued and not yet waited for: they land at the thread's cp.async.wait_group that covers their
  // group (any time before it is allowed, so landing last is the schedule that exposes a missing wait), the source
  // read then too. `group`: how many groups the thread had committed when it issued the copy.
  struct PendingCopy { uint32_t shared_offset; uint64_t source; uint32_t bytes; size_t pc; uint32_t group; };
  std::vector<PendingCopy> pending;
  uint32_t committed = 0;
};

// A wgmma.mma_async issued and not yet completed: it runs (reading shared memory and the accumulators then) when a
// wgmma.wait_group covers its batch, as late as PTX allows, so that a missing wait shows. The descriptors and scale-d
// are the values at issue.
struct QueuedMultiply {
  const Ins* ins;
  uint64_t desc_a, desc_b;
  bool accumulate;
};

// A warpgroup's wgmma batches: the open one (not yet committed) and the committed ones, oldest first.
struct Warpgroup {
  std::vector<QueuedMultiply> open;
  std::deque<std::vector<QueuedMultiply>> committed;
  bool idle() const { return open.empty() && committed.empty(); }
};

// Runs a queued wgmma for the 128 threads `group` of its warpgroup: D = A B (+ D with scale-d), A 64 x 16 and B 16 x N
// read from shared memory through their descriptors, D in the threads' accumulator registers in PTX's layout. Products
// of 16-bit floats are exact in f32; each element sums them in k order in f32, starting from D or 0.
void complete_multiply(const QueuedMultiply& q, Thread* group, const std::vector<uint8_t>& shared) {
  const Ins& in = *q.ins;
  const std::vector<uint32_t>& acc = in.frags[0];
  const uint32_t n = uint32_t(acc.size()) * 2;
  const bool bf16 = in.frag == Frag::BF16;
  const std::vector<float> a = hopper::read_operand(shared, q.desc_a, 64, in.a[3].imm != 0, bf16, in.text);
  const std::vector<float> b = hopper::read_operand(shared, q.desc_b, n, in.a[4].imm != 0, bf16, in.text);
  std::vector<float> d(size_t(64) * n, 0.0f);
  if (q.accumulate)
    for (uint32_t t = 0; t < kWarpgroup; ++t)
      for (uint32_t i = 0; i < acc.size(); ++i) {
        auto [row, col] = hopper::accumulator_element(t, i);
        d[size_t(row) * n + col] = f32_of(group[t].regs[acc[i]]);
      }
  for (uint32_t row = 0; row < 64; ++row)
    for (uint32_t col = 0; col < n; ++col) {
      float sum = d[size_t(row) * n + col];
      for (uint32_t k = 0; k < 16; ++k) sum = std::fma(a[size_t(row) * 16 + k], b[size_t(col) * 16 + k], sum);
      d[size_t(row) * n + col] = sum;
    }
  for (uint32_t t = 0; t < kWarpgroup; ++t)
    for (uint32_t i = 0; i < acc.size(); ++i) {
      auto [row, col] = hopper::accumulator_element(t, i);
      group[t].regs[acc[i]] = bits_of(d[size_t(row) * n + col]);
    }
}

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
  bool wide = dtype_bytes(t) == 8;
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

// An f32's bits rounded to TF32 (10 mantissa bits) to nearest, ties away from zero (cvt.rna.tf32.f32): adding half of
// the last kept bit to the magnitude carries into it at a tie or above. NaN and infinity stay as they are.
uint32_t round_to_tf32(uint32_t bits) {
  if ((bits & 0x7F800000u) == 0x7F800000u) return bits;
  return (bits + 0x1000u) & 0xFFFFE000u;
}

uint64_t convert(const Ins& in, uint64_t s) {
  if (in.rnd == Rnd::Rna) return round_to_tf32(uint32_t(s));
  Ty d = in.t, st = in.src;
  if (!is_float(st) && !is_float(d)) {
    if (dtype_bytes(st) == 2) s &= 0xFFFF;  // u16 / b16 sources (no s16 in the subset)
    int64_t v = is_signed(st) ? (dtype_bytes(st) == 8 ? int64_t(s) : int64_t(int32_t(uint32_t(s))))
                              : int64_t(dtype_bytes(st) == 8 ? s : uint64_t(uint32_t(s)));
    const int bytes = dtype_bytes(d);
    return bytes == 8 ? uint64_t(v) : bytes == 2 ? uint64_t(v) & 0xFFFF : uint64_t(uint32_t(v));
  }
  if (!is_float(st)) {  // int -> float, round to nearest
    if (d == Ty::F32) {
      if (is_signed(st)) return bits_of(dtype_bytes(st) == 8 ? float(int64_t(s)) : float(int32_t(uint32_t(s))));
      return bits_of(dtype_bytes(st) == 8 ? float(s) : float(uint32_t(s)));
    }
    if (d == Ty::F64) {
      if (is_signed(st)) return bits_of(dtype_bytes(st) == 8 ? double(int64_t(s)) : double(int32_t(uint32_t(s))));
      return bits_of(dtype_bytes(st) == 8 ? double(s) : double(uint32_t(s)));
    }
    // f16: every 32-bit integer is exact in double; 64-bit ones beyond 2^53 overflow f16 anyway.
    double v = is_signed(st) ? (dtype_bytes(st) == 8 ? double(int64_t(s)) : double(int32_t(uint32_t(s))))
                             : (dtype_bytes(st) == 8 ? double(s) : double(uint32_t(s)));
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

// A source operand's value for thread `th` (a symbol's value is its shared array's offset).
uint64_t operand_value(const Thread& th, const Opnd& o, const std::vector<uint32_t>& symbol_offset) {
  switch (o.kind) {
    case Opnd::Reg: return th.regs[o.index];
    case Opnd::Imm: return o.imm;
    case Opnd::Special: return th.special[o.index];
    case Opnd::Symbol: return symbol_offset[o.index];
  }
  return 0;
}

// Runs a wmma instruction for the 32 lanes of a warp. The fragments' layout across lanes is opaque in PTX (a program
// can only load, mma and store them), so the interpreter picks its own: element (r, c) of a 16 x 16 matrix has the
// index e = 16 r + c, and lane l holds the elements 8 l .. 8 l + 7. An f32 fragment's register j holds element
// 8 l + j; a bf16 or f16 fragment's register j (0..3) holds element 8 l + 2 j in its low half and 8 l + 2 j + 1 in
// its high half, and an f16 fragment's registers 4..7 repeat 0..3 (the hardware's f16 fragments have 8 registers;
// mma reads the first 4). A tf32 operand of shape m16n16k8 (a: 16 x 8, element (r, c) at e = 8 r + c; b: 8 x 16, at
// e = 16 r + c) has lane l hold the elements 4 l .. 4 l + 3 in its registers 0..3, each an f32's bits; mma reads only
// their top 19 bits (TF32), as the tensor cores do, so an operand not rounded first (cvt.rna) is truncated.
void warp_wmma(const Ins& in, Thread* lanes, std::vector<uint8_t>& shared, const std::vector<uint32_t>& symbol_offset,
               const GlobalCheck& check) {
  constexpr unsigned kElems = 256;
  if (in.op == Op::WmmaMma && in.k8) {
    auto tf32 = [](uint64_t bits) { return f32_of(uint32_t(bits) & 0xFFFFE000u); };
    std::array<float, 128> a, b;
    std::array<float, kElems> c, d;
    for (unsigned l = 0; l < kWarp; ++l) {
      const std::vector<uint64_t>& regs = lanes[l].regs;
      for (unsigned j = 0; j < 4; ++j) {
        a[4 * l + j] = tf32(regs[in.frags[1][j]]);
        b[4 * l + j] = tf32(regs[in.frags[2][j]]);
      }
      for (unsigned j = 0; j < 8; ++j) c[8 * l + j] = f32_of(regs[in.frags[3][j]]);
    }
    // D = C + A B, each element a chain of f32 fmas in k order starting from C (products of TF32 values are exact).
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned j = 0; j < 16; ++j) {
        float acc = c[16 * i + j];
        for (unsigned k = 0; k < 8; ++k) acc = std::fma(a[8 * i + k], b[16 * k + j], acc);
        d[16 * i + j] = acc;
      }
    for (unsigned l = 0; l < kWarp; ++l)
      for (unsigned j = 0; j < 8; ++j) lanes[l].regs[in.frags[0][j]] = bits_of(d[8 * l + j]);
    return;
  }
  if (in.op == Op::WmmaMma) {
    // Every input is read before d is written: d may name c's registers (accumulating in place).
    auto widen = [&](uint32_t h) {
      return in.frag == Frag::BF16 ? spire::bf16_bits_to_f32(uint16_t(h)) : f16_bits_to_f32(uint16_t(h));
    };
    std::array<float, kElems> a, b, c, d;
    for (unsigned l = 0; l < kWarp; ++l) {
      const std::vector<uint64_t>& regs = lanes[l].regs;
      for (unsigned j = 0; j < 8; ++j) {
        const unsigned e = 8 * l + j, half = 16 * (j % 2);
        a[e] = widen(uint32_t(regs[in.frags[1][j / 2]]) >> half & 0xFFFFu);
        b[e] = widen(uint32_t(regs[in.frags[2][j / 2]]) >> half & 0xFFFFu);
        c[e] = f32_of(regs[in.frags[3][j]]);
      }
    }
    // D = C + A B, each element a chain of f32 fmas in k order starting from C.
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned j = 0; j < 16; ++j) {
        float acc = c[16 * i + j];
        for (unsigned k = 0; k < 16; ++k) acc = std::fma(a[16 * i + k], b[16 * k + j], acc);
        d[16 * i + j] = acc;
      }
    for (unsigned l = 0; l < kWarp; ++l)
      for (unsigned j = 0; j < 8; ++j) lanes[l].regs[in.frags[0][j]] = bits_of(d[8 * l + j]);
    return;
  }
  auto value = [&](const Thread& th, const Opnd& o) { return operand_value(th, o, symbol_offset); };
  // The PTX ISA has every lane pass the same address and stride.
  const uint64_t base = in.global ? value(lanes[0], in.a[0]) : uint32_t(value(lanes[0], in.a[0]));
  const uint64_t stride = uint32_t(value(lanes[0], in.a[1]));
  for (unsigned l = 1; l < kWarp; ++l)
    if ((in.global ? value(lanes[l], in.a[0]) : uint32_t(value(lanes[l], in.a[0]))) != base ||
        uint32_t(value(lanes[l], in.a[1])) != stride)
      throw Error("PTX interpreter: lanes of a warp pass different addresses or strides to wmma at: " + in.text);
  // ... and asks for a 32-byte aligned address (shared: from the window's base) and a stride of whole 16 bytes.
  const unsigned bytes = in.frag == Frag::F32 || in.frag == Frag::TF32 ? 4 : 2;
  if (base % 32 != 0)
    throw Error("PTX interpreter: wmma address " + std::to_string(base) + " is not 32-byte aligned at: " + in.text);
  if (stride * bytes % 16 != 0)
    throw Error("PTX interpreter: wmma stride " + std::to_string(stride) +
                " (elements) is not a multiple of 16 bytes at: " + in.text);
  // Every element's place, checked before any is read or written. A tf32 operand has 128 (a: 16 x 8, b: 8 x 16).
  const bool tf32 = in.frag == Frag::TF32;
  const unsigned elems = tf32 ? 128 : kElems, columns = tf32 && !in.b_matrix ? 8 : 16;
  std::array<uint8_t*, kElems> at;
  for (unsigned e = 0; e < elems; ++e) {
    const uint64_t r = e / columns, c = e % columns;
    const uint64_t addr = base + (in.col ? c * stride + r : r * stride + c) * bytes;
    if (in.global) {
      try {
        check(addr, bytes);
      } catch (const std::exception& x) {
        throw Error(std::string("PTX interpreter: ") + x.what() + " at: " + in.text);
      }
      at[e] = reinterpret_cast<uint8_t*>(addr);
    } else {
      if (addr + bytes > shared.size())
        throw Error("PTX interpreter: shared memory access at " + std::to_string(addr) + " past " +
                    std::to_string(shared.size()) + " bytes at: " + in.text);
      at[e] = shared.data() + addr;
    }
  }
  const std::vector<uint32_t>& frag = in.frags[0];
  if (in.op == Op::WmmaStore) {
    for (unsigned l = 0; l < kWarp; ++l)
      for (unsigned j = 0; j < 8; ++j) {
        const uint32_t v = uint32_t(lanes[l].regs[frag[j]]);
        std::memcpy(at[8 * l + j], &v, 4);
      }
    return;
  }
  if (tf32) {
    for (unsigned l = 0; l < kWarp; ++l)
      for (unsigned j = 0; j < 4; ++j) {
        uint32_t v = 0;
        std::memcpy(&v, at[4 * l + j], 4);
        lanes[l].regs[frag[j]] = v;
      }
    return;
  }
  for (unsigned l = 0; l < kWarp; ++l) {
    std::vector<uint64_t>& regs = lanes[l].regs;
    for (unsigned j = 0; j < 8; ++j) {
      uint32_t v = 0;
      if (in.frag == Frag::F32) {
        std::memcpy(&v, at[8 * l + j], 4);
      } else {
        if (j >= 4) {
          if (in.frag == Frag::F16) regs[frag[j]] = regs[frag[j - 4]];
          continue;
        }
        uint16_t lo, hi;
        std::memcpy(&lo, at[8 * l + 2 * j], 2);
        std::memcpy(&hi, at[8 * l + 2 * j + 1], 2);
        v = uint32_t(lo) | uint32_t(hi) << 16;
      }
      regs[frag[j]] = v;
    }
  }
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
                    const GlobalCheck& check, uint32_t dynamic_shared_bytes, uint64_t max_instructions) const {
  const Impl& m = *impl_;
  const std::vector<Ins>& code = m.code;
  uint64_t budget = max_instructions;
  std::vector<uint8_t> shared(m.dynamic_offset + dynamic_shared_bytes);
  unsigned threads = block[0] * block[1] * block[2];
  std::vector<Thread> ts(threads);
  const std::vector<uint32_t>& param_offsets = m.param_offsets.at(size_t(&entry - m.entries.data()));
  hopper::MBarriers mbarriers;                                             // the running block's
  std::vector<Warpgroup> warpgroups((threads + kWarpgroup - 1) / kWarpgroup);  // the running block's

  // The 128 bytes of the tensor map at generic address `address`: inside a kernel parameter (cvta.param, a map passed
  // by value) or in global memory.
  auto tensor_map_at = [&](uint64_t address, const Ins& in) {
    const uint8_t* bytes = nullptr;
    if (address >= kParamWindow && address < kParamWindow + kParamWindowBytes) {
      const uint64_t offset = address - kParamWindow;
      for (size_t i = 0; i < entry.params.size() && !bytes; ++i)
        if (offset >= param_offsets[i] &&
            offset + mock::kTensorMapBytes <= param_offsets[i] + uint64_t(entry.params[i].bytes))
          bytes = static_cast<const uint8_t*>(params[i]) + (offset - param_offsets[i]);
      if (!bytes) throw Error("PTX interpreter: the tensor map's 128 bytes are not inside a kernel parameter at: " + in.text);
    } else {
      try {
        check(address, mock::kTensorMapBytes);
      } catch (const std::exception& e) {
        throw Error(std::string("PTX interpreter: ") + e.what() + " (the tensor map) at: " + in.text);
      }
      bytes = reinterpret_cast<const uint8_t*>(address);
    }
    mock::TensorMap map;
    if (!mock::decode_tensor_map(bytes, map))
      throw Error("PTX interpreter: no tensor map (as cuTensorMapEncodeTiled writes) at the map address at: " + in.text);
    return map;
  };

  auto run_thread = [&](Thread& th) {
    auto rd = [&](const Opnd& o) { return operand_value(th, o, m.symbol_offset); };
    while (th.state == Thread::Running) {
      if (budget-- == 0) throw Error("PTX interpreter: instruction budget exhausted (an endless loop?)");
      const Ins& in = code[th.pc];
      if (in.guard >= 0 && ((th.regs[size_t(in.guard)] != 0) == in.guard_neg)) {
        ++th.pc;
        continue;
      }
      const Ty t = in.t;
      const bool w64 = dtype_bytes(t) == 8;
      auto set = [&](uint64_t v) {
        th.regs[in.a[0].index] = t == Ty::Pred ? (v != 0) : w64 ? v : dtype_bytes(t) == 2 ? uint64_t(uint16_t(v)) : uint64_t(uint32_t(v));
      };
      auto fl = [&](size_t i) { return float_value(t, rd(in.a[i])); };
      auto put_f = [&](double v) { th.regs[in.a[0].index] = t == Ty::F64 ? bits_of(v) : bits_of(float(v)); };
      auto s32 = [&](size_t i) { return int32_t(uint32_t(rd(in.a[i]))); };
      auto u32 = [&](size_t i) { return uint32_t(rd(in.a[i])); };
      auto s64 = [&](size_t i) { return int64_t(rd(in.a[i])); };
      auto u64 = [&](size_t i) { return rd(in.a[i]); };
      auto global_addr = [&](const Opnd& o, uint32_t bytes) {
        uint64_t addr = rd(o) + uint64_t(o.offset);
        try {
          check(addr, bytes);
        } catch (const std::exception& e) {
          throw Error(std::string("PTX interpreter: ") + e.what() + " at: " + in.text);
        }
        return reinterpret_cast<uint8_t*>(addr);
      };
      auto shared_addr = [&](const Opnd& o, uint32_t bytes) {
        if (o.offset != 0) throw Error("PTX interpreter: a shared address with an offset (not emitted) at: " + in.text);
        uint64_t off = uint32_t(rd(o));
        if (off + bytes > shared.size())
          throw Error("PTX interpreter: shared memory access at " + std::to_string(off) + " past " +
                      std::to_string(shared.size()) + " bytes at: " + in.text);
        return shared.data() + off;
      };
      // An mbarrier object: 8 bytes of shared memory, 8-byte aligned.
      auto barrier_addr = [&](const Opnd& o) {
        const uint32_t addr = uint32_t(rd(o));
        if (addr % 8 != 0)
          throw Error("PTX interpreter: mbarrier address " + std::to_string(addr) + " is not 8-byte aligned at: " + in.text);
        shared_addr(o, 8);  // bounds
        return addr;
      };
      auto load = [&](const uint8_t* p) {
        uint64_t v = 0;
        std::memcpy(&v, p, size_t(dtype_bytes(t)));
        return v;
      };
      auto store = [&](uint8_t* p, uint64_t v) { std::memcpy(p, &v, size_t(dtype_bytes(t))); };
      switch (in.op) {
        case Op::LdParam: {
          const Opnd& src = in.a[1];
          int pi = m.symbol_param[src.index];
          if (pi < 0) throw Error("PTX interpreter: ld.param of a non-parameter at: " + in.text);
          uint64_t v = 0;
          std::memcpy(&v, params[pi], std::min(sizeof v, size_t(entry.params[size_t(pi)].bytes)));
          set(v);
          break;
        }
        case Op::LdGlobal: case Op::LdShared: {
          if (in.frags.empty()) {
            set(load(in.op == Op::LdGlobal ? global_addr(in.a[1], uint32_t(dtype_bytes(t)))
                                           : shared_addr(in.a[1], uint32_t(dtype_bytes(t)))));
            break;
          }
          // A vector access must be aligned to its whole size (PTX ISA, "Vectors"); the hardware faults otherwise.
          const uint32_t bytes = uint32_t(dtype_bytes(t) * in.frags[0].size());
          if ((rd(in.a[1]) + uint64_t(in.a[1].offset)) % bytes != 0)
            throw Error("PTX interpreter: " + std::to_string(bytes) + "-byte vector load from an address not aligned to " +
                        std::to_string(bytes) + " at: " + in.text);
          const uint8_t* p = in.op == Op::LdGlobal ? global_addr(in.a[1], bytes) : shared_addr(in.a[1], bytes);
          const size_t e = dtype_bytes(t);
          for (size_t i = 0; i < in.frags[0].size(); ++i) {
            uint32_t v = 0;
            std::memcpy(&v, p + e * i, e);
            th.regs[in.frags[0][i]] = v;
          }
          break;
        }
        case Op::StGlobal: case Op::StShared: {
          if (in.frags.empty()) {
            store(in.op == Op::StGlobal ? global_addr(in.a[0], uint32_t(dtype_bytes(t)))
                                        : shared_addr(in.a[0], uint32_t(dtype_bytes(t))),
                  rd(in.a[1]));
            break;
          }
          const uint32_t bytes = uint32_t(dtype_bytes(t) * in.frags[0].size());
          if ((rd(in.a[0]) + uint64_t(in.a[0].offset)) % bytes != 0)
            throw Error("PTX interpreter: " + std::to_string(bytes) +
                        "-byte vector store to an address not aligned to " + std::to_string(bytes) + " at: " + in.text);
          uint8_t* p = in.op == Op::StGlobal ? global_addr(in.a[0], bytes) : shared_addr(in.a[0], bytes);
          for (size_t i = 0; i < in.frags[0].size(); ++i) {
            const uint32_t v = uint32_t(th.regs[in.frags[0][i]]);
            std::memcpy(p + 4 * i, &v, 4);
          }
          break;
        }
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
        case Op::CpAsync: {
          const uint32_t bytes = uint32_t(rd(in.a[3]));
          if (bytes != 0 && bytes != 16) throw Error("PTX interpreter: cp.async source size must be 0 or 16 here: " + in.text);
          const uint32_t dst = uint32_t(rd(in.a[0]));
          if (dst % 16 != 0) throw Error("PTX interpreter: cp.async shared address not 16-byte aligned at: " + in.text);
          shared_addr(in.a[0], 16);  // bounds
          if (bytes) {
            const uint64_t src = rd(in.a[1]);
            if (src % 16 != 0) throw Error("PTX interpreter: cp.async global address not 16-byte aligned at: " + in.text);
          }
          th.pending.push_back({dst, rd(in.a[1]), bytes, th.pc, th.committed});
          break;
        }
        case Op::CpAsyncCommit: ++th.committed; break;
        case Op::CpAsyncWait: {
          uint64_t keep = in.a[0].imm;
          if (keep == kWaitAll) ++th.committed, keep = 0;
          // Groups below `done` must have landed; the newest `keep` committed ones and the open one may fly on.
          const uint32_t done = th.committed > keep ? th.committed - uint32_t(keep) : 0;
          std::vector<Thread::PendingCopy> still;
          for (const Thread::PendingCopy& c : th.pending) {
            if (c.group >= done) {
              still.push_back(c);
              continue;
            }
            uint8_t chunk[16] = {};
            if (c.bytes) {
              try {
                check(c.source, 16);
              } catch (const std::exception& e) {
                throw Error(std::string("PTX interpreter: ") + e.what() + " at: " + code[c.pc].text);
              }
              std::memcpy(chunk, reinterpret_cast<const uint8_t*>(c.source), 16);
            }
            std::memcpy(shared.data() + c.shared_offset, chunk, 16);
          }
          th.pending = std::move(still);
          break;
        }
        case Op::Bar: th.state = Thread::AtBarrier; break;
        case Op::Nop: break;
        case Op::CvtaParam: set(rd(in.a[1]) + kParamWindow); break;
        case Op::MbarInit: mbarriers.init(barrier_addr(in.a[0]), rd(in.a[1]), in.text); break;
        case Op::MbarArrive: mbarriers.arrive(barrier_addr(in.a[0]), in.a.size() > 1 ? u32(1) : 0, in.text); break;
        case Op::MbarTryWait: {
          const uint32_t bar = barrier_addr(in.a[1]), parity = u32(2) & 1u;
          const bool done = mbarriers.phase_complete(bar, parity, in.text);
          th.regs[in.a[0].index] = done;
          if (!done) {  // a yield point: the others run before this thread polls again
            th.state = Thread::Polling;
            th.poll_barrier = bar;
            th.poll_parity = parity;
          }
          break;
        }
        case Op::TensorCopy: {
          // The copy lands at once (its barrier's phase cannot complete before it does anyway).
          std::vector<int32_t> coords;
          for (size_t i = 3; i < in.a.size(); ++i) coords.push_back(s32(i));
          const uint32_t dst = u32(0), bar = barrier_addr(in.a[2]);
          const uint32_t bytes = hopper::tensor_copy(tensor_map_at(rd(in.a[1]), in), coords, dst, shared, check, in.text);
          if (mbarriers.overlaps(dst, uint64_t(dst) + bytes))
            throw Error("PTX interpreter: a tensor copy overwrites an mbarrier at: " + in.text);
          mbarriers.complete_tx(bar, bytes, in.text);
          break;
        }
        case Op::WgFence: case Op::WgMma: case Op::WgCommit: case Op::WgWait:
          th.state = Thread::AtWarpgroupOp;  // run for the whole warpgroup below
          continue;
        case Op::Shfl: case Op::WmmaLoad: case Op::WmmaMma: case Op::WmmaStore:
          th.state = Thread::AtWarpOp;  // run for the whole warp below
          continue;
        case Op::Bra: th.pc = in.target; continue;
        case Op::Ret:
          if (!th.pending.empty()) throw Error("PTX interpreter: a thread exits with cp.async copies it never waited for");
          if (!warpgroups[size_t(&th - ts.data()) / kWarpgroup].idle())
            throw Error("PTX interpreter: a thread exits with wgmma multiplies its warpgroup never waited for");
          th.state = Thread::Exited;
          continue;
      }
      ++th.pc;
    }
  };

  auto value = [&](const Thread& th, const Opnd& o) { return operand_value(th, o, m.symbol_offset); };

  // Whether the collective instruction some member of the group [begin, begin + size) (a warp, or a warpgroup of 4
  // warps) stopped at (`at`) can run: every member is there, at the same instruction. A member that exited, waits at
  // bar.sync or at another collective instruction never will come (divergence: a fault); one still running or polling
  // an mbarrier may.
  auto group_ready = [&](unsigned begin, unsigned size, Thread::State at) {
    const unsigned end = std::min(threads, begin + size);
    unsigned first = begin;
    while (first < end && ts[first].state != at) ++first;
    if (first == end) return false;
    const Ins& in = code[ts[first].pc];
    const bool warp = at == Thread::AtWarpOp;
    const std::string what = in.op == Op::Shfl ? "shfl.sync" : warp ? "wmma" : "wgmma";
    bool all = true;
    for (unsigned i = begin; i < end; ++i) {
      const Thread& th = ts[i];
      if (th.state == at && th.pc == ts[first].pc) continue;
      if (th.state == Thread::Running || th.state == Thread::Polling) {
        all = false;
        continue;
      }
      throw Error(warp ? "PTX interpreter: the lanes of a warp do not all reach the same " + what +
                             " (divergence, or a partial warp) at: " + in.text
                       : "PTX interpreter: the threads of a warpgroup do not all reach the same wgmma (divergence, or a "
                         "partial warpgroup) at: " + in.text);
    }
    if (all && end - begin != size)
      throw Error(warp ? "PTX interpreter: " + what + " names 32 lanes, but the warp is partial"
                       : "PTX interpreter: wgmma needs the 128 threads of a warpgroup, but the warpgroup is partial at: " +
                             in.text);
    return all;
  };

  // Runs the warp-collective instruction the 32 lanes from `w` stopped at.
  auto run_warp_op = [&](unsigned w) {
    const Ins& in = code[ts[w].pc];
    if (in.op != Op::Shfl) return warp_wmma(in, &ts[w], shared, m.symbol_offset, check);
    std::vector<uint64_t> source(kWarp);
    for (unsigned i = 0; i < kWarp; ++i) source[i] = value(ts[w + i], in.a[1]) & 0xffffffffu;
    for (unsigned i = 0; i < kWarp; ++i) {
      const uint32_t from = (i ^ uint32_t(value(ts[w + i], in.a[2]))) & 31u;
      ts[w + i].regs[in.a[0].index] = source[from];
    }
  };

  // Runs the wgmma instruction the 128 threads from `first` stopped at: mma_async joins the open batch, commit_group
  // closes it, wait_group N completes every batch but the newest N (oldest first). wgmma.fence changes nothing here.
  auto run_warpgroup_op = [&](unsigned first) {
    const Ins& in = code[ts[first].pc];
    Warpgroup& g = warpgroups[first / kWarpgroup];
    if (in.op == Op::WgMma) {
      // The PTX ISA has the whole warpgroup pass the same descriptors (and the backend the same scale-d).
      const uint64_t desc_a = value(ts[first], in.a[0]), desc_b = value(ts[first], in.a[1]);
      const bool accumulate = value(ts[first], in.a[2]) != 0;
      for (unsigned i = first + 1; i < first + kWarpgroup; ++i)
        if (value(ts[i], in.a[0]) != desc_a || value(ts[i], in.a[1]) != desc_b ||
            (value(ts[i], in.a[2]) != 0) != accumulate)
          throw Error("PTX interpreter: the threads of a warpgroup pass different descriptors or scale-d to wgmma at: " +
                      in.text);
      g.open.push_back({&in, desc_a, desc_b, accumulate});
    } else if (in.op == Op::WgCommit) {
      g.committed.push_back(std::move(g.open));
      g.open.clear();
    } else if (in.op == Op::WgWait) {
      while (g.committed.size() > in.a[0].imm) {
        for (const QueuedMultiply& q : g.committed.front()) complete_multiply(q, &ts[first], shared);
        g.committed.pop_front();
      }
    }
  };

  // Everything of the block but global memory: equal at two points with only polling between them, it shows the
  // polling threads loop without effect.
  auto fingerprint = [&] {
    uint64_t h = mbarriers.fingerprint();
    auto mix = [&h](uint64_t v) {
      h = (h ^ v) * 1099511628211ull;
      h ^= h >> 32;
    };
    for (const Thread& th : ts) {
      mix(uint64_t(th.state) << 32 | th.pc);
      mix(uint64_t(th.poll_barrier) << 32 | th.poll_parity);
      mix(uint64_t(th.pending.size()) << 32 | th.committed);
      for (uint64_t r : th.regs) mix(r);
    }
    for (size_t i = 0; i < shared.size(); i += 8) {
      uint64_t v = 0;
      std::memcpy(&v, shared.data() + i, std::min<size_t>(8, shared.size() - i));
      mix(v);
    }
    return h;
  };

  auto deadlock = [&](unsigned gx, unsigned gy, unsigned gz) {
    unsigned polling = 0, at_barrier = 0;
    std::string first_poll;
    for (const Thread& th : ts) {
      if (th.state == Thread::Polling && polling++ == 0)
        first_poll = " (thread " + std::to_string(&th - ts.data()) + " at: " + code[th.pc - 1].text + ")";
      at_barrier += th.state == Thread::AtBarrier;
    }
    return Error("PTX interpreter: deadlock in block (" + std::to_string(gx) + ", " + std::to_string(gy) + ", " +
                 std::to_string(gz) + "): no thread can proceed; " + std::to_string(polling) +
                 " poll mbarrier phases that never complete" + first_poll + ", " + std::to_string(at_barrier) +
                 " wait at bar.sync");
  };

  uint32_t entry_pc = m.entry_pc.at(size_t(&entry - m.entries.data()));
  for (unsigned gz = 0; gz < grid[2]; ++gz)
    for (unsigned gy = 0; gy < grid[1]; ++gy)
      for (unsigned gx = 0; gx < grid[0]; ++gx) {
        std::fill(shared.begin(), shared.end(), uint8_t(0xA5));  // shared memory starts as garbage
        mbarriers.clear();
        for (Warpgroup& g : warpgroups) g = Warpgroup{};
        for (unsigned i = 0; i < threads; ++i) {
          Thread& th = ts[i];
          th.regs.assign(m.registers, 0);
          th.pending.clear();
          th.committed = 0;
          th.pc = entry_pc;
          th.state = Thread::Running;
          th.poll_barrier = th.poll_parity = 0;
          unsigned tx = i % block[0], ty = (i / block[0]) % block[1], tz = i / (block[0] * block[1]);
          uint32_t sp[kSpecialCount] = {tx, ty, tz, block[0], block[1], block[2], gx, gy, gz, grid[0], grid[1], grid[2],
                                        i % kWarp};
          std::memcpy(th.special, sp, sizeof sp);
        }
        // The fingerprint when the pollers last ran with nothing else to run (valid while `idle`).
        bool idle = false;
        uint64_t idle_fingerprint = 0;
        // Run every thread up to its next barrier, collective instruction (shfl.sync, wmma; wgmma), failed try_wait or
        // exit. A polling thread runs again once its phase completed; a warp (warpgroup) whose threads all stopped at
        // one collective instruction runs it and runs on; the barrier is released when every live thread got there.
        for (;;) {
          for (Thread& th : ts)
            if (th.state == Thread::Running) run_thread(th);
          // Pollers whose phase completed go first, before collective instructions: a producer refills a released
          // stage before a wgmma.wait_group lets queued multiplies read it, so a stage released too early shows.
          bool woke = false;
          for (Thread& th : ts)
            if (th.state == Thread::Polling &&
                mbarriers.phase_complete(th.poll_barrier, th.poll_parity, code[th.pc - 1].text)) {
              th.state = Thread::Running;
              woke = true;
            }
          if (woke) {
            idle = false;
            continue;
          }
          bool resolved = false;
          auto resume = [&](unsigned first, unsigned count) {
            for (unsigned i = first; i < first + count; ++i) {
              ts[i].pc++;
              ts[i].state = Thread::Running;
            }
            resolved = true;
          };
          for (unsigned w = 0; w < threads; w += kWarp)
            if (group_ready(w, kWarp, Thread::AtWarpOp)) {
              run_warp_op(w);
              resume(w, kWarp);
            }
          for (unsigned g = 0; g < threads; g += kWarpgroup)
            if (group_ready(g, kWarpgroup, Thread::AtWarpgroupOp)) {
              run_warpgroup_op(g);
              resume(g, kWarpgroup);
            }
          if (resolved) {
            idle = false;
            continue;
          }
          // No collective instruction can run: every live thread waits at bar.sync or polls a phase still under way.
          unsigned live = 0, at_barrier = 0;
          for (const Thread& th : ts) {
            live += th.state != Thread::Exited;
            at_barrier += th.state == Thread::AtBarrier;
          }
          if (live == 0) break;
          if (at_barrier == live) {
            for (Thread& th : ts)
              if (th.state == Thread::AtBarrier) th.state = Thread::Running;  // pc is already past bar.sync
            idle = false;
            continue;
          }
          // No phase polled for completed, and nothing else can run: the pollers poll again (try_wait may return false
          // any number of times). If they did so already and the block is as it was then, nothing will ever change.
          const uint64_t now = fingerprint();
          if (idle && idle_fingerprint == now) throw deadlock(gx, gy, gz);
          idle = true;
          idle_fingerprint = now;
          for (Thread& th : ts)
            if (th.state == Thread::Polling) th.state = Thread::Running;
        }
      }
}

}  // namespace spire::ptx::interp
