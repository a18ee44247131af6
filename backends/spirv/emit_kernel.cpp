// The module around the kernel's function, and the function's statements and structured control flow.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "backends/spirv/kernel_emitter.h"
#include "backends/spirv/khr_matrix_enums.h"
#include "backends/spirv/nv_matrix_enums.h"

namespace spire::spirv {

namespace {

// Temporarily redirects instruction writing (e.g. into the prologue), restoring on scope exit.
class WriteInto {
 public:
  WriteInto(Words*& current, Words& target) : current_(current), saved_(current) { current_ = &target; }
  ~WriteInto() { current_ = saved_; }
  WriteInto(const WriteInto&) = delete;
  WriteInto& operator=(const WriteInto&) = delete;

 private:
  Words*& current_;
  Words* saved_;
};

}  // namespace

KernelEmitter::KernelEmitter(const kir::Kernel& k)
    : k_(k), values_(k.value_types.size(), 0), vulkan_memory_model_(!k.fragments.empty()),
      barriers_order_buffers_(k.barriers_order_buffers &&
                              std::any_of(k.buffers.begin(), k.buffers.end(), [](const kir::BufferParam& b) {
                                return b.access == kir::Access::ReadWrite;
                              })) {}

Words KernelEmitter::emit() {
  plan_copies();  // which shared arrays hold 16-byte vectors, which capabilities then need
  declare_capabilities();
  m_.set_memory_model(SpvAddressingModelLogical, vulkan_memory_model_ ? SpvMemoryModelVulkan : SpvMemoryModelGLSL450);

  Id void_type = m_.type_void();
  Id function_type = m_.type_function(void_type, {});
  Id function = m_.new_id();
  m_.name(function, k_.name);

  declare_buffers();
  declare_scalars();
  declare_shared_arrays();
  declare_local_variables();
  declare_fragments();
  declare_copy_sites();

  current_ = &body_;
  block(k_.body);

  m_.add_entry_point(SpvExecutionModelGLCompute, function, "main", interface_);
  m_.add_execution_mode(function, SpvExecutionModeLocalSize,
                        {k_.workgroup_size[0], k_.workgroup_size[1], k_.workgroup_size[2]});

  Words& f = m_.functions();
  append_instruction(f, SpvOpFunction, {void_type, function, uint32_t(SpvFunctionControlMaskNone), function_type});
  append_instruction(f, SpvOpLabel, {m_.new_id()});
  f.insert(f.end(), locals_.begin(), locals_.end());
  f.insert(f.end(), prologue_.begin(), prologue_.end());
  f.insert(f.end(), body_.begin(), body_.end());
  append_instruction(f, SpvOpReturn, {});
  append_instruction(f, SpvOpFunctionEnd, {});
  return m_.assemble(kSpirvVersion);
}

// ---------------------------------------------------------------------------------------------------------
// Capabilities and resources

void KernelEmitter::declare_capabilities() {
  m_.add_capability(SpvCapabilityShader);
  bool f16 = false, f64 = false, i64 = false;
  auto note = [&](kir::Type t) {
    f16 |= t == kir::Type::F16;
    f64 |= t == kir::Type::F64;
    i64 |= t == kir::Type::I64;
  };
  for (kir::Type t : k_.value_types) note(t);
  for (const auto& b : k_.buffers) note(b.elem);
  for (const auto& s : k_.scalars) note(s.type);
  for (const auto& s : k_.shared) note(s.elem);
  for (const auto& v : k_.vars) note(v.type);
  for (const auto& f : k_.fragments) note(f.elem);
  if (f16) m_.add_capability(SpvCapabilityFloat16);
  if (f64) m_.add_capability(SpvCapabilityFloat64);
  if (i64) m_.add_capability(SpvCapabilityInt64);
  // Subgroup builtins need GroupNonUniform; shuffle-xor GroupNonUniformShuffle (both core in SPIR-V 1.3).
  if (k_.features.has(kir::Feature::SubgroupShuffle)) {
    m_.add_capability(SpvCapabilityGroupNonUniform);
    m_.add_capability(SpvCapabilityGroupNonUniformShuffle);
  }

  // 16-bit values in interface memory need the 16-bit storage capabilities (core in SPIR-V 1.3, declared
  // as an extension too so that tools and drivers reading the module see where they come from).
  bool f16_buffer = false, f16_scalar = false;
  for (const auto& b : k_.buffers) f16_buffer |= b.elem == kir::Type::F16 || b.elem == kir::Type::BF16;
  // A bf16 value is a 16-bit integer, which without Int16 only the 16-bit storage capability lets a module
  // declare, even when no buffer holds one (a bf16 constant converted on to f32).
  for (kir::Type t : k_.value_types) f16_buffer |= t == kir::Type::BF16;
  for (const auto& s : k_.scalars) f16_scalar |= s.type == kir::Type::F16;
  if (f16_buffer) m_.add_capability(SpvCapabilityStorageBuffer16BitAccess);
  if (f16_scalar) m_.add_capability(SpvCapabilityStoragePushConstant16);
  if (f16_buffer || f16_scalar) m_.add_extension("SPV_KHR_16bit_storage");

  if (!k_.fragments.empty()) {
    m_.add_capability(SpvCapability(khr::kCapabilityCooperativeMatrix));
    m_.add_extension("SPV_KHR_cooperative_matrix");
    m_.add_capability(SpvCapabilityVulkanMemoryModel);
    m_.add_extension("SPV_KHR_vulkan_memory_model");  // core from SPIR-V 1.5; this module is 1.3
    bool bf16_fragments = false, bf16_shared = false;
    for (const auto& f : k_.fragments) bf16_fragments |= f.elem == kir::Type::BF16;
    for (uint32_t i = 0; i < k_.shared.size(); ++i)
      bf16_shared |= k_.shared[i].elem == kir::Type::BF16 && !shared_vectors_.at(i);
    if (bf16_fragments) {
      m_.add_capability(SpvCapability(khr::kCapabilityBFloat16Type));
      m_.add_capability(SpvCapability(khr::kCapabilityBFloat16CooperativeMatrix));
      m_.add_extension("SPV_KHR_bfloat16");
    }
    // bf16 operands are staged in workgroup memory as 16-bit words, which 16-bit storage does not cover there.
    // Packed shares split words into 16-bit halves.
    const bool packed = kir::moves_packed_fragments(k_);
    if (bf16_shared || packed) m_.add_capability(SpvCapabilityInt16);
    if (k_.features.has(kir::Feature::WorkgroupMatrix)) {
      m_.add_capability(SpvCapability(nv::kCapabilityCooperativeMatrixTensorAddressing));
      m_.add_extension("SPV_NV_cooperative_matrix2");
      m_.add_capability(SpvCapability(nv::kCapabilityTensorAddressing));
      m_.add_extension("SPV_NV_tensor_addressing");
    }
  }
}

namespace {

// The widest vector load of each buffer in `b` (lanes stays 1 for buffers without one); of a 16-bit buffer, the widest
// widened one (its other vector loads go element by element).
void note_buffer_vector_loads(const kir::Kernel& k, const kir::Block& b, std::vector<uint32_t>& lanes) {
  for (const kir::Stmt& s : b.stmts) {
    if (const auto* v = std::get_if<kir::LoadBufferVector>(&s)) {
      if (dtype_bytes(k.buffers.at(v->buffer).elem) == 2 && !v->widen) continue;
      lanes.at(v->buffer) = std::max(lanes.at(v->buffer), uint32_t(v->results.size()));
    } else if (const auto* i = std::get_if<kir::If>(&s)) {
      note_buffer_vector_loads(k, *i->then_body, lanes);
      if (i->else_body) note_buffer_vector_loads(k, *i->else_body, lanes);
    } else if (const auto* f = std::get_if<kir::For>(&s)) {
      note_buffer_vector_loads(k, *f->body, lanes);
    }
  }
}

}  // namespace

void KernelEmitter::declare_buffers() {
  for (uint32_t i = 0; i < k_.buffers.size(); ++i) {
    const kir::BufferParam& b = k_.buffers[i];
    Id runtime_array = m_.type_runtime_array(type(b.elem), dtype_bytes(b.elem));
    Id block_type = m_.type_struct({runtime_array});
    m_.decorate(block_type, SpvDecorationBlock);
    m_.member_decorate(block_type, 0, SpvDecorationOffset, {0});
    if (b.access == kir::Access::Read) m_.member_decorate(block_type, 0, SpvDecorationNonWritable);
    if (b.access == kir::Access::Write) m_.member_decorate(block_type, 0, SpvDecorationNonReadable);
    Id var = m_.global_variable(m_.type_pointer(SpvStorageClassStorageBuffer, block_type), SpvStorageClassStorageBuffer);
    m_.decorate(var, SpvDecorationDescriptorSet, {0});
    m_.decorate(var, SpvDecorationBinding, {i});
    m_.name(block_type, b.name + "_block");
    m_.member_name(block_type, 0, "data");
    m_.name(var, b.name);
    buffer_vars_.push_back(var);
  }
  // A buffer with vector loads gets a second declaration at the same binding, as an array of vectors, read only:
  // variables sharing a binding alias one buffer (Vulkan's shader resource interface). Where neither is written the two
  // need no Aliased decoration; a read-write buffer's (a cache that decode attention reads and writes a row of) are
  // both decorated Aliased, so the driver keeps an invocation's store before its later loads through the view. Views
  // start on 16 bytes (kir::LoadBufferVector), so vectors are aligned.
  buffer_vector_vars_.assign(k_.buffers.size(), 0);
  buffer_lanes_.assign(k_.buffers.size(), 1);
  note_buffer_vector_loads(k_, k_.body, buffer_lanes_);
  for (uint32_t i = 0; i < k_.buffers.size(); ++i) {
    const kir::BufferParam& b = k_.buffers[i];
    const uint32_t lanes = buffer_lanes_[i];
    if (lanes == 1 || b.access == kir::Access::Write) continue;
    if (b.access == kir::Access::ReadWrite) m_.decorate(buffer_vars_[i], SpvDecorationAliased);
    if (dtype_bytes(b.elem) == 2) {
      // Widened 16-bit loads read 32-bit words, two elements each: without the Int16 capability SPIR-V cannot take a
      // 16-bit vector apart, but a word's halves convert to f32 with 32-bit instructions.
      const Id u32 = type(kir::Type::U32);
      buffer_vector_vars_[i] =
          declare_read_only_view(i, lanes == 2 ? u32 : m_.type_vector(u32, lanes / 2), 2 * lanes, b.name + "_words");
    } else {
      buffer_vector_vars_[i] = declare_read_only_view(i, m_.type_vector(type(b.elem), lanes),
                                                      dtype_bytes(b.elem) * lanes, b.name + "_vectors");
    }
    if (b.access == kir::Access::ReadWrite) m_.decorate(buffer_vector_vars_[i], SpvDecorationAliased);
  }
}

Id KernelEmitter::declare_read_only_view(uint32_t binding, Id element, uint32_t stride, const std::string& name) {
  return declare_view(binding, element, stride, name, SpvDecorationNonWritable);
}

Id KernelEmitter::declare_write_only_view(uint32_t binding, Id element, uint32_t stride, const std::string& name) {
  return declare_view(binding, element, stride, name, SpvDecorationNonReadable);
}

Id KernelEmitter::declare_view(uint32_t binding, Id element, uint32_t stride, const std::string& name,
                               SpvDecoration access) {
  Id block_type = m_.type_struct({m_.type_runtime_array(element, stride)});
  m_.decorate(block_type, SpvDecorationBlock);
  m_.member_decorate(block_type, 0, SpvDecorationOffset, {0});
  m_.member_decorate(block_type, 0, access);
  Id var = m_.global_variable(m_.type_pointer(SpvStorageClassStorageBuffer, block_type), SpvStorageClassStorageBuffer);
  m_.decorate(var, SpvDecorationDescriptorSet, {0});
  m_.decorate(var, SpvDecorationBinding, {binding});
  m_.name(block_type, name + "_block");
  m_.member_name(block_type, 0, "data");
  m_.name(var, name);
  return var;
}

void KernelEmitter::declare_scalars() {
  scalar_values_.assign(k_.scalars.size(), 0);
  if (k_.scalars.empty()) return;
  std::vector<Id> members;
  for (const auto& s : k_.scalars) members.push_back(type(s.type));
  Id block_type = m_.type_struct(members);
  m_.decorate(block_type, SpvDecorationBlock);
  m_.name(block_type, "Params");
  std::vector<uint32_t> offsets = k_.scalar_offsets();
  for (uint32_t i = 0; i < k_.scalars.size(); ++i) {
    m_.member_decorate(block_type, i, SpvDecorationOffset, {offsets[i]});
    m_.member_name(block_type, i, k_.scalars[i].name);
  }
  push_constants_ = m_.global_variable(m_.type_pointer(SpvStorageClassPushConstant, block_type),
                                       SpvStorageClassPushConstant);
  m_.name(push_constants_, "params");
}

void KernelEmitter::declare_shared_arrays() {
  for (uint32_t i = 0; i < k_.shared.size(); ++i) {
    const kir::SharedArray& s = k_.shared[i];
    // No ArrayStride: Workgroup memory has no explicit layout in Vulkan (it would be an error). Copy destinations
    // are arrays of 16-byte vectors (emit_copies.cpp).
    Id array = shared_vectors_.at(i)
                   ? m_.type_array(m_.type_vector(m_.type_int(32, false), 4), s.count * dtype_bytes(s.elem) / 16)
                   : m_.type_array(type(s.elem), s.count);
    Id var = m_.global_variable(m_.type_pointer(SpvStorageClassWorkgroup, array), SpvStorageClassWorkgroup);
    m_.name(var, s.name);
    shared_vars_.push_back(var);
  }
}

void KernelEmitter::declare_local_variables() {
  for (const auto& v : k_.vars) {
    Id pointer = m_.type_pointer(SpvStorageClassFunction, type(v.type));
    Id var = m_.new_id();
    append_instruction(locals_, SpvOpVariable, {pointer, var, uint32_t(SpvStorageClassFunction)});
    m_.name(var, v.name);
    local_vars_.push_back(var);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Builtins and scalar parameters, loaded once in the prologue

Id KernelEmitter::builtin_input(SpvBuiltIn builtin, Id value_type, const char* name) {
  auto it = builtin_loads_.find(uint32_t(builtin));
  if (it != builtin_loads_.end()) return it->second;
  Id var = m_.global_variable(m_.type_pointer(SpvStorageClassInput, value_type), SpvStorageClassInput);
  m_.decorate(var, SpvDecorationBuiltIn, {uint32_t(builtin)});
  m_.name(var, name);
  interface_.push_back(var);
  WriteInto into(current_, prologue_);
  Id loaded = op(SpvOpLoad, value_type, {var});
  builtin_loads_.emplace(uint32_t(builtin), loaded);
  return loaded;
}

Id KernelEmitter::builtin_value(kir::Builtin b) {
  auto it = builtin_values_.find(b);
  if (it != builtin_values_.end()) return it->second;
  Id u32 = m_.type_int(32, false);
  Id uvec3 = m_.type_vector(u32, 3);
  Id result = 0;
  auto component = [&](Id vec, uint32_t i) {
    WriteInto into(current_, prologue_);
    return op(SpvOpCompositeExtract, u32, {vec, i});
  };
  auto multiply = [&](Id a, Id b) {
    WriteInto into(current_, prologue_);
    return op(SpvOpIMul, u32, {a, b});
  };
  auto add = [&](Id a, Id b) {
    WriteInto into(current_, prologue_);
    return op(SpvOpIAdd, u32, {a, b});
  };
  switch (b) {
    case kir::Builtin::LocalId:
      result = builtin_input(SpvBuiltInLocalInvocationIndex, u32, "local_invocation_index");
      break;
    case kir::Builtin::LocalIdX:
    case kir::Builtin::LocalIdY:
    case kir::Builtin::LocalIdZ: {
      Id local = builtin_input(SpvBuiltInLocalInvocationId, uvec3, "local_invocation_id");
      result = component(local, uint32_t(b) - uint32_t(kir::Builtin::LocalIdX));
      break;
    }
    case kir::Builtin::GroupId: {
      // The runtime may fold a long 1D grid into 2D/3D; x is the fastest dimension:
      // group = id.x + nx * (id.y + ny * id.z).
      Id id = builtin_input(SpvBuiltInWorkgroupId, uvec3, "workgroup_id");
      Id n = builtin_input(SpvBuiltInNumWorkgroups, uvec3, "num_workgroups");
      Id yz = add(component(id, 1), multiply(component(n, 1), component(id, 2)));
      result = add(component(id, 0), multiply(component(n, 0), yz));
      break;
    }
    case kir::Builtin::NumGroups: {
      Id n = builtin_input(SpvBuiltInNumWorkgroups, uvec3, "num_workgroups");
      result = multiply(multiply(component(n, 0), component(n, 1)), component(n, 2));
      break;
    }
    case kir::Builtin::WorkgroupSize:
      result = m_.constant_u32(k_.workgroup_invocations());
      break;
    case kir::Builtin::GlobalId:
      result = add(multiply(builtin_value(kir::Builtin::GroupId), builtin_value(kir::Builtin::WorkgroupSize)),
                   builtin_value(kir::Builtin::LocalId));
      break;
    case kir::Builtin::GlobalSize:
      result = multiply(builtin_value(kir::Builtin::NumGroups), builtin_value(kir::Builtin::WorkgroupSize));
      break;
    case kir::Builtin::SubgroupSize:
      result = builtin_input(SpvBuiltInSubgroupSize, u32, "subgroup_size");
      break;
    case kir::Builtin::SubgroupId:
      result = builtin_input(SpvBuiltInSubgroupId, u32, "subgroup_id");
      break;
    case kir::Builtin::SubgroupLocalId:
      result = builtin_input(SpvBuiltInSubgroupLocalInvocationId, u32, "subgroup_local_invocation_id");
      break;
  }
  if (result == 0) throw std::logic_error(fmt::format("SPIR-V backend: unknown builtin {}", int(b)));
  if (b != kir::Builtin::WorkgroupSize) m_.name(result, kir::builtin_name(b));  // a constant keeps its own name
  builtin_values_.emplace(b, result);
  return result;
}

Id KernelEmitter::scalar_value(uint32_t index) {
  if (scalar_values_[index] != 0) return scalar_values_[index];
  Id t = type(k_.scalars[index].type);
  WriteInto into(current_, prologue_);
  Id pointer = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassPushConstant, t),
                  {push_constants_, m_.constant_u32(index)});
  scalar_values_[index] = op(SpvOpLoad, t, {pointer});
  m_.name(scalar_values_[index], k_.scalars[index].name);
  return scalar_values_[index];
}

// ---------------------------------------------------------------------------------------------------------
// Statements

void KernelEmitter::block(const kir::Block& b) {
  for (const kir::Stmt& s : b.stmts) std::visit([&](const auto& st) { stmt(st); }, s);
}

void KernelEmitter::stmt(const kir::Instr& s) { values_[s.result] = instr(s); }

void KernelEmitter::stmt(const kir::StoreBuffer& s) {
  // Two written declarations of one binding would need the Aliased decoration (and the driver's caution with it).
  if (buffer_packed_views_.at(s.buffer) != 0)
    throw std::logic_error(fmt::format("SPIR-V backend: buffer {} takes packed fragment stores and also element stores; "
                                       "packed stores go only into buffers nothing else writes",
                                       k_.buffers[s.buffer].name));
  store_memory(buffer_element(s.buffer, s.index), value(s.value));
}

void KernelEmitter::stmt(const kir::StoreShared& s) {
  store_memory(shared_element(s.array, s.index), value(s.value));
}

void KernelEmitter::stmt(const kir::LoadSharedVector& s) {
  // Element by element: workgroup arrays stay arrays of scalars. Declared as arrays of vectors (so that a vector is one
  // OpLoad), the element stores that fill them compile badly on NVIDIA's Vulkan driver: the resnet18 convolutions at
  // batch 64 took 89 ms in all instead of 71 (docs/PERFORMANCE.md), one of them 3x as long.
  const kir::Type t = k_.shared.at(s.array).elem;
  const kir::Type index_type = k_.value_types.at(s.index);
  for (uint32_t i = 0; i < s.results.size(); ++i) {
    Id index = i == 0 ? value(s.index) : op(SpvOpIAdd, type(index_type), {value(s.index), int_constant(index_type, i)});
    if (shared_vectors_.at(s.array)) {
      values_[s.results[i]] = load_from_vectors(s.array, as_u32(index_type, index));
      continue;
    }
    Id pointer = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassWorkgroup, type(t)), {shared_vars_.at(s.array), index});
    values_[s.results[i]] = load_memory(type(t), pointer);
  }
}

