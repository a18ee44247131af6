#include "ir/kernel/builder.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::kir {

namespace {

KernelBuilder* builder_of(Val a, Val b) {
  if (!a.valid() || !b.valid()) throw std::invalid_argument("kernel builder: use of an empty Val");
  if (a.builder() != b.builder()) throw std::invalid_argument("kernel builder: operands from two different kernels");
  return a.builder();
}

void same_type(Op op, Val a, Val b) {
  if (a.type() != b.type())
    throw std::invalid_argument(fmt::format("kernel builder: {} of {} and {}: operand types differ (use cast)",
                                            op_name(op), dtype_name(a.type()), dtype_name(b.type())));
}

Val binary(Op op, Val a, Val b) {
  auto* kb = builder_of(a, b);
  same_type(op, a, b);
  return kb->emit(op, a.type(), {a, b});
}

Val compare(Op op, Val a, Val b) {
  auto* kb = builder_of(a, b);
  same_type(op, a, b);
  return kb->emit(op, Type::Bool, {a, b});
}

Val unary(Op op, Val a) {
  if (!a.valid()) throw std::invalid_argument("kernel builder: use of an empty Val");
  return a.builder()->emit(op, a.type(), {a});
}

}  // namespace

KernelBuilder::KernelBuilder(std::string name, std::array<uint32_t, 3> workgroup_size) {
  k_.name = std::move(name);
  k_.workgroup_size = workgroup_size;
  blocks_.push_back(&k_.body);
}

KernelBuilder::KernelBuilder(Kernel existing) : k_(std::move(existing)) {
  if (k_.prebuilt()) throw std::invalid_argument(fmt::format("kernel builder: '{}' is a prebuilt module", k_.name));
  blocks_.push_back(&k_.body);
}

namespace {

// True when `pred` holds for a statement of `block` or of a block nested in it.
bool any_statement(const Block& block, const std::function<bool(const Stmt&)>& pred) {
  for (const Stmt& s : block.stmts) {
    if (const auto* i = std::get_if<If>(&s)) {
      if ((i->then_body && any_statement(*i->then_body, pred)) || (i->else_body && any_statement(*i->else_body, pred)))
        return true;
    } else if (const auto* f = std::get_if<For>(&s)) {
      if (any_statement(*f->body, pred)) return true;
    } else if (pred(s)) {
      return true;
    }
  }
  return false;
}

// True when `s` reads `buffer` other than with an element load: a vector load, a copy, a tensor load or an atomic.
bool reads_wide(const Stmt& s, uint32_t buffer) {
  if (const auto* in = std::get_if<Instr>(&s)) return in->op == Op::AtomicAdd && in->index == buffer;
  if (const auto* c = std::get_if<CopyToShared>(&s)) return c->buffer == buffer;
  if (const auto* v = std::get_if<LoadBufferVector>(&s)) return v->buffer == buffer;
  if (const auto* t = std::get_if<MatrixLoadTensor>(&s)) return t->buffer == buffer;
  if (const auto* t = std::get_if<MatrixLoadPacked>(&s)) return t->buffer == buffer;
  return false;
}

// True when any statement of `block` (or of a block nested in it) loads or atomically updates `buffer`.
bool reads_buffer(const Block& block, uint32_t buffer) {
  return any_statement(block, [&](const Stmt& s) {
    const auto* in = std::get_if<Instr>(&s);
    return (in && in->op == Op::LoadBuffer && in->index == buffer) || reads_wide(s, buffer);
  });
}

}  // namespace

