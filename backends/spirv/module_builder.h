// A SPIR-V module under construction: ids, one word vector per logical-layout section, and deduplicated
// types and constants. It knows SPIR-V, not the kernel IR (emit_kernel.cpp walks the IR).
//
// SPIR-V requires the sections in a fixed order (capabilities, extensions, ext-inst imports, memory model,
// entry points, execution modes, debug names, annotations, types/constants/globals, functions), but a
// compiler discovers what it needs in program order. Writing each section into its own vector and joining
// them in assemble() lets the emitter ask for a capability or a constant at the moment it needs one.
#pragma once

#include <spirv/unified1/spirv.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace spire::spirv {

using Id = uint32_t;
using Words = std::vector<uint32_t>;

// Appends one instruction (word count and opcode, then the operands) to `out`.
void append_instruction(Words& out, SpvOp op, std::initializer_list<uint32_t> operands);
void append_instruction(Words& out, SpvOp op, const Words& operands);
// Appends a literal string: UTF-8 bytes, NUL-terminated, zero-padded to a whole word, little-endian.
void append_string(Words& out, std::string_view s);

class ModuleBuilder {
 public:
  Id new_id() { return next_id_++; }
  uint32_t id_bound() const { return next_id_; }

  // Module-level declarations; capabilities and extensions are deduplicated.
  void add_capability(SpvCapability c);
  void add_extension(std::string_view name);
  Id glsl_std_450();  // the GLSL.std.450 import, created on first use
  void set_memory_model(SpvAddressingModel addressing, SpvMemoryModel memory);
  void add_entry_point(SpvExecutionModel model, Id function, std::string_view name, const std::vector<Id>& interface);
  void add_execution_mode(Id function, SpvExecutionMode mode, std::initializer_list<uint32_t> literals);

  // Debug names and annotations.
  void name(Id target, std::string_view name);
  void member_name(Id struct_type, uint32_t member, std::string_view name);
  void decorate(Id target, SpvDecoration decoration, std::initializer_list<uint32_t> literals = {});
  void member_decorate(Id struct_type, uint32_t member, SpvDecoration decoration,
                       std::initializer_list<uint32_t> literals = {});

  // Types, deduplicated (SPIR-V forbids two declarations of the same non-aggregate type).
  Id type_void();
  Id type_bool();
  Id type_int(uint32_t width, bool is_signed);
  Id type_float(uint32_t width);
  // bf16 as a float type of its own (SPV_KHR_bfloat16's OpTypeFloat 16 BFloat16KHR); only cooperative matrices use it.
  Id type_bfloat16();
  // SPV_KHR_cooperative_matrix's OpTypeCooperativeMatrixKHR: `rows` x `columns` of `component` held by a subgroup,
  // for `use` (khr_matrix_enums.h).
  Id type_cooperative_matrix(Id component, uint32_t rows, uint32_t columns, uint32_t use,
                             uint32_t scope = SpvScopeSubgroup);
  // SPV_NV_tensor_addressing (nv_matrix_enums.h): a tensor layout of `dims` dimensions and a clamp mode, and a tensor
  // view of `dims` dimensions without its own (the layout's span gives them) that permutes them as `permutation`.
  Id type_tensor_layout(uint32_t dims, uint32_t clamp_mode);
  Id type_tensor_view(const std::vector<uint32_t>& permutation);
  Id type_vector(Id component, uint32_t count);
  Id type_array(Id element, uint32_t length);
  // A runtime array decorated with ArrayStride `stride`; one per (element, stride).
  Id type_runtime_array(Id element, uint32_t stride);
  Id type_pointer(SpvStorageClass storage, Id pointee);
  Id type_function(Id result, const std::vector<Id>& params);
  // Structs are never deduplicated: each carries its own member decorations and names.
  Id type_struct(const std::vector<Id>& members);

  // Constants, deduplicated by type and value bits. `bits` holds the literal words (low word first; types
  // narrower than 32 bits zero- or sign-extended as the SPIR-V spec requires).
  Id constant(Id type, const Words& bits);
  Id constant_bool(bool value);
  Id constant_u32(uint32_t value);  // of type_int(32, false)
  Id constant_null(Id type);        // OpConstantNull: zeros of any type (a zero vector)

  // A module-scope OpVariable (Input, StorageBuffer, PushConstant, Workgroup...).
  Id global_variable(Id pointer_type, SpvStorageClass storage);

  // The function-definitions section; the caller writes whole functions into it.
  Words& functions() { return functions_; }

  // Header (SPIR-V `version`, id bound) followed by every section in logical-layout order.
  Words assemble(uint32_t version) const;

 private:
  Id deduplicated(std::map<Words, Id>& table, SpvOp op, const Words& operands_after_result);
  Id typed_constant(SpvOp op, Id type, const Words& bits);  // OpConstant*, deduplicated by opcode, type and bits

  Id next_id_ = 1;
  std::set<uint32_t> capability_set_;
  std::set<std::string, std::less<>> extension_set_;
  Id glsl_std_450_ = 0;

  Words capabilities_, extensions_, ext_inst_imports_, memory_model_, entry_points_, execution_modes_;
  Words debug_names_, annotations_, types_constants_globals_, functions_;

  std::map<Words, Id> types_;      // key: opcode, operands after the result id
  std::map<Words, Id> constants_;  // key: opcode, result type, value words
};

}  // namespace spire::spirv