// Through the buffer's array-of-vectors declaration where it has one (buffers not write-only whose vector loads all
// have this width; a 16-bit buffer's view holds 32-bit words, for its widened loads); else element by element. Widened
// (f16/bf16 to f32), each element as a cast converts it, or a word's halves split (widen_words).
void KernelEmitter::stmt(const kir::LoadBufferVector& s) {
  const kir::Type t = k_.buffers.at(s.buffer).elem;
  const kir::Type index_type = k_.value_types.at(s.index);
  const uint32_t lanes = uint32_t(s.results.size());
  if (buffer_vector_vars_.at(s.buffer) != 0 && buffer_lanes_.at(s.buffer) == lanes && (s.widen || dtype_bytes(t) == 4)) {
    const uint32_t words = lanes / 2;
    const Id u32 = type(kir::Type::U32);
    const Id vector_type = !s.widen ? m_.type_vector(type(t), lanes) : words == 1 ? u32 : m_.type_vector(u32, words);
    Id which = op(SpvOpShiftRightLogical, type(index_type), {value(s.index), int_constant(index_type, lanes == 4 ? 2 : 1)});
    Id pointer = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassStorageBuffer, vector_type),
                    {buffer_vector_vars_[s.buffer], m_.constant_u32(0), which});
    Id loaded = load_buffer(s.buffer, vector_type, pointer);
    if (s.widen) return widen_words(s, loaded);
    for (uint32_t i = 0; i < lanes; ++i) values_[s.results[i]] = op(SpvOpCompositeExtract, type(t), {loaded, i});
    return;
  }
  for (uint32_t i = 0; i < lanes; ++i) {
    Id index = i == 0 ? value(s.index) : op(SpvOpIAdd, type(index_type), {value(s.index), int_constant(index_type, i)});
    Id pointer = op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassStorageBuffer, type(t)),
                    {buffer_vars_.at(s.buffer), m_.constant_u32(0), index});
    Id v = load_buffer(s.buffer, type(t), pointer);
    values_[s.results[i]] = s.widen ? convert(v, t, kir::Type::F32) : v;
  }
}

