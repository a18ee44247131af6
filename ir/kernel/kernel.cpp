#include "ir/kernel/kernel.h"

#include <functional>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "base/named_values.h"

namespace spire::kir {

// The names the printer and the SPIR-V debug names use. The size checks catch a new enumerator left unnamed.
constexpr NamedValue<MatrixUse> kMatrixUseNames[] = {
    {MatrixUse::A, "a"}, {MatrixUse::B, "b"}, {MatrixUse::Accumulator, "accumulator"},
    {MatrixUse::WarpgroupAccumulator, "warpgroup_accumulator"},
};
static_assert(std::size(kMatrixUseNames) == size_t(MatrixUse::WarpgroupAccumulator) + 1);

constexpr NamedValue<Builtin> kBuiltinNames[] = {
    {Builtin::GlobalId, "global_id"}, {Builtin::LocalId, "local_id"}, {Builtin::GroupId, "group_id"},
    {Builtin::NumGroups, "num_groups"}, {Builtin::WorkgroupSize, "workgroup_size"},
    {Builtin::GlobalSize, "global_size"},
    {Builtin::LocalIdX, "local_id.x"}, {Builtin::LocalIdY, "local_id.y"}, {Builtin::LocalIdZ, "local_id.z"},
    {Builtin::SubgroupSize, "subgroup_size"}, {Builtin::SubgroupId, "subgroup_id"},
    {Builtin::SubgroupLocalId, "subgroup_local_id"},
};
static_assert(std::size(kBuiltinNames) == size_t(Builtin::SubgroupLocalId) + 1);

std::string_view matrix_use_name(MatrixUse u) { return name_in(kMatrixUseNames, u); }
std::string_view builtin_name(Builtin b) { return name_in(kBuiltinNames, b); }

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Const: return "const";
    case Op::ReadBuiltin: return "builtin";
    case Op::ReadScalar: return "param";
    case Op::LoadVar: return "loadvar";
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Div: return "div";
    case Op::Rem: return "rem";
    case Op::Min: return "min";
    case Op::Max: return "max";
    case Op::Pow: return "pow";
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Xor: return "xor";
    case Op::Shl: return "shl";
    case Op::Shr: return "shr";
    case Op::Eq: return "eq";
    case Op::Ne: return "ne";
    case Op::Lt: return "lt";
    case Op::Le: return "le";
    case Op::Gt: return "gt";
    case Op::Ge: return "ge";
    case Op::Neg: return "neg";
    case Op::Not: return "not";
    case Op::Abs: return "abs";
    case Op::Exp: return "exp";
    case Op::Log: return "log";
    case Op::Sqrt: return "sqrt";
    case Op::Rsqrt: return "rsqrt";
    case Op::Tanh: return "tanh";
    case Op::Floor: return "floor";
    case Op::Select: return "select";
    case Op::Fma: return "fma";
    case Op::Convert: return "convert";
    case Op::LoadBuffer: return "load";
    case Op::LoadShared: return "load_shared";
    case Op::AtomicAdd: return "atomic_add";
    case Op::ShuffleXor: return "shuffle_xor";
    case Op::EpilogueTap: return "epilogue_tap";
    case Op::MatrixElement: return "matrix_element";
  }
  return "?";
}

int op_arity(Op op) {
  switch (op) {
    case Op::Const: case Op::ReadBuiltin: case Op::ReadScalar: case Op::LoadVar: case Op::MatrixElement: return 0;
    case Op::Neg: case Op::Not: case Op::Abs: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt:
    case Op::Tanh: case Op::Floor: case Op::Convert: case Op::LoadBuffer: case Op::LoadShared: return 1;
    case Op::Select: case Op::Fma: return 3;
    default: return 2;
  }
}

uint32_t Kernel::shared_bytes() const {
  uint32_t total = 0;
  for (const auto& s : shared) {
    uint32_t b = dtype_bytes(s.elem);
    total = (total + b - 1) / b * b + b * s.count;
  }
  return total;
}

// The packing runtimes use too (base/dtype.h's packed_offsets: rt::KernelInterface::scalar_offsets).
std::vector<uint32_t> Kernel::scalar_offsets() const { return packed_offsets(types_of(scalars)); }
uint32_t Kernel::scalar_block_bytes() const { return packed_block_bytes(types_of(scalars)); }

namespace {

struct Verifier {
  const Kernel& k;
  std::vector<std::unordered_set<ValueId>> scopes;
  std::unordered_set<ValueId> defined_anywhere;
  std::string error;

  bool fail(std::string msg) {
    if (error.empty()) error = std::move(msg);
    return false;
  }
  bool visible(ValueId v) const {
    for (const auto& s : scopes)
      if (s.count(v)) return true;
    return false;
  }
  Type type_of(ValueId v) const { return k.value_types[v]; }
  bool use(ValueId v, const char* what) {
    if (v == kNoValue || v >= k.value_types.size()) return fail(fmt::format("{}: operand %{} does not exist", what, v));
    if (!visible(v)) return fail(fmt::format("{}: %{} is used where it is not visible (defined later or in another block)", what, v));
    return true;
  }
  bool index_ok(ValueId v, const char* what) {
    if (!use(v, what)) return false;
    Type t = type_of(v);
    if (t != Type::U32 && t != Type::I32) return fail(fmt::format("{}: index %{} must be u32 or i32, is {}", what, v, dtype_name(t)));
    return true;
  }