void KernelBuilder::rewrite_stores(uint32_t buffer, const std::function<Val(Val, Val)>& replace,
                                   std::optional<Type> store_as) {
  if (buffer >= k_.buffers.size())
    throw std::invalid_argument(fmt::format("kernel '{}' has no buffer {}", k_.name, buffer));
  if (reads_buffer(k_.body, buffer))
    throw std::invalid_argument(fmt::format("kernel '{}' reads its buffer '{}' as well as writing it: its stores cannot "
                                            "be rewritten", k_.name, k_.buffers[buffer].name));
  if (stores_matrices_into(k_, buffer))
    throw std::invalid_argument(fmt::format("kernel '{}' stores whole workgroup matrices into '{}': its stores cannot be "
                                            "rewritten", k_.name, k_.buffers[buffer].name));
  if (store_as) {
    k_.buffers[buffer].elem = *store_as;
    k_.features |= features_for_type(*store_as);
  }
  rewrite_stores_in(k_.body, buffer, replace);
}


void KernelBuilder::rewrite_loads(uint32_t buffer, const std::function<Val(Val)>& replace) {
  if (buffer >= k_.buffers.size())
    throw std::invalid_argument(fmt::format("kernel '{}' has no buffer {}", k_.name, buffer));
  const bool written_or_read_wide = any_statement(k_.body, [&](const Stmt& s) {
    const auto* st = std::get_if<StoreBuffer>(&s);
    return (st && st->buffer == buffer) || reads_wide(s, buffer);
  });
  if (stores_matrices_into(k_, buffer) || written_or_read_wide)
    throw std::invalid_argument(fmt::format("kernel '{}' writes its buffer '{}' or reads it other than element by "
                                            "element: its loads cannot be rewritten", k_.name, k_.buffers[buffer].name));
  rewrite_loads_in(k_.body, buffer, replace);
}

void KernelBuilder::rewrite_loads_in(Block& block, uint32_t buffer, const std::function<Val(Val)>& replace) {
  replace_values(
      block, [&](const Instr& in) { return in.op == Op::LoadBuffer && in.index == buffer; },
      [&](const Instr& old) {
        const Val value = replace(Val(this, old.operands[0], k_.value_types[old.operands[0]]));
        if (value.builder() == this && value.type() != old.type)
          throw std::invalid_argument(fmt::format("kernel '{}': a rewritten load from '{}' ({}) has type {}", k_.name,
                                                  k_.buffers[buffer].name, dtype_name(old.type), dtype_name(value.type())));
        return value;
      });
}

void KernelBuilder::rewrite_taps(uint32_t buffer, const std::function<Val(Val, Val)>& replace) {
  if (buffer >= k_.buffers.size())
    throw std::invalid_argument(fmt::format("kernel '{}' has no buffer {}", k_.name, buffer));
  replace_values(
      k_.body, [&](const Instr& in) { return in.op == Op::EpilogueTap && in.index == buffer; },
      [&](const Instr& old) {
        const Val value = replace(Val(this, old.operands[0], k_.value_types[old.operands[0]]),
                                  Val(this, old.operands[1], k_.value_types[old.operands[1]]));
        if (value.builder() == this && value.type() != old.type)
          throw std::invalid_argument(fmt::format("kernel '{}': a rewritten epilogue tap of '{}' ({}) has type {}",
                                                  k_.name, k_.buffers[buffer].name, dtype_name(old.type),
                                                  dtype_name(value.type())));
        return value;
      });
}