// A widened load's 32-bit words (`loaded`: a u32, or a vector of them) as f32 elements: element 2j is word j's low
// half, 2j + 1 its high half (little-endian); a bf16 half is the top of an f32 (a shift or a mask), an f16 pair unpacks.
void KernelEmitter::widen_words(const kir::LoadBufferVector& s, Id loaded) {
  const uint32_t words = uint32_t(s.results.size()) / 2;
  const Id f32 = type(kir::Type::F32), u32 = type(kir::Type::U32);
  for (uint32_t j = 0; j < words; ++j) {
    Id w = words == 1 ? loaded : op(SpvOpCompositeExtract, u32, {loaded, j});
    if (k_.buffers.at(s.buffer).elem == kir::Type::BF16) {
      values_[s.results[2 * j]] = op(SpvOpBitcast, f32, {op(SpvOpShiftLeftLogical, u32, {w, m_.constant_u32(16)})});
      values_[s.results[2 * j + 1]] = op(SpvOpBitcast, f32, {op(SpvOpBitwiseAnd, u32, {w, m_.constant_u32(0xFFFF0000u)})});
    } else {
      Id pair = ext(GLSLstd450UnpackHalf2x16, m_.type_vector(f32, 2), {w});
      values_[s.results[2 * j]] = op(SpvOpCompositeExtract, f32, {pair, 0});
      values_[s.results[2 * j + 1]] = op(SpvOpCompositeExtract, f32, {pair, 1});
    }
  }
}