  bool instr(const Instr& in) {
    if (in.result >= k.value_types.size() || k.value_types[in.result] != in.type)
      return fail(fmt::format("%{}: result id/type table mismatch", in.result));
    if (defined_anywhere.count(in.result)) return fail(fmt::format("%{} defined twice", in.result));
    auto name = fmt::format("%{} = {}", in.result, op_name(in.op));
    int arity = op_arity(in.op);
    for (int i = 0; i < arity; ++i)
      if (!use(in.operands[i], name.c_str())) return false;
    auto t0 = arity > 0 ? type_of(in.operands[0]) : in.type;
    auto t1 = arity > 1 ? type_of(in.operands[1]) : in.type;
    // bf16 is stored, loaded and converted to or from f32, nothing else (types.h).
    if ((in.type == Type::BF16 || t0 == Type::BF16 || t1 == Type::BF16) && in.op != Op::LoadBuffer &&
        !(in.op == Op::Convert && (in.type == Type::F32 || t0 == Type::F32)))
      return fail(name + ": bf16 values are only loaded, stored and converted to or from f32");
    switch (in.op) {
      case Op::Const: break;
      case Op::ReadBuiltin:
        if (in.index > uint32_t(Builtin::SubgroupLocalId) || in.type != Type::U32) return fail(name + ": bad builtin");
        break;
      case Op::ReadScalar:
        if (in.index >= k.scalars.size() || k.scalars[in.index].type != in.type) return fail(name + ": bad scalar index/type");
        break;
      case Op::LoadVar:
        if (in.index >= k.vars.size() || k.vars[in.index].type != in.type) return fail(name + ": bad variable index/type");
        break;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max:
        if (t0 != t1 || t0 != in.type || in.type == Type::Bool) return fail(name + ": operand types must match the result and be numeric");
        break;
      case Op::Pow:
        if (t0 != t1 || t0 != in.type || !is_float(in.type)) return fail(name + ": pow needs float operands of the result type");
        break;
      case Op::And: case Op::Or: case Op::Xor:
        if (t0 != t1 || t0 != in.type || is_float(in.type)) return fail(name + ": bitwise ops need int or bool operands of the result type");
        break;
      case Op::Shl: case Op::Shr:
        if (t0 != t1 || t0 != in.type || !is_int(in.type)) return fail(name + ": shifts need int operands of the result type");
        break;
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
        if (t0 != t1 || in.type != Type::Bool) return fail(name + ": comparison needs same-type operands and a bool result");
        if (t0 == Type::Bool && in.op != Op::Eq && in.op != Op::Ne) return fail(name + ": ordering compare of bools");
        break;
      case Op::Neg: case Op::Abs:
        if (t0 != in.type || in.type == Type::Bool || in.type == Type::U32) return fail(name + ": needs a signed numeric operand of the result type");
        break;
      case Op::Not:
        if (t0 != in.type || is_float(in.type)) return fail(name + ": not needs an int or bool operand");
        break;
      case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt: case Op::Tanh: case Op::Floor:
        if (t0 != in.type || !is_float(in.type)) return fail(name + ": needs a float operand of the result type");
        break;
      case Op::Select:
        if (t0 != Type::Bool || t1 != in.type || type_of(in.operands[2]) != in.type) return fail(name + ": select(bool, T, T) -> T");
        break;
      case Op::Fma:
        if (t0 != in.type || t1 != in.type || type_of(in.operands[2]) != in.type || !is_float(in.type))
          return fail(name + ": fma(T, T, T) -> T on floats");
        break;
      case Op::Convert:
        if (t0 == Type::Bool || in.type == Type::Bool) return fail(name + ": convert from/to bool: use select or a comparison");
        break;
      case Op::LoadBuffer:
        if (in.index >= k.buffers.size()) return fail(name + ": buffer index out of range");
        if (k.buffers[in.index].elem != in.type) return fail(name + ": type differs from the buffer's element type");
        if (k.buffers[in.index].access == Access::Write) return fail(name + ": load from write-only buffer " + k.buffers[in.index].name);
        if (!index_ok(in.operands[0], name.c_str())) return false;
        break;
      case Op::LoadShared:
        if (in.index >= k.shared.size() || k.shared[in.index].elem != in.type) return fail(name + ": bad shared array index/type");
        if (!index_ok(in.operands[0], name.c_str())) return false;
        break;
      case Op::AtomicAdd:
        if (in.index >= k.buffers.size() || k.buffers[in.index].elem != in.type || t1 != in.type)
          return fail(name + ": atomic_add type differs from the buffer's element type");
        if (k.buffers[in.index].access != Access::ReadWrite) return fail(name + ": atomic_add needs a readwrite buffer");
        if (!index_ok(in.operands[0], name.c_str())) return false;
        if (in.type != Type::I32 && in.type != Type::U32 && in.type != Type::F32) return fail(name + ": atomic_add on i32, u32 or f32 only");
        break;
      case Op::ShuffleXor:
        if (t0 != in.type || in.type == Type::Bool || t1 != Type::U32) return fail(name + ": shuffle_xor(T value, u32 mask) -> T");
        break;
      case Op::EpilogueTap:
        if (in.index >= k.buffers.size() || k.buffers[in.index].access == Access::Read)
          return fail(name + ": taps the epilogue of a result buffer (written), which this index is not");
        if (k.buffers[in.index].elem != in.type || t1 != in.type)
          return fail(name + ": epilogue_tap(index, T value) -> T, T the buffer's element type");
        if (!index_ok(in.operands[0], name.c_str())) return false;
        break;
      case Op::MatrixElement:
        if (in.index >= k.fragments.size() || !is_warpgroup_accumulator(in.index))
          return fail(name + ": reads elements of warpgroup accumulators only");
        if (in.type != Type::F32 || in.imm.i < 0 || in.imm.i >= int64_t(k.fragments[in.index].columns / 2))
          return fail(fmt::format("{}: element {} of {} (f32, 0 .. {})", name, in.imm.i, k.fragments[in.index].name,
                                  k.fragments[in.index].columns / 2 - 1));
        break;
    }
    scopes.back().insert(in.result);
    defined_anywhere.insert(in.result);
    return true;
  }

