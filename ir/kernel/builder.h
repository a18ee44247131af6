// A C++ builder that makes a kernel read like the code it is:
//
//   KernelBuilder kb("relu", {256});
//   auto x = kb.buffer("x", Type::F32, Access::Read);
//   auto y = kb.buffer("y", Type::F32, Access::Write);
//   auto n = kb.scalar("n", Type::U32);
//   auto i = kb.global_id();
//   kb.if_(i < n, [&] { y[i] = max(x[i], 0.0f); });
//   Kernel k = kb.finish();
//
// Operands of a binary op must have the same type; a C++ number next to a Val takes the Val's type.
// Conversions are explicit: cast(v, Type::F32).
//
// Buffer indices are element positions, never results of 32-bit wraparound: an index x + c (or x - c) with a
// constant c must have x itself be a position (x - c may not wrap below zero to be brought back by the + c). The PTX
// backend puts such a c into the access's immediate offset, adding it to x's address in 64 bits
// (backends/ptx/ptx_translator.h, ConstantOffset). An i32 x may be negative (it is widened signed).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::kir {

class KernelBuilder;

// What each of the builder's handles (a value, a buffer or shared array, a variable) holds: the builder it belongs
// to, its number there and its type.
template <class Id, Id kNone, Type kDefaultType>
class BuilderHandle {
 public:
  BuilderHandle() = default;
  BuilderHandle(KernelBuilder* b, Id id, Type t) : b_(b), id_(id), type_(t) {}
  KernelBuilder* builder() const { return b_; }

 protected:
  KernelBuilder* b_ = nullptr;
  Id id_ = kNone;
  Type type_ = kDefaultType;
};

// An SSA value under construction.
class Val : public BuilderHandle<ValueId, kNoValue, Type::U32> {
 public:
  using BuilderHandle::BuilderHandle;
  ValueId id() const { return id_; }
  Type type() const { return type_; }
  bool valid() const { return b_ != nullptr; }
};

template <class T>
concept Number = std::is_arithmetic_v<T>;

// Element reference of a buffer or shared array: reads when converted to Val, writes on assignment.
class ElemRef {
 public:
  ElemRef(KernelBuilder* b, bool shared, uint32_t index, Val elem) : b_(b), shared_(shared), index_(index), elem_(elem) {}
  Val load() const;
  operator Val() const { return load(); }
  const ElemRef& operator=(Val v) const;
  // Copying an element reference copies the element (never rebinds the reference).
  const ElemRef& operator=(const ElemRef& other) const { return *this = other.load(); }
  const ElemRef& operator=(const ElemRef& other) { return std::as_const(*this) = other.load(); }
  ElemRef(const ElemRef&) = default;
  template <Number T> const ElemRef& operator=(T c) const;
  const ElemRef& operator+=(Val v) const;

 private:
  KernelBuilder* b_;
  bool shared_;
  uint32_t index_;
  Val elem_;
};

// A buffer's or a shared array's handle: its index among the kernel's buffers or shared arrays, and its element type.
class ArrayHandle : public BuilderHandle<uint32_t, 0, Type::F32> {
 public:
  using BuilderHandle::BuilderHandle;
  uint32_t index() const { return id_; }
  Type elem() const { return type_; }
};

class Buf : public ArrayHandle {
 public:
  using ArrayHandle::ArrayHandle;
  ElemRef operator[](Val i) const { return ElemRef(b_, false, id_, i); }
  template <Number T> ElemRef operator[](T i) const;
  // Atomically adds v to element i and returns the old value.
  Val atomic_add(Val i, Val v) const;
  // `lanes` (2 or 4) consecutive elements from element i on, i a multiple of lanes (kernel.h's LoadBufferVector).
  std::vector<Val> load_vector(Val i, uint32_t lanes) const;
  // The same of an f16 or bf16 buffer, each element converted to f32 (kernel.h's LoadBufferVector::widen).
  std::vector<Val> load_vector_widened(Val i, uint32_t lanes) const;
};