void KernelEmitter::stmt(const kir::StoreVar& s) { op_void(SpvOpStore, {local_vars_.at(s.var), value(s.value)}); }

void KernelEmitter::stmt(const kir::Barrier&) {
  // Every invocation of the workgroup waits here, and its earlier writes to workgroup memory are visible to the others
  // afterwards; so are its writes to storage buffers where the kernel has a buffer it both reads and writes. Only such
  // a buffer can show one invocation another's write (kir rejects loads from write-only buffers), and ordering storage
  // buffers too costs NVIDIA's Vulkan compiler a MEMBAR.SC.CTA after every barrier, which waits for every load in
  // flight, the next slices' copies included (docs/PERFORMANCE.md).
  // Under the Vulkan memory model the barrier must also make the writes available and visible (GLSL450 implies it).
  Id workgroup = m_.constant_u32(SpvScopeWorkgroup);
  uint32_t bits = SpvMemorySemanticsAcquireReleaseMask | SpvMemorySemanticsWorkgroupMemoryMask;
  if (barriers_order_buffers_) bits |= SpvMemorySemanticsUniformMemoryMask;
  if (vulkan_memory_model_) bits |= SpvMemorySemanticsMakeAvailableMask | SpvMemorySemanticsMakeVisibleMask;
  Id semantics = m_.constant_u32(bits);
  op_void(SpvOpControlBarrier, {workgroup, workgroup, semantics});
}