  bool block(const Block& b) {
    scopes.emplace_back();
    for (const auto& s : b.stmts) {
      bool ok = std::visit([&](const auto& st) { return stmt(st); }, s);
      if (!ok) return false;
    }
    scopes.pop_back();
    return true;
  }

  bool stmt(const Instr& in) { return instr(in); }
  bool stmt(const StoreBuffer& s) {
    if (s.buffer >= k.buffers.size()) return fail("store: buffer index out of range");
    const auto& b = k.buffers[s.buffer];
    if (b.access == Access::Read) return fail("store to read-only buffer " + b.name);
    if (!index_ok(s.index, "store") || !use(s.value, "store")) return false;
    if (type_of(s.value) != b.elem) return fail(fmt::format("store to {}: value is {}, buffer holds {}", b.name, dtype_name(type_of(s.value)), dtype_name(b.elem)));
    return true;
  }
  bool stmt(const StoreShared& s) {
    if (s.array >= k.shared.size()) return fail("store_shared: array index out of range");
    if (!index_ok(s.index, "store_shared") || !use(s.value, "store_shared")) return false;
    if (type_of(s.value) != k.shared[s.array].elem) return fail("store_shared: value type differs from the array's element type");
    return true;
  }
  // A vector load of `lanes` 32-bit (or, from a buffer, 16-bit) elements of type t from `index` into `results`, each
  // defined here.
  bool vector_load_ok(const std::string& what, Type t, ValueId index, const std::vector<ValueId>& results,
                      bool sixteen_bit = false) {
    if (results.size() != 2 && results.size() != 4) return fail(fmt::format("{}: {} lanes (2 or 4)", what, results.size()));
    if (dtype_bytes(t) != 4 && !(sixteen_bit && dtype_bytes(t) == 2))
      return fail(fmt::format("{}: {} elements (32-bit{} only)", what, dtype_name(t), sixteen_bit ? " or 16-bit" : ""));
    if (!index_ok(index, what.c_str())) return false;
    return define_results(results, t, what);
  }
  bool stmt(const LoadSharedVector& s) {
    if (s.array >= k.shared.size()) return fail("load_shared_vector: array index out of range");
    return vector_load_ok("load_shared_vector " + k.shared[s.array].name, k.shared[s.array].elem, s.index, s.results);
  }
  bool stmt(const LoadBufferVector& s) {
    if (s.buffer >= k.buffers.size()) return fail("load_buffer_vector: buffer index out of range");
    const BufferParam& b = k.buffers[s.buffer];
    if (b.access == Access::Write) return fail("load_buffer_vector: from write-only buffer " + b.name);
    if (s.widen && b.elem != Type::F16 && b.elem != Type::BF16)
      return fail("load_buffer_vector " + b.name + ": widened from " + std::string(dtype_name(b.elem)) + " (f16 or bf16 only)");
    // (Widened, the results are f32.)
    return vector_load_ok("load_buffer_vector " + b.name, s.widen ? Type::F32 : b.elem, s.index, s.results,
                          /*sixteen_bit=*/true);
  }
  bool define_results(const std::vector<ValueId>& results, Type t, const std::string& what) {
    for (ValueId r : results) {
      if (r >= k.value_types.size() || k.value_types[r] != t)
        return fail(fmt::format("{}: result %{} is not a {}", what, r, dtype_name(t)));
      if (defined_anywhere.count(r)) return fail(fmt::format("%{} defined twice", r));
      scopes.back().insert(r);
      defined_anywhere.insert(r);
    }
    return true;
  }
  bool stmt(const StoreVar& s) {
    if (s.var >= k.vars.size()) return fail("storevar: variable out of range");
    if (!use(s.value, "storevar")) return false;
    if (type_of(s.value) != k.vars[s.var].type) return fail("storevar " + k.vars[s.var].name + ": type mismatch");
    return true;
  }
  bool stmt(const Barrier&) { return true; }
  bool stmt(const WaitForPriorKernels&) { return true; }  // (its place: verify_wait)
  bool fragment_ok(uint32_t f, const char* what) {
    if (f >= k.fragments.size()) return fail(fmt::format("{}: fragment {} does not exist", what, f));
    return true;
  }
  bool is_accumulator(uint32_t f) const { return k.fragments[f].use == MatrixUse::Accumulator; }
  bool is_warpgroup_accumulator(uint32_t f) const { return k.fragments[f].use == MatrixUse::WarpgroupAccumulator; }
  // The shared array and stride a fragment moves through: same element type, a stride of whole 16-byte units
  // and at least a row (what PTX's wmma and Vulkan's cooperative matrix loads require).
  bool matrix_memory_ok(uint32_t f, uint32_t array, ValueId index, uint32_t stride, const char* what) {
    if (!fragment_ok(f, what)) return false;
    if (array >= k.shared.size()) return fail(fmt::format("{}: shared array {} does not exist", what, array));
    const MatrixFragment& m = k.fragments[f];
    if (m.workgroup) return fail(fmt::format("{} {}: a workgroup matrix moves through buffers (matrix_load_tensor)", what, m.name));
    if (k.shared[array].elem != m.elem)
      return fail(fmt::format("{} {}: fragment holds {}, array {} holds {}", what, m.name, dtype_name(m.elem),
                              k.shared[array].name, dtype_name(k.shared[array].elem)));
    const uint32_t bytes = dtype_bytes(m.elem);
    if (stride < kMatrixTile || (stride * bytes) % 16 != 0)
      return fail(fmt::format("{} {}: stride {} must be at least {} and a multiple of 16 bytes", what, m.name, stride,
                              kMatrixTile));
    return index_ok(index, what);
  }
  bool stmt(const MatrixFill& s) {
    if (!fragment_ok(s.fragment, "matrix_fill") || !use(s.value, "matrix_fill")) return false;
    if (!is_accumulator(s.fragment) && !is_warpgroup_accumulator(s.fragment))
      return fail("matrix_fill: only accumulators are filled");
    if (type_of(s.value) != Type::F32) return fail("matrix_fill: the value must be f32");
    return true;
  }
  bool stmt(const MatrixLoad& s) { return matrix_memory_ok(s.fragment, s.array, s.index, s.stride, "matrix_load"); }
  bool stmt(const MatrixStore& s) {
    if (!matrix_memory_ok(s.fragment, s.array, s.index, s.stride, "matrix_store")) return false;
    if (!is_accumulator(s.fragment)) return fail("matrix_store: only accumulators are stored");
    return true;
  }
  bool stmt(const CopyToShared& s) {
    if (s.array >= k.shared.size() || s.buffer >= k.buffers.size()) return fail("copy_to_shared: array or buffer out of range");
    if (k.shared[s.array].elem != k.buffers[s.buffer].elem)
      return fail(fmt::format("copy_to_shared: buffer {} holds {}, array {} holds {}", k.buffers[s.buffer].name,
                              dtype_name(k.buffers[s.buffer].elem), k.shared[s.array].name,
                              dtype_name(k.shared[s.array].elem)));
    if (k.buffers[s.buffer].access == Access::Write) return fail("copy_to_shared: from write-only buffer " + k.buffers[s.buffer].name);
    if (!k.features.has(Feature::AsyncCopy)) return fail("copy_to_shared: the kernel does not declare async-copy");
    if (!index_ok(s.dst, "copy_to_shared") || !index_ok(s.src, "copy_to_shared") || !use(s.valid, "copy_to_shared"))
      return false;
    if (type_of(s.valid) != Type::Bool) return fail("copy_to_shared: valid must be bool");
    return true;
  }
  bool stmt(const CopyCommit&) {
    return k.features.has(Feature::AsyncCopy) || fail("copy_commit: the kernel does not declare async-copy");
  }
  bool stmt(const CopyWait&) {
    return k.features.has(Feature::AsyncCopy) || fail("copy_wait: the kernel does not declare async-copy");
  }
  bool stmt(const MatrixMulAdd& s) {
    for (uint32_t f : {s.d, s.a, s.b, s.c})
      if (!fragment_ok(f, "matrix_mul_add")) return false;
    const auto& fs = k.fragments;
    if (!is_accumulator(s.d) || !is_accumulator(s.c) || fs[s.a].use != MatrixUse::A || fs[s.b].use != MatrixUse::B)
      return fail("matrix_mul_add: d = a x b + c needs accumulators d and c, an A fragment a and a B fragment b");
    if (fs[s.a].elem != fs[s.b].elem) return fail("matrix_mul_add: a and b hold different types");
    const bool wg = fs[s.d].workgroup;
    if (fs[s.a].workgroup != wg || fs[s.b].workgroup != wg || fs[s.c].workgroup != wg)
      return fail("matrix_mul_add: workgroup matrices multiply only with workgroup matrices");
    if (wg && (fs[s.a].rows != fs[s.d].rows || fs[s.c].rows != fs[s.d].rows || fs[s.b].columns != fs[s.d].columns ||
               fs[s.c].columns != fs[s.d].columns || fs[s.a].columns != fs[s.b].rows))
      return fail(fmt::format("matrix_mul_add: {} ({}x{}) = {} ({}x{}) x {} ({}x{}) + {} ({}x{}): sizes do not match",
                              fs[s.d].name, fs[s.d].rows, fs[s.d].columns, fs[s.a].name, fs[s.a].rows, fs[s.a].columns,
                              fs[s.b].name, fs[s.b].rows, fs[s.b].columns, fs[s.c].name, fs[s.c].rows, fs[s.c].columns));
    return true;
  }
  // The buffer a matrix moves from (load) or into: it exists, holds the fragment's type and is read or written so.
  bool matrix_buffer_ok(const MatrixFragment& m, uint32_t buffer, bool load, const char* what) {
    if (buffer >= k.buffers.size()) return fail(fmt::format("{}: buffer {} does not exist", what, buffer));
    const BufferParam& b = k.buffers[buffer];
    if (b.elem != m.elem)
      return fail(fmt::format("{} {}: fragment holds {}, buffer {} holds {}", what, m.name, dtype_name(m.elem), b.name,
                              dtype_name(b.elem)));
    if (b.access == (load ? Access::Write : Access::Read))
      return fail(fmt::format("{} {}: buffer {} is {}", what, m.name, b.name, access_name(b.access)));
    return true;
  }
  // A workgroup matrix's block of a buffer (kernel.h's MatrixLoadTensor and MatrixStoreTensor).
  template <class S>
  bool matrix_tensor_ok(const S& s, bool load, const char* what) {
    if (!fragment_ok(s.fragment, what)) return false;
    const MatrixFragment& m = k.fragments[s.fragment];
    if (!m.workgroup) return fail(fmt::format("{} {}: not a workgroup matrix", what, m.name));
    if (load == is_accumulator(s.fragment))
      return fail(fmt::format("{} {}: operands (a, b) are loaded, accumulators stored", what, m.name));
    if (!matrix_buffer_ok(m, s.buffer, load, what)) return false;
    for (ValueId v : {s.base, s.row, s.column, s.rows, s.columns}) {
      if (!use(v, what)) return false;
      if (type_of(v) != Type::U32) return fail(fmt::format("{} {}: base, row, column and sizes are u32", what, m.name));
    }
    return true;
  }
  bool stmt(const MatrixLoadTensor& s) { return matrix_tensor_ok(s, true, "matrix_load_tensor"); }
  bool stmt(const MatrixStoreTensor& s) { return matrix_tensor_ok(s, false, "matrix_store_tensor"); }
  // An operand fragment's packed share (kernel.h's MatrixLoadPacked and MatrixStorePacked).
  template <class S>
  bool matrix_packed_ok(const S& s, bool load, const char* what) {
    if (!fragment_ok(s.fragment, what)) return false;
    const MatrixFragment& m = k.fragments[s.fragment];
    if (m.workgroup || (m.use != MatrixUse::A && m.use != MatrixUse::B))
      return fail(fmt::format("{} {}: only subgroup A and B fragments are packed", what, m.name));
    return matrix_buffer_ok(m, s.buffer, load, what) && index_ok(s.index, what);
  }
  bool stmt(const MatrixLoadPacked& s) { return matrix_packed_ok(s, true, "matrix_load_packed"); }
  bool stmt(const MatrixStorePacked& s) { return matrix_packed_ok(s, false, "matrix_store_packed"); }
  bool warpgroup_operand_ok(const WarpgroupOperand& o, const char* which) {
    if (o.array >= k.shared.size()) return fail(fmt::format("warpgroup_mul_add: {}'s shared array does not exist", which));
    const SharedArray& a = k.shared[o.array];
    if (a.elem != Type::F16 && a.elem != Type::BF16)
      return fail(fmt::format("warpgroup_mul_add: {} ({}) holds {}, not f16 or bf16", which, a.name, dtype_name(a.elem)));
    // A swizzled K-major operand's rows hold all of a multiply's K, so it has no stride along K.
    const bool k_stride_used = !o.swizzled || o.mn_major;
    if (o.k_block_stride % 8 || o.mn_block_stride % 8 || (k_stride_used && o.k_block_stride == 0) || o.mn_block_stride == 0)
      return fail(fmt::format("warpgroup_mul_add: {}'s block strides ({}, {}) must be nonzero multiples of 8 elements",
                              which, o.k_block_stride, o.mn_block_stride));
    return index_ok(o.index, "warpgroup_mul_add");
  }
  bool stmt(const WarpgroupMulAdd& s) {
    if (!k.features.has(Feature::WarpgroupMatrix))
      return fail("warpgroup_mul_add: the kernel does not declare warpgroup-matrix");
    if (!fragment_ok(s.acc, "warpgroup_mul_add")) return false;
    if (!is_warpgroup_accumulator(s.acc)) return fail("warpgroup_mul_add: the accumulator is not a warpgroup accumulator");
    if (!warpgroup_operand_ok(s.a, "a") || !warpgroup_operand_ok(s.b, "b")) return false;
    if (k.shared[s.a.array].elem != k.shared[s.b.array].elem) return fail("warpgroup_mul_add: a and b hold different types");
    return true;
  }
  bool stmt(const WarpgroupCommit&) {
    return k.features.has(Feature::WarpgroupMatrix) || fail("warpgroup_commit: the kernel does not declare warpgroup-matrix");
  }
  bool stmt(const WarpgroupWait&) {
    return k.features.has(Feature::WarpgroupMatrix) || fail("warpgroup_wait: the kernel does not declare warpgroup-matrix");
  }
  bool barrier_ok(uint32_t barriers, ValueId barrier, const char* what) {
    if (!k.features.has(Feature::TensorCopy)) return fail(fmt::format("{}: the kernel does not declare tensor-copy", what));
    if (barriers >= k.arrival_barriers.size()) return fail(fmt::format("{}: arrival barriers {} do not exist", what, barriers));
    return index_ok(barrier, what);
  }
  bool stmt(const TensorCopy& s) {
    if (!barrier_ok(s.barriers, s.barrier, "tensor_copy")) return false;
    if (s.map >= k.tensor_maps.size()) return fail("tensor_copy: tensor map out of range");
    if (s.array >= k.shared.size()) return fail("tensor_copy: shared array out of range");
    const TensorMap& m = k.tensor_maps[s.map];
    if (k.shared[s.array].elem != k.buffers[m.buffer].elem)
      return fail(fmt::format("tensor_copy: map {} reads {}, array {} holds {}", m.name, dtype_name(k.buffers[m.buffer].elem),
                              k.shared[s.array].name, dtype_name(k.shared[s.array].elem)));
    if (s.coords.size() != m.extents.size())
      return fail(fmt::format("tensor_copy: map {} has {} dimensions, the copy gives {} coordinates", m.name,
                              m.extents.size(), s.coords.size()));
    for (ValueId c : s.coords)
      if (!index_ok(c, "tensor_copy")) return false;
    return index_ok(s.index, "tensor_copy");
  }
  bool stmt(const Arrive& s) { return barrier_ok(s.barriers, s.barrier, "arrive"); }
  bool stmt(const AwaitPhase& s) {
    if (!barrier_ok(s.barriers, s.barrier, "await_phase") || !use(s.parity, "await_phase")) return false;
    if (type_of(s.parity) != Type::U32) return fail("await_phase: the parity must be u32");
    return true;
  }
  bool stmt(const If& s) {
    if (!use(s.cond, "if") ) return false;
    if (type_of(s.cond) != Type::Bool) return fail("if: condition must be bool");
    if (!s.then_body || !block(*s.then_body)) return error.empty() ? fail("if: missing then block") : false;
    if (s.else_body && !block(*s.else_body)) return false;
    return true;
  }
  bool stmt(const For& s) {
    if (s.var >= k.vars.size()) return fail("for: variable out of range");
    Type t = k.vars[s.var].type;
    if (!is_int(t)) return fail("for: loop variable must be an integer");
    for (ValueId v : {s.begin, s.end, s.step}) {
      if (!use(v, "for")) return false;
      if (type_of(v) != t) return fail("for: begin/end/step must have the loop variable's type");
    }
    if (!s.body) return fail("for: missing body");
    return block(*s.body);
  }
};

}  // namespace