void KernelBuilder::replace_values(Block& block, const std::function<bool(const Instr&)>& matches,
                                   const std::function<Val(const Instr&)>& value_of) {
  rewrite_each(
      block,
      [&](const Stmt& s) {
        const auto* in = std::get_if<Instr>(&s);
        return in && matches(*in);
      },
      [&](const Stmt& s) -> std::function<void(Stmt&)> {
        const Val value = value_of(std::get<Instr>(s));
        if (value.builder() != this) throw std::invalid_argument("kernel builder: a rewrite given a Val of another kernel");
        // The instruction's result keeps its id (later instructions use it), now a select of the value with itself
        // under a constant true: the same bits, whatever the type, which every backend's compiler folds away. A bf16
        // value has no select (it is only loaded, stored and converted): it is then a second conversion of the f32
        // value that the new one converts (a tree rounded to bf16 computed where a kernel loads it: a rotary embedding of
        // the query in an attention's launch, lowering/fuse.h).
        if (value.type() == Type::BF16) {
          std::optional<Instr> conversion;  // (in the statements just emitted for it, or earlier ones)
          for (const Block* b : {static_cast<const Block*>(blocks_.back()), static_cast<const Block*>(&k_.body)})
            any_statement(*b, [&](const Stmt& d) {
              const auto* in = std::get_if<Instr>(&d);
              if (in && in->result == value.id() && in->op == Op::Convert && !conversion) conversion = *in;
              return conversion.has_value();
            });
          if (!conversion)
            throw std::invalid_argument(fmt::format("kernel '{}': a rewrite's bf16 value is not a conversion from f32",
                                                    k_.name));
          return [from = conversion->operands[0]](Stmt& now) {
            Instr& in = std::get<Instr>(now);
            in.op = Op::Convert;
            in.index = 0;
            in.operands = {from, kNoValue, kNoValue};
          };
        }
        const Val always = boolean(true);
        return [always, value](Stmt& now) {
          Instr& in = std::get<Instr>(now);
          in.op = Op::Select;
          in.index = 0;
          in.operands = {always.id(), value.id(), value.id()};
        };
      });
}

void KernelBuilder::rewrite_stores_in(Block& block, uint32_t buffer, const std::function<Val(Val, Val)>& replace) {
  rewrite_each(
      block,
      [&](const Stmt& s) {
        const auto* store = std::get_if<StoreBuffer>(&s);
        return store && store->buffer == buffer;
      },
      [&](const Stmt& s) -> std::function<void(Stmt&)> {
        const StoreBuffer old = std::get<StoreBuffer>(s);
        const Val value =
            replace(Val(this, old.index, k_.value_types[old.index]), Val(this, old.value, k_.value_types[old.value]));
        if (value.builder() != this) throw std::invalid_argument("kernel builder: rewrite_stores given a Val of another kernel");
        if (value.type() != k_.buffers[buffer].elem)
          throw std::invalid_argument(fmt::format("kernel '{}': a rewritten store into '{}' ({}) has type {}", k_.name,
                                                  k_.buffers[buffer].name, dtype_name(k_.buffers[buffer].elem),
                                                  dtype_name(value.type())));
        return [value](Stmt& now) { std::get<StoreBuffer>(now).value = value.id(); };
      });
}

void KernelBuilder::rewrite_each(Block& block, const std::function<bool(const Stmt&)>& matches,
                                 const std::function<std::function<void(Stmt&)>(const Stmt&)>& emit) {
  for (size_t i = 0; i < block.stmts.size(); ++i) {
    Stmt& s = block.stmts[i];
    if (auto* in = std::get_if<If>(&s)) {
      if (in->then_body) rewrite_each(*in->then_body, matches, emit);
      if (in->else_body) rewrite_each(*in->else_body, matches, emit);
      continue;
    }
    if (auto* f = std::get_if<For>(&s)) {
      rewrite_each(*f->body, matches, emit);
      continue;
    }
    if (!matches(s)) continue;
    Block prelude;
    blocks_.push_back(&prelude);
    std::function<void(Stmt&)> finish;
    try {
      finish = emit(s);
    } catch (...) {
      blocks_.pop_back();
      throw;
    }
    blocks_.pop_back();
    const size_t added = prelude.stmts.size();
    // `s` dangles once the prelude is inserted in front of it: the statement is addressed by position.
    block.stmts.insert(block.stmts.begin() + ptrdiff_t(i), std::make_move_iterator(prelude.stmts.begin()),
                       std::make_move_iterator(prelude.stmts.end()));
    i += added;
    finish(block.stmts[i]);
  }
}