void KernelEmitter::stmt(const kir::If& s) {
  Id then_label = m_.new_id();
  Id merge_label = m_.new_id();
  Id else_label = s.else_body ? m_.new_id() : merge_label;
  op_void(SpvOpSelectionMerge, {merge_label, uint32_t(SpvSelectionControlMaskNone)});
  op_void(SpvOpBranchConditional, {value(s.cond), then_label, else_label});
  label(then_label);
  block(*s.then_body);
  branch(merge_label);
  if (s.else_body) {
    label(else_label);
    block(*s.else_body);
    branch(merge_label);
  }
  label(merge_label);
}

void KernelEmitter::stmt(const kir::For& s) {
  // for (var = begin; var < end; var += step) body, as a structured loop:
  //   header:    OpLoopMerge merge continue; -> condition
  //   condition: var < end ? body : merge
  //   body:      ...; -> continue
  //   continue:  var += step; -> header (the back edge)
  //   merge:
  kir::Type t = k_.vars.at(s.var).type;
  Id var = local_vars_.at(s.var);
  Id vt = type(t);
  Id header = m_.new_id(), condition = m_.new_id(), body = m_.new_id(), continue_target = m_.new_id(),
     merge = m_.new_id();

  op_void(SpvOpStore, {var, value(s.begin)});
  branch(header);

  label(header);
  op_void(SpvOpLoopMerge, {merge, continue_target, uint32_t(SpvLoopControlMaskNone)});
  branch(condition);

  label(condition);
  Id i = op(SpvOpLoad, vt, {var});
  Id in_range = op(kir::is_signed_int(t) ? SpvOpSLessThan : SpvOpULessThan, bool_type(), {i, value(s.end)});
  op_void(SpvOpBranchConditional, {in_range, body, merge});

  label(body);
  block(*s.body);
  branch(continue_target);

  label(continue_target);
  Id current = op(SpvOpLoad, vt, {var});
  op_void(SpvOpStore, {var, op(SpvOpIAdd, vt, {current, value(s.step)})});
  branch(header);

  label(merge);
}