namespace {

// True when some statement of the block, or of a block nested in it, passes `pred`.
bool any_stmt(const Block& block, const std::function<bool(const Stmt&)>& pred) {
  for (const Stmt& s : block.stmts) {
    if (pred(s)) return true;
    if (const auto* i = std::get_if<If>(&s)) {
      if ((i->then_body && any_stmt(*i->then_body, pred)) || (i->else_body && any_stmt(*i->else_body, pred)))
        return true;
    } else if (const auto* f = std::get_if<For>(&s)) {
      if (any_stmt(*f->body, pred)) return true;
    }
  }
  return false;
}

}  // namespace

bool stores_matrices_into(const Kernel& k, uint32_t buffer) {
  return any_stmt(k.body, [&](const Stmt& s) {
    const auto* t = std::get_if<MatrixStoreTensor>(&s);
    return t && t->buffer == buffer;
  });
}

bool taps_epilogue_of(const Kernel& k, uint32_t buffer) {
  return any_stmt(k.body, [&](const Stmt& s) {
    const auto* in = std::get_if<Instr>(&s);
    return in && in->op == Op::EpilogueTap && in->index == buffer;
  });
}

bool moves_packed_fragments(const Kernel& k) {
  return any_stmt(k.body, [](const Stmt& s) {
    return std::holds_alternative<MatrixLoadPacked>(s) || std::holds_alternative<MatrixStorePacked>(s);
  });
}

