#include "backends/ptx/ptx_translator.h"
#include "backends/ptx/ptx_shared_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace spire::ptx {

using kir::Type;

namespace {

std::string param_type(Type t) {
  switch (t) {
    case Type::F16: case Type::BF16: return "b16";
    case Type::I32: return "s32";
    case Type::U32: return "u32";
    case Type::I64: return "s64";
    case Type::F32: return "f32";
    case Type::F64: return "f64";
    case Type::Bool: break;
  }
  return "?";
}

// The type suffix of ld/st/atom for a memory element: f16 and bf16 move as raw bits.
std::string_view memory_type(Type t) { return t == Type::F16 || t == Type::BF16 ? "b16" : ptx_type(t); }

std::string buffer_param(uint32_t i) { return fmt::format("p_buf{}", i); }
std::string scalar_param(uint32_t i) { return fmt::format("p_arg{}", i); }
std::string tensor_map_param(uint32_t i) { return fmt::format("p_map{}", i); }
std::string shared_symbol(uint32_t i) { return fmt::format("s_shared{}", i); }

// User names go into // comments; a line break inside one would spill the rest into the PTX.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

Translator::Translator(const kir::Kernel& k, const Target& target)
    : k_(k), target_(target), entry_(entry_name(k)), values_(k.value_types.size()), vars_(k.vars.size()) {}

void Translator::fail(const std::string& problem) const {
  throw CompileError(fmt::format("PTX backend, kernel '{}': {}", k_.name, problem));
}

std::string Translator::entry_params() const {
  // One line per parameter, with the kernel's own name for it in a comment.
  struct Param { std::string decl, what; };
  std::vector<Param> ps;
  for (uint32_t i = 0; i < k_.buffers.size(); ++i) {
    const auto& b = k_.buffers[i];
    ps.push_back({fmt::format(".param .u64 {}", buffer_param(i)),
                  fmt::format("buffer {}: {} {}", one_line(b.name), dtype_name(b.elem), kir::access_name(b.access))});
  }
  for (uint32_t i = 0; i < k_.scalars.size(); ++i) {
    const auto& sc = k_.scalars[i];
    ps.push_back({fmt::format(".param .{} {}", param_type(sc.type), scalar_param(i)),
                  fmt::format("scalar {}: {}", one_line(sc.name), dtype_name(sc.type))});
  }
  for (uint32_t i = 0; i < k_.tensor_maps.size(); ++i) {
    // The driver's 128-byte CUtensorMap, passed by value (cuTensorMapEncodeTiled fills it at dispatch).
    ps.push_back({fmt::format(".param .align 64 .b8 {}[128]", tensor_map_param(i)),
                  fmt::format("tensor map {} of buffer {}", one_line(k_.tensor_maps[i].name),
                              one_line(k_.buffers[k_.tensor_maps[i].buffer].name))});
  }
  std::string out;
  for (size_t i = 0; i < ps.size(); ++i)
    out += fmt::format("  {}{}  // {}\n", ps[i].decl, i + 1 < ps.size() ? "," : "", ps[i].what);
  return out;
}

std::string Translator::module() {
  std::string err = kir::verify(k_);
  if (!err.empty()) fail("malformed kernel: " + err);
  const auto& wg = k_.workgroup_size;
  if (wg[0] > 1024 || wg[1] > 1024 || wg[2] > 64 || k_.workgroup_invocations() > 1024)
    fail(fmt::format("workgroup {}x{}x{} exceeds CUDA's limits (x, y <= 1024, z <= 64, at most 1024 invocations)",
                     wg[0], wg[1], wg[2]));
  const SharedLayout layout = shared_layout(k_);
  if (layout.bytes > max_shared_bytes(target_.sm))
    fail(fmt::format("{} bytes of workgroup memory exceed the {} a block may have on sm_{}", layout.bytes,
                     max_shared_bytes(target_.sm), target_.sm));
  const bool warp_ops = k_.features.has(kir::Feature::SubgroupShuffle) || k_.features.has(kir::Feature::CooperativeMatrix) ||
                        k_.features.has(kir::Feature::WarpgroupMatrix);
  if (warp_ops && k_.workgroup_invocations() % 32 != 0)
    fail(fmt::format("a kernel with subgroup operations needs whole warps, and its workgroup has {} invocations (not a "
                     "multiple of 32)", k_.workgroup_invocations()));

  // VK_NV_cooperative_matrix2's workgroup matrices exist only on Vulkan; CUDA devices never report the feature, so
  // the lowering never picks such a kernel for one.
  if (k_.features.has(kir::Feature::WorkgroupMatrix))
    fail("workgroup matrices (workgroup-matrix) are a Vulkan feature (VK_NV_cooperative_matrix2): no PTX form");

  uint32_t target_sm = ptx_target_for(target_.sm);  // throws below the baseline
  std::string version = ptx_version_for(target_.sm);
  std::string target_suffix;
  if (k_.features.has(kir::Feature::WarpgroupMatrix)) {
    // wgmma exists only on sm_90a, code that runs on compute capability 9.0 alone (PTX ISA 8.0 introduced it).
    if (target_sm != 90)
      fail(fmt::format("warpgroup matrices need sm_90 (Hopper's wgmma), and the target is sm_{}", target_.sm));
    target_suffix = "a";
    version = "8.0";
  }
  if (k_.features.has(kir::Feature::TensorCopy)) {
    // cp.async.bulk.tensor and mbarrier transaction counts: Hopper and later, PTX ISA 8.0 (newer targets' own
    // minimum ISA is already later).
    if (target_sm < 90)
      fail(fmt::format("tensor copies need sm_90 (Hopper's tensor memory accelerator), and the target is sm_{}", target_.sm));
    if (target_sm == 90) version = "8.0";
  }

  // Buffer base addresses and shared-array bases are set up once at entry.
  for (uint32_t i = 0; i < k_.buffers.size(); ++i) {
    auto r = w_.reg(RegClass::B64);
    w_.ins(fmt::format("ld.param.u64 {}, [{}];", r, buffer_param(i)));
    w_.ins(fmt::format("cvta.to.global.u64 {}, {};", r, r));
    buffers_.push_back(r);
  }
  for (uint32_t i = 0; i < k_.shared.size(); ++i) {
    auto r = w_.reg(RegClass::B32);
    if (layout.dynamic) {
      w_.ins(fmt::format("mov.u32 {}, {};", r, kDynamicShared));
      if (layout.offsets[i]) w_.ins(fmt::format("add.u32 {}, {}, {};", r, r, layout.offsets[i]));
    } else {
      w_.ins(fmt::format("mov.u32 {}, {};", r, shared_symbol(i)));
    }
    shared_.push_back(r);
  }
  for (uint32_t i = 0; i < layout.barrier_offsets.size(); ++i) {
    auto r = w_.reg(RegClass::B32);
    w_.ins(fmt::format("mov.u32 {}, {};", r, kDynamicShared));
    w_.ins(fmt::format("add.u32 {}, {}, {};", r, r, layout.barrier_offsets[i]));
    barriers_.push_back(r);
  }
  for (uint32_t i = 0; i < k_.tensor_maps.size(); ++i) {
    auto r = w_.reg(RegClass::B64);
    w_.ins(fmt::format("mov.b64 {}, {};", r, tensor_map_param(i)));
    w_.ins(fmt::format("cvta.param.u64 {}, {};", r, r));
    tensor_maps_.push_back(r);
  }
  init_arrival_barriers();
  for (uint32_t v = 0; v < k_.vars.size(); ++v) vars_[v] = w_.reg(k_.vars[v].type);
  declare_fragments();
  // Hopper's programmatic dependent launch (runtime/cuda launches with it, cuda_command_stream.cpp): a kernel waits
  // here, before reading anything, until the kernel before it has finished and its writes are visible; and once every
  // workgroup of it has done its work, the next may launch, overlapping its launch with this kernel's exit. Both are
  // no-ops in a kernel launched without it. (Letting the next launch at this kernel's start instead slowed GPT-2's
  // decoding on an H200: its workgroups then waited on the cores the running kernels use.)
  // A kernel that places its wait (kir::WaitForPriorKernels: a few-rows product reading its weights first) waits there.
  hopper_ = target_sm >= 90;
  if (hopper_ && !kir::places_wait(k_)) w_.ins("griddepcontrol.wait;");
  block(k_.body);
  if (hopper_) w_.ins("griddepcontrol.launch_dependents;");
  w_.ins("ret;");

  std::string out;
  out += fmt::format("//\n// Generated by spire's PTX backend from kernel '{}'\n//\n\n", one_line(k_.name));
  out += fmt::format(".version {}\n.target sm_{}{}\n.address_size 64\n\n", version, target_sm, target_suffix);
  if (layout.dynamic) {
    // Sized at launch (ptx_shared_layout.h); the arrays sit at their offsets in it.
    out += fmt::format(".extern .shared .align {} .b8 {}[];  // {} bytes:", layout.align, kDynamicShared, layout.bytes);
    for (uint32_t i = 0; i < k_.shared.size(); ++i) out += fmt::format(" {} at {}", one_line(k_.shared[i].name), layout.offsets[i]);
    for (uint32_t i = 0; i < k_.arrival_barriers.size(); ++i)
      out += fmt::format(" {} at {}", one_line(k_.arrival_barriers[i].name), layout.barrier_offsets[i]);
    out += "\n\n";
  }
  out += fmt::format(".visible .entry {}(\n{})\n", entry_, entry_params());
  out += fmt::format(".reqntid {}, {}, {}\n", wg[0], wg[1], wg[2]);
  // ptxas then caps registers at what that many blocks of this size leave each thread.
  if (k_.min_workgroups_per_core > 1) out += fmt::format(".minnctapersm {}\n", k_.min_workgroups_per_core);
  out += "{\n";
  out += w_.declarations();
  for (uint32_t i = 0; i < k_.shared.size() && !layout.dynamic; ++i) {
    const auto& s = k_.shared[i];
    out += fmt::format("  .shared .align {} .b8 {}[{}];  // {}: {} x {}\n", kSharedAlign, shared_symbol(i),
                       uint64_t(s.count) * dtype_bytes(s.elem), one_line(s.name), s.count, dtype_name(s.elem));
  }
  out += "\n";
  out += w_.body();
  out += "}\n";
  return out;
}

void Translator::block(const kir::Block& b) {
  // wgmma reads its accumulator registers asynchronously, so registers other instructions wrote (a fill, a wait's
  // results) need wgmma.fence before the first of a run of multiplies. Instructions between them (descriptor
  // arithmetic) touch no accumulator; any other statement ends the run.
  bool in_run = false;
  for (const auto& s : b.stmts) {
    const bool multiply = std::holds_alternative<kir::WarpgroupMulAdd>(s);
    if (multiply && !in_run) w_.ins("wgmma.fence.sync.aligned;");
    if (!std::holds_alternative<kir::Instr>(s)) in_run = multiply;
    std::visit([&](const auto& st) { stmt(st); }, s);
  }
}

void Translator::stmt(const kir::Instr& in) {
  const std::string& dst = values_[in.result] = w_.reg(in.type);
  switch (in.op) {
    case kir::Op::ReadBuiltin: builtin(kir::Builtin(in.index), dst); break;
    case kir::Op::ReadScalar:
      w_.ins(fmt::format("ld.param.{} {}, [{}];", param_type(in.type), dst, scalar_param(in.index)));
      break;
    case kir::Op::LoadVar:
      w_.ins(fmt::format("mov.{} {}, {};", ptx_bits(in.type), dst, vars_[in.index]));
      break;
    case kir::Op::LoadBuffer: case kir::Op::LoadShared: case kir::Op::AtomicAdd: memory_op(in, dst); break;
    case kir::Op::ShuffleXor: shuffle_xor(in, dst); break;
    case kir::Op::EpilogueTap:  // no epilogue folded in: the value itself
      w_.ins(fmt::format("mov.{} {}, {};", ptx_bits(in.type), dst, val(in.operands[1])));
      break;
    case kir::Op::MatrixElement:
      w_.ins(fmt::format("mov.f32 {}, {};", dst, fragments_[in.index][size_t(in.imm.i)]));
      break;
    default: value_op(in, dst); break;
  }
}

void Translator::builtin(kir::Builtin b, const std::string& dst) {
  using kir::Builtin;
  auto special = [&](const char* name) {
    auto r = w_.reg(RegClass::B32);
    w_.ins(fmt::format("mov.u32 {}, {};", r, name));
    return r;
  };
  // The logical grid is 1D; the runtime may fold it into x, y, z (x fastest), so rebuild linear ids.
  auto group_id = [&](const std::string& out) {
    auto t = w_.reg(RegClass::B32);
    w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", t, special("%nctaid.y"), special("%ctaid.z"), special("%ctaid.y")));
    w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", out, special("%nctaid.x"), t, special("%ctaid.x")));
  };
  auto local_id = [&](const std::string& out) {
    const auto& wg = k_.workgroup_size;
    if (wg[1] == 1 && wg[2] == 1) {
      w_.ins(fmt::format("mov.u32 {}, %tid.x;", out));
      return;
    }
    auto t = w_.reg(RegClass::B32);
    w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", t, special("%tid.z"), wg[1], special("%tid.y")));
    w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", out, t, wg[0], special("%tid.x")));
  };
  auto num_groups = [&](const std::string& out) {
    auto t = w_.reg(RegClass::B32);
    w_.ins(fmt::format("mul.lo.u32 {}, {}, {};", t, special("%nctaid.x"), special("%nctaid.y")));
    w_.ins(fmt::format("mul.lo.u32 {}, {}, {};", out, t, special("%nctaid.z")));
  };
  uint32_t wg_inv = k_.workgroup_invocations();
  switch (b) {
    case Builtin::GlobalId: {
      auto g = w_.reg(RegClass::B32);
      auto l = w_.reg(RegClass::B32);
      group_id(g);
      local_id(l);
      w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", dst, g, wg_inv, l));
      break;
    }
    case Builtin::LocalId: local_id(dst); break;
    case Builtin::GroupId: group_id(dst); break;
    case Builtin::NumGroups: num_groups(dst); break;
    case Builtin::WorkgroupSize: w_.ins(fmt::format("mov.u32 {}, {};", dst, wg_inv)); break;
    case Builtin::GlobalSize: {
      auto n = w_.reg(RegClass::B32);
      num_groups(n);
      w_.ins(fmt::format("mul.lo.u32 {}, {}, {};", dst, n, wg_inv));
      break;
    }
    case Builtin::LocalIdX: w_.ins(fmt::format("mov.u32 {}, %tid.x;", dst)); break;
    case Builtin::LocalIdY: w_.ins(fmt::format("mov.u32 {}, %tid.y;", dst)); break;
    case Builtin::LocalIdZ: w_.ins(fmt::format("mov.u32 {}, %tid.z;", dst)); break;
    // A warp is 32 consecutive linear thread ids (x fastest, the order local_id() rebuilds).
    case Builtin::SubgroupSize: w_.ins(fmt::format("mov.u32 {}, 32;", dst)); break;
    case Builtin::SubgroupId: {
      auto l = w_.reg(RegClass::B32);
      local_id(l);
      w_.ins(fmt::format("shr.u32 {}, {}, 5;", dst, l));
      break;
    }
    case Builtin::SubgroupLocalId: w_.ins(fmt::format("mov.u32 {}, %laneid;", dst)); break;
  }
}

// shfl.sync names every lane of the warp in its member mask, so every lane must exist and arrive: the kernel's
// workgroup must be whole warps (checked in translate()) and the call in uniform control flow (kir's rule).
void Translator::shuffle_xor(const kir::Instr& in, const std::string& dst) {
  const std::string mask = val(in.operands[1]);
  if (dtype_bytes(in.type) == 4) {
    w_.ins(fmt::format("shfl.sync.bfly.b32 {}, {}, {}, 31, -1;", dst, val(in.operands[0]), mask));
    return;
  }
  if (dtype_bytes(in.type) != 8) fail(fmt::format("shuffle_xor of {} (32- and 64-bit values only)", dtype_name(in.type)));
  auto lo = w_.reg(RegClass::B32), hi = w_.reg(RegClass::B32);
  w_.ins(fmt::format("mov.b64 {{{}, {}}}, {};", lo, hi, val(in.operands[0])));
  w_.ins(fmt::format("shfl.sync.bfly.b32 {}, {}, {}, 31, -1;", lo, lo, mask));
  w_.ins(fmt::format("shfl.sync.bfly.b32 {}, {}, {}, 31, -1;", hi, hi, mask));
  w_.ins(fmt::format("mov.b64 {}, {{{}, {}}};", dst, lo, hi));
}

std::string Translator::buffer_address(uint32_t buffer, kir::ValueId index) {
  auto off = w_.reg(RegClass::B64);
  auto addr = w_.reg(RegClass::B64);
  // The index is u32 or i32 (kir::verify); a negative i32 index addresses before the base, as in C.
  const char* wide = type_of(index) == Type::I32 ? "mul.wide.s32" : "mul.wide.u32";
  w_.ins(fmt::format("{} {}, {}, {};", wide, off, val(index), dtype_bytes(k_.buffers[buffer].elem)));
  w_.ins(fmt::format("add.s64 {}, {}, {};", addr, buffers_[buffer], off));
  return addr;
}

std::string Translator::buffer_operand(uint32_t buffer, kir::ValueId index) {
  auto o = offsets_.find(index);
  if (o == offsets_.end()) return buffer_address(buffer, index);
  // Another value plus a constant: that value's address, the constant as the immediate offset.
  return fmt::format("{}+{}", buffer_address(buffer, o->second.base),
                     o->second.offset * int64_t(dtype_bytes(k_.buffers[buffer].elem)));
}

std::string Translator::shared_address(uint32_t array, kir::ValueId index) {
  auto addr = w_.reg(RegClass::B32);
  w_.ins(fmt::format("mad.lo.u32 {}, {}, {}, {};", addr, val(index), dtype_bytes(k_.shared[array].elem),
                     shared_[array]));
  return addr;
}

void Translator::memory_op(const kir::Instr& in, const std::string& dst) {
  switch (in.op) {
    case kir::Op::LoadBuffer: {
      auto addr = buffer_operand(in.index, in.operands[0]);
      w_.ins(fmt::format("ld.global{}.{} {}, [{}];", non_coherent(in.index) ? ".nc" : "", memory_type(in.type), dst, addr));
      break;
    }
    case kir::Op::LoadShared: {
      auto addr = shared_address(in.index, in.operands[0]);
      w_.ins(fmt::format("ld.shared.{} {}, [{}];", memory_type(in.type), dst, addr));
      break;
    }
    case kir::Op::AtomicAdd: {
      if (in.type != Type::I32 && in.type != Type::U32 && in.type != Type::F32)
        fail(fmt::format("atomic_add on {} (only i32, u32 and f32)", dtype_name(in.type)));
      auto addr = buffer_operand(in.index, in.operands[0]);
      w_.ins(fmt::format("atom.global.add.{} {}, [{}], {};", ptx_type(in.type), dst, addr, val(in.operands[1])));
      break;
    }
    default: fail(fmt::format("internal: {} is not a memory op", kir::op_name(in.op)));
  }
}

void Translator::stmt(const kir::StoreBuffer& s) {
  auto addr = buffer_operand(s.buffer, s.index);
  w_.ins(fmt::format("st.global.{} [{}], {};", memory_type(k_.buffers[s.buffer].elem), addr, val(s.value)));
}

void Translator::stmt(const kir::StoreShared& s) {
  auto addr = shared_address(s.array, s.index);
  w_.ins(fmt::format("st.shared.{} [{}], {};", memory_type(k_.shared[s.array].elem), addr, val(s.value)));
}

// One ld.shared.v2/.v4: the index is a multiple of the lane count (kir's rule) and every array starts on
// kSharedAlign bytes, so the address is aligned to the access's size, as PTX requires of vector accesses.
void Translator::stmt(const kir::LoadSharedVector& s) {
  const kir::Type t = k_.shared[s.array].elem;
  auto addr = shared_address(s.array, s.index);
  std::vector<std::string> regs;
  for (kir::ValueId r : s.results) regs.push_back(values_[r] = w_.reg(t));
  w_.ins(fmt::format("ld.shared.v{}.{} {{{}}}, [{}];", regs.size(), memory_type(t), fmt::join(regs, ", "), addr));
}

// One ld.global.v2/.v4 (through the non-coherent path for a read-only buffer, as element loads): views start on 16
// bytes and the index is a multiple of the lane count (kir's rules), so the address is aligned to the access.
// Widened (f16/bf16 to f32): the same load into 16-bit registers, each then converted as a cast would.
void Translator::stmt(const kir::LoadBufferVector& s) {
  const kir::Type t = k_.buffers[s.buffer].elem;
  auto addr = buffer_operand(s.buffer, s.index);
  std::vector<std::string> regs;
  for (kir::ValueId r : s.results) regs.push_back(s.widen ? w_.reg(t) : (values_[r] = w_.reg(t)));
  w_.ins(fmt::format("ld.global{}.v{}.{} {{{}}}, [{}];", non_coherent(s.buffer) ? ".nc" : "", regs.size(), memory_type(t),
                     fmt::join(regs, ", "), addr));
  if (s.widen)
    for (size_t i = 0; i < regs.size(); ++i) convert(t, kir::Type::F32, values_[s.results[i]] = w_.reg(kir::Type::F32), regs[i]);
}

void Translator::stmt(const kir::StoreVar& s) {
  w_.ins(fmt::format("mov.{} {}, {};", ptx_bits(k_.vars[s.var].type), vars_[s.var], val(s.value)));
}

void Translator::stmt(const kir::Barrier&) {
  // bar.sync orders all memory accesses of the CTA's threads around it (shared and global), which is the
  // workgroup execution + memory barrier kir promises. Asynchronous copies are not ordered by it: the kernel
  // waits for its own first (kir's CopyWait, cp.async.wait_group). Nor are the tensor cores' reads of wgmma
  // operands (the async proxy): each writing thread fences its shared-memory writes for them before the barrier.
  if (k_.features.has(kir::Feature::WarpgroupMatrix)) w_.ins("fence.proxy.async.shared::cta;");
  w_.ins("bar.sync 0;");
}

bool Translator::non_coherent(uint32_t buffer) const {
  // A buffer the kernel only reads may go through the non-coherent (read-only) cache path, which promises the data
  // does not change while the kernel runs. Bindings never alias (the contract the SPIR-V side states too: its storage
  // buffers are not decorated Aliased, and read-only ones NonWritable), so nothing this kernel writes is read so. But
  // from sm_90 on a kernel may start while the kernel before it still writes (programmatic dependent launch), so only
  // a buffer read before the wait qualifies there, one the launch before never writes (the runtime's rule): the
  // compiler may move a non-coherent load above griddepcontrol.wait. (The likely cause of the NaN weight gradients
  // programmatic launch gave on an H200, runtime/cuda/cuda_command_stream.cpp; not yet checked on the GPU.)
  const kir::BufferParam& b = k_.buffers[buffer];
  return b.access == kir::Access::Read && (!hopper_ || b.read_before_wait);
}

void Translator::stmt(const kir::WaitForPriorKernels&) {
  if (hopper_) w_.ins("griddepcontrol.wait;");
}

void Translator::stmt(const kir::If& s) {
  auto end = w_.new_label("endif");
  if (!s.else_body) {
    w_.ins(fmt::format("@!{} bra {};", val(s.cond), end));
    block(*s.then_body);
  } else {
    auto other = w_.new_label("else");
    w_.ins(fmt::format("@!{} bra {};", val(s.cond), other));
    block(*s.then_body);
    w_.ins(fmt::format("bra {};", end));
    w_.label(other);
    block(*s.else_body);
  }
  w_.label(end);
}

void Translator::stmt(const kir::For& s) {
  Type t = k_.vars[s.var].type;
  const std::string& var = vars_[s.var];
  auto head = w_.new_label("loop");
  auto end = w_.new_label("endloop");
  auto done = w_.reg(RegClass::Pred);
  // Unsigned variables compare with hs (higher-or-same), signed ones with ge.
  const char* ge = kir::is_signed_int(t) ? "ge" : "hs";
  w_.ins(fmt::format("mov.{} {}, {};", ptx_bits(t), var, val(s.begin)));
  w_.label(head);
  w_.ins(fmt::format("setp.{}.{} {}, {}, {};", ge, ptx_type(t), done, var, val(s.end)));
  w_.ins(fmt::format("@{} bra {};", done, end));
  block(*s.body);
  w_.ins(fmt::format("add.{} {}, {}, {};", ptx_type(t), var, var, val(s.step)));
  w_.ins(fmt::format("bra {};", head));
  w_.label(end);
}

}  // namespace spire::ptx