namespace {

// Appends a declaration to one of kernel k's lists, noting the features its type needs; returns its index.
template <class Declaration>
uint32_t declare(Kernel& k, std::vector<Declaration>& list, Declaration d, Type type) {
  list.push_back(std::move(d));
  k.features |= features_for_type(type);
  return uint32_t(list.size() - 1);
}

}  // namespace

Buf KernelBuilder::buffer(std::string name, Type elem, Access access) {
  return Buf(this, declare(k_, k_.buffers, {std::move(name), elem, access}, elem), elem);
}

Val KernelBuilder::scalar(std::string name, Type type) {
  return emit(Op::ReadScalar, type, {}, declare(k_, k_.scalars, {std::move(name), type}, type));
}

Shared KernelBuilder::shared(std::string name, Type elem, uint32_t count) {
  return Shared(this, declare(k_, k_.shared, {std::move(name), elem, count}, elem), elem);
}

Var KernelBuilder::var(std::string name, Type type) {
  return Var(this, VarId(declare(k_, k_.vars, {std::move(name), type}, type)), type);
}

Var KernelBuilder::var(std::string name, Val init) {
  Var v = var(std::move(name), init.type());
  v = init;
  return v;
}

Val KernelBuilder::builtin(Builtin b) {
  if (b == Builtin::SubgroupSize || b == Builtin::SubgroupId || b == Builtin::SubgroupLocalId)
    require(Feature::SubgroupShuffle);
  return emit(Op::ReadBuiltin, Type::U32, {}, uint32_t(b));
}

Val KernelBuilder::epilogue_tap(const Buf& result, Val index, Val value) {
  return emit(Op::EpilogueTap, value.type(), {index, value}, result.index());
}

Val KernelBuilder::shuffle_xor(Val value, uint32_t mask) {
  require(Feature::SubgroupShuffle);
  return emit(Op::ShuffleXor, value.type(), {value, u32(mask)});
}

Val KernelBuilder::constant(Type t, double v) {
  if (t == Type::BF16) return cast(constant(Type::F32, v), Type::BF16);  // no bf16 immediates (types.h)
  ValueId id = ValueId(k_.value_types.size());
  k_.value_types.push_back(t);
  k_.features |= features_for_type(t);
  Instr in{};
  in.result = id;
  in.op = Op::Const;
  in.type = t;
  switch (t) {
    case Type::Bool: in.imm.i = v != 0 ? 1 : 0; break;
    case Type::I32: in.imm.i = int32_t(v); break;
    case Type::U32: in.imm.i = int64_t(uint32_t(int64_t(v))); break;
    case Type::I64: in.imm.i = int64_t(v); break;
    case Type::F32: in.imm.f = double(float(v)); break;
    case Type::F16: in.imm.f = double(float(v)); break;  // backends round to half
    case Type::F64: in.imm.f = v; break;
    case Type::BF16: break;  // made from an f32 constant below
  }
  emit_stmt(in);
  return Val(this, id, t);
}

Val KernelBuilder::i64(int64_t v) {
  Val c = constant(Type::I64, 0);
  std::get<Instr>(current()->stmts.back()).imm.i = v;  // exact, beyond double's 53 bits
  return c;
}

Val KernelBuilder::emit(Op op, Type type, std::initializer_list<Val> operands, uint32_t index) {
  if (finished_) throw std::logic_error("kernel builder: emit after finish()");
  Instr in{};
  in.result = ValueId(k_.value_types.size());
  in.op = op;
  in.type = type;
  in.index = index;
  size_t i = 0;
  for (const Val& v : operands) {
    if (!v.valid()) throw std::invalid_argument(fmt::format("kernel builder: {} given an empty Val", op_name(op)));
    if (v.builder() != this) throw std::invalid_argument("kernel builder: operand from another kernel");
    in.operands[i++] = v.id();
  }
  k_.value_types.push_back(type);
  k_.features |= features_for_type(type);
  emit_stmt(in);
  return Val(this, in.result, type);
}

