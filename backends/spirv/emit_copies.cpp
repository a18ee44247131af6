// kir's copies into workgroup memory (kernel.h's CopyToShared, CopyCommit, CopyWait) without an asynchronous copy
// instruction: the copy's 16 bytes are loaded into registers where the kernel issues it, and stored into workgroup
// memory at the next wait, which the contract allows (a copy may land any time until a wait covering its batch, and
// nothing touches its destination until then). A pipelined kernel (issue slice k+1, compute slice k, wait) thus gets
// the classic register-staged pipeline: the loads fly while it computes.
//
// Each CopyToShared statement (a "site") keeps its last copy in Function variables: the 16 bytes, the destination
// and a pending flag. copy_plan.h works out which wait lands which sites (those whose batch the wait's count covers),
// and which sites may run again before a wait landed their previous copy: those land it first. Destinations
// are declared as arrays of 16-byte vectors and sources get a vector view at their binding, so each copy is one
// 16-byte load and one 16-byte store; element reads pick their word out of the vector.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "backends/spirv/copy_plan.h"
#include "backends/spirv/kernel_emitter.h"

namespace spire::spirv {

namespace {

// Elements of `t` per 16-byte vector.
uint32_t per_vector(kir::Type t) { return 16 / dtype_bytes(t); }

uint32_t log2_of(uint32_t x) {
  uint32_t l = 0;
  while ((1u << l) < x) ++l;
  return l;
}

// Shared arrays copied into, and whether any statement writes one of them element by element (reads are fine:
// load_from_vectors picks an element out of its vector).
void note_copy_arrays(const kir::Block& b, std::vector<bool>& copied, std::vector<bool>& elementwise,
                      std::vector<bool>& sources, std::vector<bool>& packed_stores) {
  for (const kir::Stmt& s : b.stmts) {
    if (const auto* c = std::get_if<kir::CopyToShared>(&s)) {
      copied.at(c->array) = true;
      sources.at(c->buffer) = true;
    } else if (const auto* p = std::get_if<kir::MatrixLoadPacked>(&s)) {
      sources.at(p->buffer) = true;  // a packed share is one 16-byte load, as a copy's source
    } else if (const auto* p = std::get_if<kir::MatrixStorePacked>(&s)) {
      packed_stores.at(p->buffer) = true;
    } else if (const auto* st = std::get_if<kir::StoreShared>(&s)) {
      elementwise.at(st->array) = true;
    } else if (const auto* i = std::get_if<kir::If>(&s)) {
      note_copy_arrays(*i->then_body, copied, elementwise, sources, packed_stores);
      if (i->else_body) note_copy_arrays(*i->else_body, copied, elementwise, sources, packed_stores);
    } else if (const auto* f = std::get_if<kir::For>(&s)) {
      note_copy_arrays(*f->body, copied, elementwise, sources, packed_stores);
    }
  }
}

}  // namespace

void KernelEmitter::plan_copies() {
  std::vector<bool> copied(k_.shared.size(), false), elementwise(k_.shared.size(), false),
      sources(k_.buffers.size(), false), packed_stores(k_.buffers.size(), false);
  note_copy_arrays(k_.body, copied, elementwise, sources, packed_stores);
  shared_vectors_ = copied;
  for (uint32_t a = 0; a < k_.shared.size(); ++a) {
    if (!copied[a]) continue;
    if (elementwise[a])
      throw std::logic_error(fmt::format("SPIR-V backend: shared array {} is copied into and also written element by "
                                         "element; copies are emitted only into arrays that nothing else writes but "
                                         "matrix stores", k_.shared[a].name));
    if ((uint64_t(k_.shared[a].count) * dtype_bytes(k_.shared[a].elem)) % 16)
      throw std::logic_error(fmt::format("SPIR-V backend: shared array {} is copied into but is not a whole number of "
                                         "16-byte vectors", k_.shared[a].name));
  }
  copy_plan_ = plan_copy_sites(k_.body);
  copy_sites_.assign(copy_plan_.site_of.size(), CopySite{});
  for (const auto& [stmt, site] : copy_plan_.site_of) {
    copy_sites_[site].array = stmt->array;
    copy_sites_[site].flush_before = copy_plan_.lands_before_rerun.count(site) > 0;
  }
  buffer_copy_views_.assign(k_.buffers.size(), 0);
  for (uint32_t i = 0; i < k_.buffers.size(); ++i) {
    if (!sources[i]) continue;
    // A second declaration of the binding as 16-byte vectors (as for vector loads, emit_kernel.cpp); copies read
    // only read-only buffers (kir::verify), so the views need no Aliased decoration.
    buffer_copy_views_[i] = declare_read_only_view(i, m_.type_vector(m_.type_int(32, false), 4), 16,
                                                   k_.buffers[i].name + "_copy_view");
  }
  buffer_packed_views_.assign(k_.buffers.size(), 0);
  for (uint32_t i = 0; i < k_.buffers.size(); ++i)
    if (packed_stores[i])
      buffer_packed_views_[i] = declare_write_only_view(i, m_.type_vector(m_.type_int(32, false), 4), 16,
                                                        k_.buffers[i].name + "_packed_view");
}

void KernelEmitter::declare_copy_sites() {
  Id u32 = m_.type_int(32, false);
  Id uvec4 = m_.type_vector(u32, 4);
  for (uint32_t i = 0; i < copy_sites_.size(); ++i) {
    CopySite& c = copy_sites_[i];
    auto variable = [&](Id t, const std::string& name, Id initializer) {
      Id var = m_.new_id();
      Words w{m_.type_pointer(SpvStorageClassFunction, t), var, uint32_t(SpvStorageClassFunction)};
      if (initializer) w.push_back(initializer);
      append_instruction(locals_, SpvOpVariable, w);
      m_.name(var, name);
      return var;
    };
    c.data = variable(uvec4, fmt::format("copy{}_data", i), 0);
    c.destination = variable(u32, fmt::format("copy{}_to", i), 0);
    c.pending = variable(bool_type(), fmt::format("copy{}_pending", i), m_.constant_bool(false));
  }
}

Id KernelEmitter::as_u32(kir::Type t, Id index) {
  return t == kir::Type::U32 ? index : op(SpvOpBitcast, m_.type_int(32, false), {index});
}

Id KernelEmitter::as_u32(kir::ValueId index) { return as_u32(k_.value_types.at(index), value(index)); }

Id KernelEmitter::vector_index(kir::Type elem, Id element_index) {
  return op(SpvOpShiftRightLogical, m_.type_int(32, false), {element_index, m_.constant_u32(log2_of(per_vector(elem)))});
}

Id KernelEmitter::copy_destination(uint32_t array, Id element_index) {
  return op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassWorkgroup, m_.type_vector(m_.type_int(32, false), 4)),
            {shared_vars_.at(array), vector_index(k_.shared.at(array).elem, element_index)});
}

