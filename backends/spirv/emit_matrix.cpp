// kir's cooperative matrices (kernel.h's MatrixFragment and its four statements) as SPV_KHR_cooperative_matrix.
//
// Each fragment is a Function variable of cooperative-matrix type (the driver keeps it in registers, as it does the
// kernel's other variables); a statement loads the fragments it reads and stores the one it writes. Loads and stores
// go through a pointer to the workgroup array's element at the statement's index: the extension lets a matrix's
// component type differ from the pointer's (bf16 operands are staged as 16-bit words, or as 16-byte vectors where
// copies fill them), and counts the stride in the pointer's elements. The sizes are kir's fixed 16 x 16 (x 16) and the scope a subgroup.
//
// Workgroup matrices (Feature::WorkgroupMatrix) are the same types at workgroup scope, of the fragment's own sizes
// (VK_NV_cooperative_matrix2's flexible dimensions), moved by SPV_NV_cooperative_matrix2's tensor loads and stores:
// a 2-dimensional tensor layout of the buffer's matrix (clamped to zeros outside it), sliced to the block, through a
// pointer to the buffer's element `base`; a column-major fragment reads the layout through a transposing tensor view.
#include <fmt/format.h>

#include <stdexcept>

#include "backends/spirv/kernel_emitter.h"
#include "backends/spirv/khr_matrix_enums.h"
#include "backends/spirv/nv_matrix_enums.h"