void KernelBuilder::emit_stmt(Stmt s) { current()->stmts.push_back(std::move(s)); }
void KernelBuilder::emit_stmt(Feature needs, Stmt s) {
  require(needs);
  emit_stmt(std::move(s));
}

void KernelBuilder::if_(Val cond, const std::function<void()>& then_body) {
  If s{cond.id(), std::make_unique<Block>(), nullptr};
  Block* then_block = s.then_body.get();
  emit_stmt(std::move(s));
  blocks_.push_back(then_block);
  then_body();
  blocks_.pop_back();
}

void KernelBuilder::if_else(Val cond, const std::function<void()>& then_body, const std::function<void()>& else_body) {
  If s{cond.id(), std::make_unique<Block>(), std::make_unique<Block>()};
  Block* then_block = s.then_body.get();
  Block* else_block = s.else_body.get();
  emit_stmt(std::move(s));
  blocks_.push_back(then_block);
  then_body();
  blocks_.pop_back();
  blocks_.push_back(else_block);
  else_body();
  blocks_.pop_back();
}

void KernelBuilder::for_(Val begin, Val end, Val step, const std::function<void(Val)>& body) {
  if (!is_int(begin.type())) throw std::invalid_argument("kernel builder: for_ needs an integer loop variable");
  same_type(Op::Lt, begin, end);
  same_type(Op::Add, begin, step);
  Var v = var(fmt::format("i{}", k_.vars.size()), begin.type());
  For s{v.id(), begin.id(), end.id(), step.id(), std::make_unique<Block>()};
  Block* body_block = s.body.get();
  emit_stmt(std::move(s));
  blocks_.push_back(body_block);
  body(v.get());
  blocks_.pop_back();
}

void KernelBuilder::for_(Val begin, Val end, const std::function<void(Val)>& body) {
  for_(begin, end, like(begin, 1), body);
}

void KernelBuilder::barrier() { emit_stmt(Barrier{}); }
void KernelBuilder::read_before_wait(const Buf& buffer) { k_.buffers.at(buffer.index()).read_before_wait = true; }
void KernelBuilder::wait_for_prior_kernels() { emit_stmt(WaitForPriorKernels{}); }

Fragment KernelBuilder::fragment(std::string name, MatrixUse use, Type elem, bool column_major) {
  k_.fragments.push_back({std::move(name), use, elem, column_major});
  k_.features |= features_for_type(elem) | Feature::CooperativeMatrix;
  return Fragment{uint32_t(k_.fragments.size() - 1)};
}

void KernelBuilder::matrix_fill(Fragment f, Val value) { emit_stmt(MatrixFill{f.index, value.id()}); }

void KernelBuilder::matrix_load(Fragment f, const Shared& array, Val index, uint32_t stride) {
  emit_stmt(MatrixLoad{f.index, array.index(), index.id(), stride});
}

void KernelBuilder::matrix_store(const Shared& array, Val index, uint32_t stride, Fragment f) {
  emit_stmt(MatrixStore{f.index, array.index(), index.id(), stride});
}

void KernelBuilder::copy_to_shared(const Shared& to, Val dst, const Buf& from, Val src, Val valid) {
  emit_stmt(Feature::AsyncCopy, CopyToShared{to.index(), dst.id(), from.index(), src.id(), valid.id()});
}

void KernelBuilder::copy_commit() { emit_stmt(Feature::AsyncCopy, CopyCommit{}); }
void KernelBuilder::copy_wait(uint32_t pending) { emit_stmt(Feature::AsyncCopy, CopyWait{pending}); }

void KernelBuilder::matrix_mul_add(Fragment d, Fragment a, Fragment b, Fragment c) {
  emit_stmt(MatrixMulAdd{d.index, a.index, b.index, c.index});
}