Id KernelEmitter::load_from_vectors(uint32_t array, Id element) {
  const kir::Type t = k_.shared.at(array).elem;
  const uint32_t bytes = dtype_bytes(t);
  Id u32 = m_.type_int(32, false);
  // The 32-bit word holding the element: vector element / per_vector, word (element * bytes / 4) % 4.
  const uint32_t per_word = 4 / std::max<uint32_t>(bytes, 1);
  if (bytes != 4 && bytes != 2)
    throw std::logic_error(fmt::format("SPIR-V backend: reading {} elements of copied shared array {} one by one",
                                       dtype_name(t), k_.shared.at(array).name));
  Id word_index = op(SpvOpBitwiseAnd, u32, {op(SpvOpShiftRightLogical, u32, {element, m_.constant_u32(log2_of(per_word))}),
                                            m_.constant_u32(3)});
  Id pointer = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassWorkgroup, u32),
                  {shared_vars_.at(array), vector_index(t, element), word_index});
  Id word = load_memory(u32, pointer);
  if (bytes == 4) return t == kir::Type::U32 ? word : op(SpvOpBitcast, type(t), {word});
  // A 16-bit element: the word's low or high half.
  Id shift = op(SpvOpShiftLeftLogical, u32, {op(SpvOpBitwiseAnd, u32, {element, m_.constant_u32(1)}), m_.constant_u32(4)});
  Id low = op(SpvOpShiftRightLogical, u32, {word, shift});
  if (t == kir::Type::F16) return op(SpvOpCompositeExtract, type(t), {op(SpvOpBitcast, m_.type_vector(type(t), 2), {low}), 0});
  return op(SpvOpUConvert, type(t), {low});  // bf16: a 16-bit word (emit_ops.cpp)
}

void KernelEmitter::flush_copy(uint32_t site) {
  const CopySite& c = copy_sites_.at(site);
  Id u32 = m_.type_int(32, false);
  Id uvec4 = m_.type_vector(u32, 4);
  Id then_label = m_.new_id(), merge = m_.new_id();
  Id pending = op(SpvOpLoad, bool_type(), {c.pending});
  op_void(SpvOpSelectionMerge, {merge, uint32_t(SpvSelectionControlMaskNone)});
  op_void(SpvOpBranchConditional, {pending, then_label, merge});
  label(then_label);
  Id destination = copy_destination(c.array, op(SpvOpLoad, u32, {c.destination}));
  store_memory(destination, op(SpvOpLoad, uvec4, {c.data}));
  op_void(SpvOpStore, {c.pending, m_.constant_bool(false)});
  branch(merge);
  label(merge);
}

void KernelEmitter::stmt(const kir::CopyToShared& s) {
  const uint32_t site = copy_plan_.site_of.at(&s);
  const CopySite& c = copy_sites_.at(site);
  if (c.flush_before) flush_copy(site);
  Id u32 = m_.type_int(32, false);
  Id uvec4 = m_.type_vector(u32, 4);
  // Invalid copies write zeros and read nothing.
  Id then_label = m_.new_id(), else_label = m_.new_id(), merge = m_.new_id();
  op_void(SpvOpSelectionMerge, {merge, uint32_t(SpvSelectionControlMaskNone)});
  op_void(SpvOpBranchConditional, {value(s.valid), then_label, else_label});
  label(then_label);
  Id source = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassStorageBuffer, uvec4),
                 {buffer_copy_views_.at(s.buffer), m_.constant_u32(0), vector_index(k_.buffers.at(s.buffer).elem, as_u32(s.src))});
  op_void(SpvOpStore, {c.data, load_buffer(s.buffer, uvec4, source)});
  branch(merge);
  label(else_label);
  op_void(SpvOpStore, {c.data, m_.constant_null(uvec4)});
  branch(merge);
  label(merge);
  op_void(SpvOpStore, {c.destination, as_u32(s.dst)});
  op_void(SpvOpStore, {c.pending, m_.constant_bool(true)});
}

void KernelEmitter::stmt(const kir::CopyWait& s) {
  auto it = copy_plan_.lands.find(&s);
  if (it == copy_plan_.lands.end()) return;
  for (uint32_t site : it->second) flush_copy(site);
}

}  // namespace spire::spirv