bool places_wait(const Kernel& k) {
  return any_stmt(k.body, [](const Stmt& s) { return std::holds_alternative<WaitForPriorKernels>(s); });
}

bool writes_buffer(const Kernel& k, uint32_t buffer) {
  return any_stmt(k.body, [&](const Stmt& s) {
    if (const auto* st = std::get_if<StoreBuffer>(&s)) return st->buffer == buffer;
    if (const auto* t = std::get_if<MatrixStoreTensor>(&s)) return t->buffer == buffer;
    if (const auto* t = std::get_if<MatrixStorePacked>(&s)) return t->buffer == buffer;
    const auto* in = std::get_if<Instr>(&s);
    return in && in->op == Op::AtomicAdd && in->index == buffer;
  });
}

namespace {

// The buffer a statement reads or writes directly (not through nested blocks), if any.
struct BufferUse {
  uint32_t buffer;
  bool write;
};
std::optional<BufferUse> buffer_use(const Kernel& k, const Stmt& s) {
  if (const auto* in = std::get_if<Instr>(&s)) {
    if (in->op == Op::LoadBuffer) return BufferUse{in->index, false};
    if (in->op == Op::AtomicAdd || in->op == Op::EpilogueTap) return BufferUse{in->index, true};
  }
  if (const auto* l = std::get_if<LoadBufferVector>(&s)) return BufferUse{l->buffer, false};
  if (const auto* c = std::get_if<CopyToShared>(&s)) return BufferUse{c->buffer, false};
  if (const auto* t = std::get_if<TensorCopy>(&s); t && t->map < k.tensor_maps.size())
    return BufferUse{k.tensor_maps[t->map].buffer, false};
  if (const auto* l = std::get_if<MatrixLoadTensor>(&s)) return BufferUse{l->buffer, false};
  if (const auto* l = std::get_if<MatrixLoadPacked>(&s)) return BufferUse{l->buffer, false};
  if (const auto* st = std::get_if<StoreBuffer>(&s)) return BufferUse{st->buffer, true};
  if (const auto* st = std::get_if<MatrixStoreTensor>(&s)) return BufferUse{st->buffer, true};
  if (const auto* st = std::get_if<MatrixStorePacked>(&s)) return BufferUse{st->buffer, true};
  return std::nullopt;
}

// kernel.h's WaitForPriorKernels: at most one, outside loops; before it, in program order, no store and no read of a
// buffer not marked read_before_wait; a buffer so marked is read-only.
std::string verify_wait(const Kernel& k) {
  for (const auto& b : k.buffers)
    if (b.read_before_wait && b.access != Access::Read)
      return "buffer " + b.name + " is read before the kernel's wait but is not read-only";
  bool waited = !places_wait(k);
  int waits = 0;
  std::string error;
  std::function<void(const Block&, bool)> walk = [&](const Block& b, bool in_loop) {
    for (const Stmt& s : b.stmts) {
      if (!error.empty()) return;
      if (std::holds_alternative<WaitForPriorKernels>(s)) {
        if (in_loop) error = "wait_for_prior_kernels inside a loop";
        if (++waits > 1) error = "more than one wait_for_prior_kernels";
        waited = true;
      } else if (auto use = buffer_use(k, s); use && !waited && use->buffer < k.buffers.size()) {
        const BufferParam& buf = k.buffers[use->buffer];
        if (use->write) error = "buffer " + buf.name + " is written before the kernel's wait_for_prior_kernels";
        else if (!buf.read_before_wait)
          error = "buffer " + buf.name + " is read before the kernel's wait_for_prior_kernels but is not marked "
                  "read_before_wait";
      } else if (const auto* i = std::get_if<If>(&s)) {
        walk(*i->then_body, in_loop);
        if (i->else_body) walk(*i->else_body, in_loop);
      } else if (const auto* f = std::get_if<For>(&s)) {
        walk(*f->body, true);
      }
    }
  };
  walk(k.body, false);
  return error;
}

}  // namespace