Fragment KernelBuilder::workgroup_matrix(std::string name, MatrixUse use, Type elem, uint32_t rows, uint32_t columns,
                                        bool column_major) {
  MatrixFragment f{std::move(name), use, elem, column_major};
  f.rows = rows;
  f.columns = columns;
  f.workgroup = true;
  k_.fragments.push_back(std::move(f));
  k_.features |= features_for_type(elem) | Feature::WorkgroupMatrix;
  return Fragment{uint32_t(k_.fragments.size() - 1)};
}

void KernelBuilder::matrix_load_tensor(Fragment f, const Buf& buffer, Val base, Val row, Val column, Val rows,
                                       Val columns) {
  emit_stmt(
      MatrixLoadTensor{f.index, buffer.index(), base.id(), row.id(), column.id(), rows.id(), columns.id()});
}

void KernelBuilder::matrix_store_tensor(const Buf& buffer, Val base, Val row, Val column, Val rows, Val columns,
                                        Fragment f) {
  emit_stmt(
      MatrixStoreTensor{f.index, buffer.index(), base.id(), row.id(), column.id(), rows.id(), columns.id()});
}

void KernelBuilder::matrix_load_packed(Fragment f, const Buf& buffer, Val index) {
  emit_stmt(MatrixLoadPacked{f.index, buffer.index(), index.id()});
}

void KernelBuilder::matrix_store_packed(const Buf& buffer, Val index, Fragment f) {
  emit_stmt(MatrixStorePacked{f.index, buffer.index(), index.id()});
}

Fragment KernelBuilder::warpgroup_accumulator(std::string name, uint32_t columns) {
  MatrixFragment f{std::move(name), MatrixUse::WarpgroupAccumulator, Type::F32};
  f.columns = columns;
  k_.fragments.push_back(std::move(f));
  require(Feature::WarpgroupMatrix);
  return Fragment{uint32_t(k_.fragments.size() - 1)};
}

void KernelBuilder::warpgroup_mul_add(Fragment acc, const WarpgroupTile& a, const WarpgroupTile& b) {
  require(Feature::WarpgroupMatrix);
  auto operand = [](const WarpgroupTile& t) {
    return WarpgroupOperand{t.array.index(), t.index.id(), t.k_block_stride, t.mn_block_stride, t.mn_major, t.swizzled};
  };
  emit_stmt(WarpgroupMulAdd{acc.index, operand(a), operand(b)});
}

uint32_t KernelBuilder::tensor_map(std::string name, const Buf& buffer, std::vector<uint64_t> extents,
                                   std::vector<uint64_t> strides, std::vector<uint32_t> box, bool swizzle_128) {
  require(Feature::TensorCopy);
  k_.tensor_maps.push_back({std::move(name), buffer.index(), std::move(extents), std::move(strides), std::move(box), swizzle_128});
  return uint32_t(k_.tensor_maps.size() - 1);
}

uint32_t KernelBuilder::arrival_barriers(std::string name, uint32_t count, uint32_t arrivals) {
  require(Feature::TensorCopy);
  k_.arrival_barriers.push_back({std::move(name), count, arrivals});
  return uint32_t(k_.arrival_barriers.size() - 1);
}

void KernelBuilder::tensor_copy(const Shared& to, Val index, uint32_t map, const std::vector<Val>& coords,
                                uint32_t barriers, Val barrier) {
  require(Feature::TensorCopy);
  std::vector<ValueId> ids;
  for (const Val& c : coords) ids.push_back(c.id());
  emit_stmt(TensorCopy{map, to.index(), index.id(), std::move(ids), barriers, barrier.id()});
}

void KernelBuilder::arrive(uint32_t barriers, Val barrier, uint32_t expect_bytes) {
  emit_stmt(Feature::TensorCopy, Arrive{barriers, barrier.id(), expect_bytes});
}

void KernelBuilder::await_phase(uint32_t barriers, Val barrier, Val parity) {
  emit_stmt(Feature::TensorCopy, AwaitPhase{barriers, barrier.id(), parity.id()});
}