class Shared : public ArrayHandle {
 public:
  using ArrayHandle::ArrayHandle;
  ElemRef operator[](Val i) const { return ElemRef(b_, true, id_, i); }
  template <Number T> ElemRef operator[](T i) const;
  // `lanes` (2 or 4) consecutive elements from element i on, i a multiple of lanes (kernel.h's LoadSharedVector).
  std::vector<Val> load_vector(Val i, uint32_t lanes) const;
};

// A cooperative matrix fragment (kernel.h's MatrixFragment), named by its index.
struct Fragment {
  uint32_t index = 0;
};

// A mutable local variable.
class Var : public BuilderHandle<VarId, 0, Type::F32> {
 public:
  using BuilderHandle::BuilderHandle;
  Var() = default;
  VarId id() const { return id_; }
  Type type() const { return type_; }
  Val get() const;
  operator Val() const { return get(); }
  // Stores: of a value, a constant, or the sum of the variable and either.
  const Var& operator=(Val v) const;
  template <Number T> const Var& operator=(T c) const;
  const Var& operator+=(Val v) const;
  template <Number T> const Var& operator+=(T c) const;
  // Assigning a Var stores its value (never rebinds): `acc = other` is a store into acc.
  const Var& operator=(const Var& other) const { return *this = other.get(); }
  const Var& operator=(const Var& other) { return std::as_const(*this) = other.get(); }
  Var(const Var&) = default;
};

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name, std::array<uint32_t, 3> workgroup_size = {64, 1, 1});
  explicit KernelBuilder(std::string name, uint32_t workgroup_size) : KernelBuilder(std::move(name), {workgroup_size, 1, 1}) {}
  // Goes on building a finished kernel (its parameters, values and body kept): how a template's kernel is
  // rewritten after the fact, e.g. with a pointwise epilogue fused into its stores (rewrite_stores).
  explicit KernelBuilder(Kernel existing);
  // Blocks point into the kernel this builder owns: a copy or a move would leave them pointing at the old one.
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  // Gives every store into buffer `buffer` the value `replace` returns; what `replace` emits (loads of new
  // buffers, arithmetic) goes right before that store, in its block. `replace` receives the store's element
  // index and value. Throws std::invalid_argument when the kernel also reads or atomically updates the buffer:
  // a store is then not the element's final value, so rewriting it would change what the kernel computes.
  // With `store_as`, the buffer holds that type from now on and `replace` returns values of it (an epilogue that
  // rounds an f32 product to bf16); the old stores are its only writes, so nothing else sees the change.
  void rewrite_stores(uint32_t buffer, const std::function<Val(Val index, Val value)>& replace,
                      std::optional<Type> store_as = std::nullopt);
  // The other way round: every element load from buffer `buffer` takes the value `replace` returns for its element
  // index instead; what `replace` emits goes right before that load, in its block (a pointwise prologue fused into a
  // reduction's loads). The buffer stays declared but is no longer read. Throws std::invalid_argument when the
  // kernel also writes the buffer, reads it other than element by element (vector loads, copies, matrices), or
  // `replace` returns a value of another type than the buffer's.
  void rewrite_loads(uint32_t buffer, const std::function<Val(Val index)>& replace);
  // Every tap of buffer `buffer`'s epilogue (epilogue_tap) takes the value `replace` returns for its element index and
  // value; what `replace` emits goes right before the tap, in its block. Throws std::invalid_argument when `replace`
  // returns a value of another type than the buffer's.
  void rewrite_taps(uint32_t buffer, const std::function<Val(Val index, Val value)>& replace);

  // Parameters and storage.
  Buf buffer(std::string name, Type elem, Access access);
  Val scalar(std::string name, Type type);
  Shared shared(std::string name, Type elem, uint32_t count);
  Var var(std::string name, Type type);
  // kernel.h's LoadSharedVector: `lanes` consecutive elements of `array` from `index` (a multiple of lanes) on.
  std::vector<Val> load_shared_vector(const Shared& array, Val index, uint32_t lanes);
  // kernel.h's LoadBufferVector.
  std::vector<Val> load_buffer_vector(const Buf& buffer, Val index, uint32_t lanes, bool widen = false);
  Var var(std::string name, Val init);
  void require(Features f) { k_.features |= f; }
  // kernel.h's Kernel::min_workgroups_per_core.
  void request_workgroups_per_core(uint32_t n) { k_.min_workgroups_per_core = n; }
  // kernel.h's Kernel::barriers_order_buffers = false.
  void barriers_order_workgroup_memory_only() { k_.barriers_order_buffers = false; }

  // Cooperative matrices (kernel.h; each declares Feature::CooperativeMatrix). Every invocation of the subgroup
  // runs these together, with the same index.
  Fragment fragment(std::string name, MatrixUse use, Type elem, bool column_major = false);
  void matrix_fill(Fragment f, Val value);
  void matrix_load(Fragment f, const Shared& array, Val index, uint32_t stride);
  void matrix_store(const Shared& array, Val index, uint32_t stride, Fragment f);
  void matrix_mul_add(Fragment d, Fragment a, Fragment b, Fragment c);
  // Workgroup matrices (kernel.h; each declares Feature::WorkgroupMatrix). Every invocation of the workgroup runs
  // these (and matrix_fill / matrix_mul_add on them) together, with the same operands.
  Fragment workgroup_matrix(std::string name, MatrixUse use, Type elem, uint32_t rows, uint32_t columns,
                            bool column_major = false);
  // kernel.h's MatrixLoadTensor / MatrixStoreTensor: the block at (row, column) of `buffer` from element `base` on,
  // viewed as a rows x columns row-major matrix (its transpose for a column-major fragment).
  void matrix_load_tensor(Fragment f, const Buf& buffer, Val base, Val row, Val column, Val rows, Val columns);
  void matrix_store_tensor(const Buf& buffer, Val base, Val row, Val column, Val rows, Val columns, Fragment f);
  // kernel.h's MatrixLoadPacked / MatrixStorePacked: this invocation's share of an operand fragment as the 16 bytes
  // at `index` (its own element index, a multiple of kPackedShare), in the device's order.
  void matrix_load_packed(Fragment f, const Buf& buffer, Val index);
  void matrix_store_packed(const Buf& buffer, Val index, Fragment f);
  // kernel.h's CopyToShared (declares Feature::AsyncCopy): 16 bytes of `from` at element src into `to` at dst,
  // zeros where `valid` is false; it lands by a copy_wait covering its batch (see kernel.h).
  void copy_to_shared(const Shared& to, Val dst, const Buf& from, Val src, Val valid);
  void copy_commit();                  // closes the open batch of copies
  void copy_wait(uint32_t pending);    // until at most `pending` closed batches are in flight
  // Warpgroup matrices (kernel.h's WarpgroupMulAdd; each declares Feature::WarpgroupMatrix). Every invocation of
  // the warpgroup runs these together, with the same operands.
  Fragment warpgroup_accumulator(std::string name, uint32_t columns);
  struct WarpgroupTile {
    const Shared& array;
    Val index;
    uint32_t k_block_stride, mn_block_stride;
    bool mn_major;
    bool swizzled = false;
  };
  void warpgroup_mul_add(Fragment acc, const WarpgroupTile& a, const WarpgroupTile& b);
  void warpgroup_commit();
  void warpgroup_wait(uint32_t pending);
  Val matrix_element(Fragment acc, uint32_t element);  // kernel.h's Op::MatrixElement
  // Tensor copies and arrival barriers (kernel.h's TensorMap, ArrivalBarriers, TensorCopy, Arrive, AwaitPhase; each
  // declares Feature::TensorCopy). Declarations return their index.
  uint32_t tensor_map(std::string name, const Buf& buffer, std::vector<uint64_t> extents, std::vector<uint64_t> strides,
                      std::vector<uint32_t> box, bool swizzle_128);
  uint32_t arrival_barriers(std::string name, uint32_t count, uint32_t arrivals);
  void tensor_copy(const Shared& to, Val index, uint32_t map, const std::vector<Val>& coords, uint32_t barriers, Val barrier);
  void arrive(uint32_t barriers, Val barrier, uint32_t expect_bytes = 0);
  void await_phase(uint32_t barriers, Val barrier, Val parity);

  // Builtins (u32, linear; see kernel.h's grid model).
  Val global_id() { return builtin(Builtin::GlobalId); }
  Val local_id() { return builtin(Builtin::LocalId); }
  Val group_id() { return builtin(Builtin::GroupId); }
  Val num_groups() { return builtin(Builtin::NumGroups); }
  Val workgroup_size() { return builtin(Builtin::WorkgroupSize); }
  Val global_size() { return builtin(Builtin::GlobalSize); }
  // Subgroup builtins and shuffles declare Feature::SubgroupShuffle (see Op::ShuffleXor for the rules).
  Val subgroup_size() { return builtin(Builtin::SubgroupSize); }
  Val subgroup_id() { return builtin(Builtin::SubgroupId); }
  Val subgroup_local_id() { return builtin(Builtin::SubgroupLocalId); }
  Val shuffle_xor(Val value, uint32_t mask);
  Val builtin(Builtin b);
  // What result buffer `result`'s epilogue makes of `value` at element `index` (kernel.h's Op::EpilogueTap): `value`
  // until the lowering folds an epilogue in. A kernel that taps a buffer stores the tapped values into it.
  Val epilogue_tap(const Buf& result, Val index, Val value);

  // Constants.
  Val constant(Type t, double v);
  Val f32(float v) { return constant(Type::F32, v); }
  Val f64(double v) { return constant(Type::F64, v); }
  Val i32(int32_t v) { return constant(Type::I32, v); }
  Val u32(uint32_t v) { return constant(Type::U32, v); }
  Val i64(int64_t v);
  Val boolean(bool v) { return constant(Type::Bool, v ? 1 : 0); }

  // Structured control flow.
  void if_(Val cond, const std::function<void()>& then_body);
  void if_else(Val cond, const std::function<void()>& then_body, const std::function<void()>& else_body);
  // for (i = begin; i < end; i += step), step > 0; i has begin's type.
  void for_(Val begin, Val end, Val step, const std::function<void(Val)>& body);
  void for_(Val begin, Val end, const std::function<void(Val)>& body);
  void barrier();
  // kernel.h's WaitForPriorKernels; the buffers read before it are marked first (read_before_wait).
  void read_before_wait(const Buf& buffer);
  void wait_for_prior_kernels();

  // Low level: appends a value-defining instruction to the current block.
  Val emit(Op op, Type type, std::initializer_list<Val> operands, uint32_t index = 0);
  void emit_stmt(Stmt s);
  void emit_stmt(Feature needs, Stmt s);  // a statement only devices with that feature run

  // Verifies and returns the kernel; throws std::invalid_argument with the verifier's message on error.
  Kernel finish();
  const Kernel& peek() const { return k_; }

 private:
  Block* current() { return blocks_.back(); }
  // `lanes` fresh values of type t, their ids appended to `results` (of a vector load `what` from `index`).
  std::vector<Val> vector_results(std::vector<ValueId>& results, Type t, Val index, uint32_t lanes, const char* what);
  void rewrite_stores_in(Block& block, uint32_t buffer, const std::function<Val(Val, Val)>& replace);
  void rewrite_loads_in(Block& block, uint32_t buffer, const std::function<Val(Val)>& replace);
  // Replaces the values of the instructions `matches` picks by what `value_of` returns for each (emitted right before
  // it): the instruction keeps its id, as a select of the new value with itself (rewrite_loads, rewrite_taps).
  void replace_values(Block& block, const std::function<bool(const Instr&)>& matches,
                      const std::function<Val(const Instr&)>& value_of);
  // Every statement of `block` (nested blocks included) that `matches`: `emit` builds what goes right before it (into
  // a prelude block) and returns how to change the statement itself once the prelude is in place.
  void rewrite_each(Block& block, const std::function<bool(const Stmt&)>& matches,
                    const std::function<std::function<void(Stmt&)>(const Stmt&)>& emit);
  Kernel k_;
  std::vector<Block*> blocks_;
  bool finished_ = false;
};