void KernelEmitter::label(Id id) { append_instruction(*current_, SpvOpLabel, {id}); }
void KernelEmitter::branch(Id target) { append_instruction(*current_, SpvOpBranch, {target}); }

// ---------------------------------------------------------------------------------------------------------
// Instruction writing, types, constants

Id KernelEmitter::op(SpvOp opcode, Id result_type, std::initializer_list<Id> operands) {
  Id result = m_.new_id();
  Words w{result_type, result};
  w.insert(w.end(), operands.begin(), operands.end());
  append_instruction(*current_, opcode, w);
  if (no_contraction_ && (opcode == SpvOpFAdd || opcode == SpvOpFSub || opcode == SpvOpFMul || opcode == SpvOpFDiv))
    m_.decorate(result, SpvDecorationNoContraction);
  return result;
}

void KernelEmitter::op_void(SpvOp opcode, std::initializer_list<uint32_t> operands) {
  append_instruction(*current_, opcode, operands);
}

Id KernelEmitter::ext(GLSLstd450 inst, Id result_type, std::initializer_list<Id> operands) {
  Id result = m_.new_id();
  Words w{result_type, result, m_.glsl_std_450(), uint32_t(inst)};
  w.insert(w.end(), operands.begin(), operands.end());
  append_instruction(*current_, SpvOpExtInst, w);
  return result;
}