void KernelBuilder::warpgroup_commit() { emit_stmt(Feature::WarpgroupMatrix, WarpgroupCommit{}); }
void KernelBuilder::warpgroup_wait(uint32_t pending) { emit_stmt(Feature::WarpgroupMatrix, WarpgroupWait{pending}); }

Val KernelBuilder::matrix_element(Fragment acc, uint32_t element) {
  Val v = emit(Op::MatrixElement, Type::F32, {}, acc.index);
  std::get<Instr>(current()->stmts.back()).imm.i = element;
  return v;
}

Kernel KernelBuilder::finish() {
  if (blocks_.size() != 1) throw std::logic_error("kernel builder: finish() inside a nested block");
  std::string err = verify(k_);
  if (!err.empty()) throw std::invalid_argument("kernel '" + k_.name + "' is malformed: " + err);
  finished_ = true;
  return std::move(k_);
}

std::vector<Val> KernelBuilder::vector_results(std::vector<ValueId>& results, Type t, Val index, uint32_t lanes,
                                              const char* what) {
  if (finished_) throw std::logic_error(fmt::format("kernel builder: {} after finish()", what));
  if (!index.valid() || index.builder() != this)
    throw std::invalid_argument(fmt::format("kernel builder: {} index from another kernel", what));
  std::vector<Val> out;
  for (uint32_t i = 0; i < lanes; ++i) {
    results.push_back(ValueId(k_.value_types.size()));
    out.emplace_back(this, results.back(), t);
    k_.value_types.push_back(t);
  }
  return out;
}

std::vector<Val> KernelBuilder::load_shared_vector(const Shared& array, Val index, uint32_t lanes) {
  LoadSharedVector load{array.index(), index.id(), {}};
  std::vector<Val> out = vector_results(load.results, array.elem(), index, lanes, "load_shared_vector");
  emit_stmt(std::move(load));
  return out;
}

std::vector<Val> KernelBuilder::load_buffer_vector(const Buf& buffer, Val index, uint32_t lanes, bool widen) {
  LoadBufferVector load{buffer.index(), index.id(), {}, widen};
  std::vector<Val> out = vector_results(load.results, widen ? Type::F32 : buffer.elem(), index, lanes, "load_buffer_vector");
  emit_stmt(std::move(load));
  return out;
}

std::vector<Val> Shared::load_vector(Val i, uint32_t lanes) const { return b_->load_shared_vector(*this, i, lanes); }
std::vector<Val> Buf::load_vector(Val i, uint32_t lanes) const { return b_->load_buffer_vector(*this, i, lanes); }
std::vector<Val> Buf::load_vector_widened(Val i, uint32_t lanes) const {
  return b_->load_buffer_vector(*this, i, lanes, true);
}

Val ElemRef::load() const {
  const Kernel& k = b_->peek();
  Type t = shared_ ? k.shared[index_].elem : k.buffers[index_].elem;
  return b_->emit(shared_ ? Op::LoadShared : Op::LoadBuffer, t, {elem_}, index_);
}

const ElemRef& ElemRef::operator=(Val v) const {
  if (shared_)
    b_->emit_stmt(StoreShared{index_, elem_.id(), v.id()});
  else
    b_->emit_stmt(StoreBuffer{index_, elem_.id(), v.id()});
  return *this;
}

const ElemRef& ElemRef::operator+=(Val v) const { return *this = load() + v; }

Val Buf::atomic_add(Val i, Val v) const {
  b_->require(type_ == Type::F32 ? Feature::AtomicAddF32 : Feature::AtomicAddInt);
  return b_->emit(Op::AtomicAdd, type_, {i, v}, id_);
}

Val Var::get() const { return b_->emit(Op::LoadVar, type_, {}, id_); }
const Var& Var::operator=(Val v) const {
  if (v.type() != type_)
    throw std::invalid_argument(fmt::format("kernel builder: assigning {} to variable of type {}", dtype_name(v.type()), dtype_name(type_)));
  b_->emit_stmt(StoreVar{id_, v.id()});
  return *this;
}
const Var& Var::operator+=(Val v) const { return *this = get() + v; }