namespace spire::spirv {

// bf16 components are SPV_KHR_bfloat16's type; every other element type is the kernel's own.
Id KernelEmitter::fragment_component_type(const kir::MatrixFragment& f) {
  return f.elem == kir::Type::BF16 ? m_.type_bfloat16() : type(f.elem);
}

Id KernelEmitter::fragment_type(const kir::MatrixFragment& f) {
  uint32_t use = 0;
  switch (f.use) {
    case kir::MatrixUse::A: use = khr::kMatrixA; break;
    case kir::MatrixUse::B: use = khr::kMatrixB; break;
    case kir::MatrixUse::Accumulator: use = khr::kMatrixAccumulator; break;
    case kir::MatrixUse::WarpgroupAccumulator:
      throw std::logic_error(fmt::format("SPIR-V backend: warpgroup accumulator {} has no Vulkan form", f.name));
  }
  const Id component = fragment_component_type(f);
  if (f.workgroup) return m_.type_cooperative_matrix(component, f.rows, f.columns, use, SpvScopeWorkgroup);
  return m_.type_cooperative_matrix(component, kir::kMatrixTile, kir::kMatrixTile, use);
}

void KernelEmitter::declare_fragments() {
  for (const kir::MatrixFragment& f : k_.fragments) {
    Id var = m_.new_id();
    append_instruction(locals_, SpvOpVariable,
                       {m_.type_pointer(SpvStorageClassFunction, fragment_type(f)), var, uint32_t(SpvStorageClassFunction)});
    m_.name(var, f.name);
    fragment_vars_.push_back(var);
  }
}

// A matrix's pointer and stride in the array's declared elements: 16-byte vectors for copy destinations
// (emit_copies.cpp), whose matrices start on 32 bytes and whose strides are multiples of 16 bytes (kernel.h).
std::pair<Id, Id> KernelEmitter::matrix_memory(uint32_t array, kir::ValueId index, uint32_t stride) {
  if (!shared_vectors_.at(array)) return {shared_element(array, index), m_.constant_u32(stride)};
  const uint32_t per_vector = 16 / dtype_bytes(k_.shared.at(array).elem);
  return {copy_destination(array, as_u32(index)), m_.constant_u32(stride / per_vector)};
}

void KernelEmitter::stmt(const kir::MatrixFill& s) {
  // A composite of cooperative-matrix type takes one constituent, which every element gets.
  Id t = fragment_type(k_.fragments.at(s.fragment));
  op_void(SpvOpStore, {fragment_vars_.at(s.fragment), op(SpvOpCompositeConstruct, t, {value(s.value)})});
}

void KernelEmitter::stmt(const kir::MatrixLoad& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  Id t = fragment_type(f);
  Id layout = m_.constant_u32(f.column_major ? khr::kColumnMajor : khr::kRowMajor);
  auto [pointer, stride] = matrix_memory(s.array, s.index, s.stride);
  Words w{t, m_.new_id(), pointer, layout, stride};
  for (uint32_t word : memory_operands()) w.push_back(word);
  append_instruction(*current_, SpvOp(khr::kOpCooperativeMatrixLoad), w);
  op_void(SpvOpStore, {fragment_vars_.at(s.fragment), w[1]});
}

void KernelEmitter::stmt(const kir::MatrixStore& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  Id object = op(SpvOpLoad, fragment_type(f), {fragment_vars_.at(s.fragment)});
  Id layout = m_.constant_u32(f.column_major ? khr::kColumnMajor : khr::kRowMajor);
  auto [pointer, stride] = matrix_memory(s.array, s.index, s.stride);
  Words w{pointer, object, layout, stride};
  for (uint32_t word : memory_operands()) w.push_back(word);
  append_instruction(*current_, SpvOp(khr::kOpCooperativeMatrixStore), w);
}

void KernelEmitter::stmt(const kir::MatrixMulAdd& s) {
  auto load = [&](uint32_t fragment) {
    return op(SpvOpLoad, fragment_type(k_.fragments.at(fragment)), {fragment_vars_.at(fragment)});
  };
  Id a = load(s.a), b = load(s.b), c = load(s.c);
  // Float components: no signedness operands.
  Id d = op(SpvOp(khr::kOpCooperativeMatrixMulAdd), fragment_type(k_.fragments.at(s.d)), {a, b, c});
  op_void(SpvOpStore, {fragment_vars_.at(s.d), d});
}

// The tensor layout and addressing operands of a workgroup matrix's block (kernel.h's MatrixLoadTensor): the
// buffer's matrix in storage order (rows x columns, or columns x rows for a column-major fragment read through a
// transposing view), sliced to the fragment's extent at (row, column).
KernelEmitter::TensorAccess KernelEmitter::tensor_access(const kir::MatrixFragment& f, uint32_t buffer, kir::ValueId base,
                                                         kir::ValueId row, kir::ValueId column, kir::ValueId rows,
                                                         kir::ValueId columns) {
  const Id layout_type = m_.type_tensor_layout(2, nv::kClampConstant);
  Id layout = op(SpvOp(nv::kOpCreateTensorLayout), layout_type, {});
  Id r = value(row), c = value(column), span_r = m_.constant_u32(f.rows), span_c = m_.constant_u32(f.columns);
  if (!f.column_major) {
    layout = op(SpvOp(nv::kOpTensorLayoutSetDimension), layout_type, {layout, value(rows), value(columns)});
    layout = op(SpvOp(nv::kOpTensorLayoutSlice), layout_type, {layout, r, span_r, c, span_c});
  } else {
    layout = op(SpvOp(nv::kOpTensorLayoutSetDimension), layout_type, {layout, value(columns), value(rows)});
    layout = op(SpvOp(nv::kOpTensorLayoutSlice), layout_type, {layout, c, span_c, r, span_r});
  }
  // No memory operand bits: these kernels read buffers other dispatches wrote and write ones later dispatches read,
  // which the runtime's barriers between launches order; nothing inside a dispatch synchronizes on them, so the
  // accesses may stay private (as glslang writes them; with NonPrivatePointer they ran no differently on an H200).
  TensorAccess a{buffer_element(buffer, base), layout, {SpvMemoryAccessMaskNone}, {nv::kTensorAddressingNone}};
  if (f.column_major) {
    Id view = op(SpvOp(nv::kOpCreateTensorView), m_.type_tensor_view({1, 0}), {});
    a.addressing = {nv::kTensorAddressingTensorView, view};
  }
  return a;
}

void KernelEmitter::stmt(const kir::MatrixLoadTensor& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  TensorAccess a = tensor_access(f, s.buffer, s.base, s.row, s.column, s.rows, s.columns);
  Id t = fragment_type(f);
  // 'Object' gives the elements a view clips away; these views clip nothing, so it may be undefined.
  Id undefined = op(SpvOpUndef, t, {});
  Words w{t, m_.new_id(), a.pointer, undefined, a.layout};
  w.insert(w.end(), a.memory.begin(), a.memory.end());
  w.insert(w.end(), a.addressing.begin(), a.addressing.end());
  append_instruction(*current_, SpvOp(nv::kOpCooperativeMatrixLoadTensor), w);
  op_void(SpvOpStore, {fragment_vars_.at(s.fragment), w[1]});
}

void KernelEmitter::stmt(const kir::MatrixStoreTensor& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  TensorAccess a = tensor_access(f, s.buffer, s.base, s.row, s.column, s.rows, s.columns);
  Id object = op(SpvOpLoad, fragment_type(f), {fragment_vars_.at(s.fragment)});
  Words w{a.pointer, object, a.layout};
  w.insert(w.end(), a.memory.begin(), a.memory.end());
  w.insert(w.end(), a.addressing.begin(), a.addressing.end());
  append_instruction(*current_, SpvOp(nv::kOpCooperativeMatrixStoreTensor), w);
}

// This invocation's 16 bytes of a packed operand (kernel.h's MatrixLoadPacked and MatrixStorePacked) in `view`, a
// uvec4 declaration of the buffer: element `index` on, a multiple of kPackedShare.
Id KernelEmitter::packed_share_pointer(Id view, const kir::MatrixFragment& f, kir::ValueId index) {
  Id uvec4 = m_.type_vector(m_.type_int(32, false), 4);
  return op(SpvOpAccessChain, m_.type_pointer(SpvStorageClassStorageBuffer, uvec4),
            {view, m_.constant_u32(0), vector_index(f.elem, as_u32(index))});
}

// A packed share (kernel.h's MatrixLoadPacked): one 16-byte load through the buffer's vector view (emit_copies.cpp
// declares it, as for a copy's source), each of its words split into 16-bit halves, the fragment's components
// 2w and 2w + 1 (OpCompositeInsert with one index addresses this invocation's own components, in the
// order the driver keeps them; kPackedShare of them for a 16x16 operand in a subgroup of 32).
void KernelEmitter::stmt(const kir::MatrixLoadPacked& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  Id t = fragment_type(f), component = fragment_component_type(f);
  Id u32 = m_.type_int(32, false), u16 = m_.type_int(16, false);
  Id uvec4 = m_.type_vector(u32, 4), u16vec2 = m_.type_vector(u16, 2);
  Id words = load_buffer(s.buffer, uvec4, packed_share_pointer(buffer_copy_views_.at(s.buffer), f, s.index));
  Id matrix = op(SpvOpUndef, t, {});
  for (uint32_t w = 0; w < kir::kPackedShare / 2; ++w) {
    Id halves = op(SpvOpBitcast, u16vec2, {op(SpvOpCompositeExtract, u32, {words, w})});
    for (uint32_t h = 0; h < 2; ++h) {
      Id bits = op(SpvOpCompositeExtract, u16, {halves, h});
      matrix = op(SpvOpCompositeInsert, t, {op(SpvOpBitcast, component, {bits}), matrix, 2 * w + h});
    }
  }
  op_void(SpvOpStore, {fragment_vars_.at(s.fragment), matrix});
}

// The other way: the components paired into words, one 16-byte store through a written vector view.
void KernelEmitter::stmt(const kir::MatrixStorePacked& s) {
  const kir::MatrixFragment& f = k_.fragments.at(s.fragment);
  Id object = op(SpvOpLoad, fragment_type(f), {fragment_vars_.at(s.fragment)});
  Id u32 = m_.type_int(32, false), u16 = m_.type_int(16, false);
  Id uvec4 = m_.type_vector(u32, 4), u16vec2 = m_.type_vector(u16, 2);
  Id component = fragment_component_type(f);
  std::vector<Id> words;
  for (uint32_t w = 0; w < kir::kPackedShare / 2; ++w) {
    Id halves[2];
    for (uint32_t h = 0; h < 2; ++h)
      halves[h] = op(SpvOpBitcast, u16, {op(SpvOpCompositeExtract, component, {object, 2 * w + h})});
    words.push_back(op(SpvOpBitcast, u32, {op(SpvOpCompositeConstruct, u16vec2, {halves[0], halves[1]})}));
  }
  Id vector = op(SpvOpCompositeConstruct, uvec4, {words[0], words[1], words[2], words[3]});
  store_memory(packed_share_pointer(buffer_packed_views_.at(s.buffer), f, s.index), vector);
}

}  // namespace spire::spirv