Words KernelEmitter::memory_operands() const {
  if (!vulkan_memory_model_) return {};
  return {uint32_t(SpvMemoryAccessNonPrivatePointerMask)};
}

Id KernelEmitter::load_memory(Id result_type, Id pointer) {
  Id result = m_.new_id();
  Words w{result_type, result, pointer};
  for (uint32_t word : memory_operands()) w.push_back(word);
  append_instruction(*current_, SpvOpLoad, w);
  return result;
}

// A read-only buffer's contents come from earlier dispatches, which the runtime's pipeline barriers make visible to
// every access; nothing inside the dispatch writes them, so its loads need not be non-private (which only shader-side
// barriers look at) and stay free for the driver to cache and reorder.
Id KernelEmitter::load_buffer(uint32_t buffer, Id result_type, Id pointer) {
  if (k_.buffers.at(buffer).access != kir::Access::Read) return load_memory(result_type, pointer);
  return op(SpvOpLoad, result_type, {pointer});
}

void KernelEmitter::store_memory(Id pointer, Id v) {
  Words w{pointer, v};
  for (uint32_t word : memory_operands()) w.push_back(word);
  append_instruction(*current_, SpvOpStore, w);
}

Id KernelEmitter::value(kir::ValueId v) const {
  if (v >= values_.size() || values_[v] == 0)
    throw std::logic_error(fmt::format("SPIR-V backend: value %{} used before it was emitted", v));
  return values_[v];
}

Id KernelEmitter::type(kir::Type t) {
  switch (t) {
    case kir::Type::Bool: return m_.type_bool();
    case kir::Type::I32: return m_.type_int(32, true);
    case kir::Type::U32: return m_.type_int(32, false);
    case kir::Type::I64: return m_.type_int(64, true);
    case kir::Type::F16: return m_.type_float(16);
    case kir::Type::F32: return m_.type_float(32);
    case kir::Type::F64: return m_.type_float(64);
    case kir::Type::BF16: return m_.type_int(16, false);  // a 16-bit word: the top half of an f32 (emit_ops.cpp)
  }
  throw std::logic_error("SPIR-V backend: unknown type");
}

Id KernelEmitter::unsigned_type(kir::Type t) { return m_.type_int(dtype_bytes(t) * 8, false); }
Id KernelEmitter::signed_type(kir::Type t) { return m_.type_int(dtype_bytes(t) * 8, true); }

}  // namespace spire::spirv