Val operator+(Val a, Val b) { return binary(Op::Add, a, b); }
Val operator-(Val a, Val b) { return binary(Op::Sub, a, b); }
Val operator*(Val a, Val b) { return binary(Op::Mul, a, b); }
Val operator/(Val a, Val b) { return binary(Op::Div, a, b); }
Val operator%(Val a, Val b) { return binary(Op::Rem, a, b); }
Val operator&(Val a, Val b) { return binary(Op::And, a, b); }
Val operator|(Val a, Val b) { return binary(Op::Or, a, b); }
Val operator^(Val a, Val b) { return binary(Op::Xor, a, b); }
Val operator<<(Val a, Val b) { return binary(Op::Shl, a, b); }
Val operator>>(Val a, Val b) { return binary(Op::Shr, a, b); }
Val operator-(Val a) { return unary(Op::Neg, a); }
Val operator!(Val a) { return unary(Op::Not, a); }
Val operator<(Val a, Val b) { return compare(Op::Lt, a, b); }
Val operator<=(Val a, Val b) { return compare(Op::Le, a, b); }
Val operator>(Val a, Val b) { return compare(Op::Gt, a, b); }
Val operator>=(Val a, Val b) { return compare(Op::Ge, a, b); }
Val operator==(Val a, Val b) { return compare(Op::Eq, a, b); }
Val operator!=(Val a, Val b) { return compare(Op::Ne, a, b); }

Val min(Val a, Val b) { return binary(Op::Min, a, b); }
Val max(Val a, Val b) { return binary(Op::Max, a, b); }
Val pow(Val a, Val b) { return binary(Op::Pow, a, b); }
Val exp(Val a) { return unary(Op::Exp, a); }
Val log(Val a) { return unary(Op::Log, a); }
Val sqrt(Val a) { return unary(Op::Sqrt, a); }
Val rsqrt(Val a) { return unary(Op::Rsqrt, a); }
Val tanh(Val a) { return unary(Op::Tanh, a); }
Val abs(Val a) { return unary(Op::Abs, a); }
Val floor(Val a) { return unary(Op::Floor, a); }

Val select(Val cond, Val a, Val b) {
  auto* kb = builder_of(cond, a);
  builder_of(a, b);
  if (cond.type() != Type::Bool) throw std::invalid_argument("kernel builder: select condition must be bool");
  same_type(Op::Select, a, b);
  return kb->emit(Op::Select, a.type(), {cond, a, b});
}

Val fma(Val a, Val b, Val c) {
  auto* kb = builder_of(a, b);
  builder_of(b, c);
  same_type(Op::Fma, a, b);
  same_type(Op::Fma, b, c);
  if (!is_float(a.type())) throw std::invalid_argument("kernel builder: fma needs float operands");
  return kb->emit(Op::Fma, a.type(), {a, b, c});
}

Val cast(Val a, Type t) {
  if (!a.valid()) throw std::invalid_argument("kernel builder: cast of an empty Val");
  if (a.type() == t) return a;
  if (t == Type::Bool) return a != like(a, 0);
  if (a.type() == Type::Bool) {
    auto* kb = a.builder();
    return select(a, kb->constant(t, 1), kb->constant(t, 0));
  }
  // bf16 converts only to and from f32 (types.h): other conversions go through f32.
  if ((a.type() == Type::BF16 && t != Type::F32) || (t == Type::BF16 && a.type() != Type::F32))
    return cast(cast(a, Type::F32), t);
  return a.builder()->emit(Op::Convert, t, {a});
}

Val like(Val v, double c) {
  if (!v.valid()) throw std::invalid_argument("kernel builder: constant next to an empty Val");
  return v.builder()->constant(v.type(), c);
}

}  // namespace spire::kir