// Arithmetic (same-type operands; numbers take the Val's type).
Val operator+(Val a, Val b);
Val operator-(Val a, Val b);
Val operator*(Val a, Val b);
Val operator/(Val a, Val b);
Val operator%(Val a, Val b);
Val operator&(Val a, Val b);
Val operator|(Val a, Val b);
Val operator^(Val a, Val b);
Val operator<<(Val a, Val b);
Val operator>>(Val a, Val b);
Val operator-(Val a);
Val operator!(Val a);
Val operator<(Val a, Val b);
Val operator<=(Val a, Val b);
Val operator>(Val a, Val b);
Val operator>=(Val a, Val b);
Val operator==(Val a, Val b);
Val operator!=(Val a, Val b);

Val min(Val a, Val b);
Val max(Val a, Val b);
Val pow(Val a, Val b);
Val exp(Val a);
Val log(Val a);
Val sqrt(Val a);
Val rsqrt(Val a);
Val tanh(Val a);
Val abs(Val a);
Val floor(Val a);
Val select(Val cond, Val a, Val b);
Val fma(Val a, Val b, Val c);  // a * b + c, rounded once (kir::Op::Fma)
Val cast(Val a, Type t);

// A number as a constant of v's type.
Val like(Val v, double c);

#define SPIRE_KIR_NUMBER_OPS(OP)                                             \
  template <Number T> Val operator OP(Val a, T c) { return a OP like(a, double(c)); } \
  template <Number T> Val operator OP(T c, Val a) { return like(a, double(c)) OP a; }