std::string verify(const Kernel& k) {
  if (k.name.empty()) return "kernel has no name";
  for (uint32_t d : k.workgroup_size)
    if (d == 0) return "workgroup size has a zero dimension";
  for (const auto& b : k.buffers)
    if (b.elem == Type::Bool) return "buffer " + b.name + " holds bool; use u32";
  for (const auto& s : k.shared)
    if (s.elem == Type::Bool || s.count == 0) return "shared array " + s.name + " must hold a non-bool type and at least one element";
  for (const auto& s : k.scalars)
    if (s.type == Type::Bool) return "scalar " + s.name + " is bool; use u32";
  // bf16 lives in buffers only: 16-bit words in workgroup memory, push constants or variables would need
  // capabilities beyond 16-bit storage on Vulkan. Kernels with cooperative matrices stage their bf16 operands in
  // workgroup memory, which every device with that feature has.
  const bool matrices = k.features.has(Feature::CooperativeMatrix) || k.features.has(Feature::WarpgroupMatrix) ||
                        k.features.has(Feature::WorkgroupMatrix);
  for (const auto& s : k.shared)
    if (s.elem == Type::BF16 && !matrices) return "shared array " + s.name + " holds bf16; stage it as f32";
  bool warpgroups = false;
  for (const auto& f : k.fragments) {
    // f32 operands of a subgroup fragment are multiplied as TF32 (10-bit mantissas, f32 sums): the tf32 precision
    // policy on tensor cores (base/precision.h). Only PTX has them (wmma m16n16k8); Vulkan's matrices do not.
    const bool operand_type =
        f.elem == Type::F16 || f.elem == Type::BF16 || (f.elem == Type::F32 && !f.workgroup);
    const bool accumulator = f.use == MatrixUse::Accumulator || f.use == MatrixUse::WarpgroupAccumulator;
    if (accumulator ? f.elem != Type::F32 : !operand_type)
      return fmt::format("fragment {} ({}) holds {}: operands hold f16, bf16 or (subgroup fragments, TF32) f32, "
                         "accumulators f32", f.name, matrix_use_name(f.use), dtype_name(f.elem));
    if (f.workgroup) {
      if (f.use == MatrixUse::WarpgroupAccumulator || f.rows % kMatrixTile || f.columns % kMatrixTile || f.rows == 0 ||
          f.columns == 0 || f.rows > kWorkgroupMatrixMax || f.columns > kWorkgroupMatrixMax)
        return fmt::format("workgroup matrix {} ({}) is {} x {}: a, b or accumulator of 16 to {} rows and columns, "
                           "multiples of 16", f.name, matrix_use_name(f.use), f.rows, f.columns, kWorkgroupMatrixMax);
      if (!k.features.has(Feature::WorkgroupMatrix))
        return "kernel has workgroup matrices but does not declare workgroup-matrix";
      continue;
    }
    if (f.rows != kMatrixTile || (f.use != MatrixUse::WarpgroupAccumulator && f.columns != kMatrixTile))
      return fmt::format("fragment {} is {} x {}: subgroup fragments are 16 x 16", f.name, f.rows, f.columns);
    if (f.use != MatrixUse::WarpgroupAccumulator) {
      if (!k.features.has(Feature::CooperativeMatrix))
        return "kernel has matrix fragments but does not declare cooperative-matrix";
      continue;
    }
    warpgroups = true;
    if (f.columns == 0 || f.columns % 8 || f.columns > kWarpgroupMaxColumns)
      return fmt::format("warpgroup accumulator {} has {} columns: 8 to {}, a multiple of 8", f.name, f.columns,
                         kWarpgroupMaxColumns);
  }
  if (warpgroups && !k.features.has(Feature::WarpgroupMatrix))
    return "kernel has warpgroup accumulators but does not declare warpgroup-matrix";
  if (k.features.has(Feature::WarpgroupMatrix) && k.workgroup_invocations() % kWarpgroupInvocations)
    return fmt::format("kernel declares warpgroup-matrix with {} invocations per workgroup, not whole warpgroups of {}",
                       k.workgroup_invocations(), kWarpgroupInvocations);
  if ((!k.tensor_maps.empty() || !k.arrival_barriers.empty()) && !k.features.has(Feature::TensorCopy))
    return "kernel has tensor maps or arrival barriers but does not declare tensor-copy";
  for (const auto& m : k.tensor_maps) {
    if (m.buffer >= k.buffers.size()) return "tensor map " + m.name + " reads a buffer that does not exist";
    const uint32_t bytes = dtype_bytes(k.buffers[m.buffer].elem);
    const size_t rank = m.extents.size();
    if (rank < 1 || rank > 3 || m.strides.size() != rank - 1 || m.box.size() != rank)
      return fmt::format("tensor map {}: 1 to 3 dimensions, each with a box size and all but the first with a stride",
                         m.name);
    if (bytes != 2 && bytes != 4) return "tensor map " + m.name + " reads a buffer of 8-byte or 1-byte elements";
    for (uint64_t st : m.strides)
      if (st == 0 || st * bytes % 16) return fmt::format("tensor map {}: stride {} is not a nonzero multiple of 16 bytes", m.name, st);
    for (uint32_t b : m.box)
      if (b == 0 || b > 256) return fmt::format("tensor map {}: box dimension {} is not 1 to 256", m.name, b);
    if (m.box[0] * bytes % 16) return fmt::format("tensor map {}: box rows of {} elements are not whole 16 bytes", m.name, m.box[0]);
    if (m.swizzle_128 && m.box[0] * bytes != 128)
      return fmt::format("tensor map {}: a 128-byte swizzle needs box rows of 128 bytes, not {}", m.name, m.box[0] * bytes);
  }
  for (const auto& b : k.arrival_barriers)
    if (b.count == 0 || b.arrivals == 0 || b.arrivals > k.workgroup_invocations())
      return fmt::format("arrival barriers {}: {} of them, each awaiting {} of the workgroup's {} invocations", b.name,
                         b.count, b.arrivals, k.workgroup_invocations());
  for (const auto& s : k.scalars)
    if (s.type == Type::BF16) return "scalar " + s.name + " is bf16; pass it as f32";
  for (const auto& v : k.vars)
    if (v.type == Type::BF16) return "variable " + v.name + " is bf16; keep it as f32";
  Features implied;
  auto add = [&](Type t) { implied |= features_for_type(t); };
  for (const auto& b : k.buffers) add(b.elem);
  for (const auto& s : k.scalars) add(s.type);
  for (const auto& s : k.shared) add(s.elem);
  for (Type t : k.value_types) add(t);
  for (const auto& f : k.fragments) add(f.elem);
  auto missing = implied.missing_from(k.features);
  if (!missing.empty()) return "kernel uses types needing undeclared features: " + features_to_string(missing);
  Verifier v{k, {}, {}, {}};
  v.block(k.body);
  if (!v.error.empty()) return v.error;
  return verify_wait(k);
}

}  // namespace spire::kir