SPIRE_KIR_NUMBER_OPS(+)
SPIRE_KIR_NUMBER_OPS(-)
SPIRE_KIR_NUMBER_OPS(*)
SPIRE_KIR_NUMBER_OPS(/)
SPIRE_KIR_NUMBER_OPS(%)
SPIRE_KIR_NUMBER_OPS(&)
SPIRE_KIR_NUMBER_OPS(|)
SPIRE_KIR_NUMBER_OPS(<<)
SPIRE_KIR_NUMBER_OPS(>>)
SPIRE_KIR_NUMBER_OPS(<)
SPIRE_KIR_NUMBER_OPS(<=)
SPIRE_KIR_NUMBER_OPS(>)
SPIRE_KIR_NUMBER_OPS(>=)
SPIRE_KIR_NUMBER_OPS(==)
SPIRE_KIR_NUMBER_OPS(!=)
#undef SPIRE_KIR_NUMBER_OPS
template <Number T> Val min(Val a, T c) { return min(a, like(a, double(c))); }
template <Number T> Val max(Val a, T c) { return max(a, like(a, double(c))); }
template <Number T> Val min(T c, Val a) { return min(like(a, double(c)), a); }
template <Number T> Val max(T c, Val a) { return max(like(a, double(c)), a); }
template <Number T> Val pow(Val a, T c) { return pow(a, like(a, double(c))); }
template <Number T> Val select(Val cond, Val a, T c) { return select(cond, a, like(a, double(c))); }
template <Number T> Val select(Val cond, T c, Val b) { return select(cond, like(b, double(c)), b); }

template <Number T> ElemRef Buf::operator[](T i) const { return (*this)[b_->u32(uint32_t(i))]; }
template <Number T> ElemRef Shared::operator[](T i) const { return (*this)[b_->u32(uint32_t(i))]; }
template <Number T> const ElemRef& ElemRef::operator=(T c) const {
  Type t = shared_ ? b_->peek().shared[index_].elem : b_->peek().buffers[index_].elem;
  return *this = b_->constant(t, double(c));
}
template <Number T> const Var& Var::operator=(T c) const { return *this = b_->constant(type_, double(c)); }
template <Number T> const Var& Var::operator+=(T c) const { return *this += b_->constant(type_, double(c)); }

}  // namespace spire::kir
