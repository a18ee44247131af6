#include "backends/spirv/module_builder.h"

#include "backends/spirv/khr_matrix_enums.h"
#include "backends/spirv/nv_matrix_enums.h"

#include <stdexcept>

namespace spire::spirv {

void append_instruction(Words& out, SpvOp op, const Words& operands) {
  size_t count = operands.size() + 1;
  if (count > 0xFFFF) throw std::length_error("SPIR-V instruction longer than 65535 words");
  out.push_back(uint32_t(count) << SpvWordCountShift | uint32_t(op));
  out.insert(out.end(), operands.begin(), operands.end());
}

void append_instruction(Words& out, SpvOp op, std::initializer_list<uint32_t> operands) {
  append_instruction(out, op, Words(operands));
}

void append_string(Words& out, std::string_view s) {
  // Bytes fill each word from its lowest-order byte; the NUL terminator is always present, so a string whose
  // length is a multiple of 4 takes one more (zero) word.
  size_t words = s.size() / 4 + 1;
  size_t first = out.size();
  out.resize(first + words, 0);
  for (size_t i = 0; i < s.size(); ++i) out[first + i / 4] |= uint32_t(uint8_t(s[i])) << (8 * (i % 4));
}

void ModuleBuilder::add_capability(SpvCapability c) {
  if (capability_set_.insert(uint32_t(c)).second) append_instruction(capabilities_, SpvOpCapability, {uint32_t(c)});
}

void ModuleBuilder::add_extension(std::string_view name) {
  if (extension_set_.count(name)) return;
  extension_set_.emplace(name);
  Words operands;
  append_string(operands, name);
  append_instruction(extensions_, SpvOpExtension, operands);
}

Id ModuleBuilder::glsl_std_450() {
  if (glsl_std_450_ == 0) {
    glsl_std_450_ = new_id();
    Words operands{glsl_std_450_};
    append_string(operands, "GLSL.std.450");
    append_instruction(ext_inst_imports_, SpvOpExtInstImport, operands);
  }
  return glsl_std_450_;
}

void ModuleBuilder::set_memory_model(SpvAddressingModel addressing, SpvMemoryModel memory) {
  memory_model_.clear();
  append_instruction(memory_model_, SpvOpMemoryModel, {uint32_t(addressing), uint32_t(memory)});
}

void ModuleBuilder::add_entry_point(SpvExecutionModel model, Id function, std::string_view name,
                                    const std::vector<Id>& interface) {
  Words operands{uint32_t(model), function};
  append_string(operands, name);
  operands.insert(operands.end(), interface.begin(), interface.end());
  append_instruction(entry_points_, SpvOpEntryPoint, operands);
}

void ModuleBuilder::add_execution_mode(Id function, SpvExecutionMode mode, std::initializer_list<uint32_t> literals) {
  Words operands{function, uint32_t(mode)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  append_instruction(execution_modes_, SpvOpExecutionMode, operands);
}

void ModuleBuilder::name(Id target, std::string_view name) {
  Words operands{target};
  append_string(operands, name);
  append_instruction(debug_names_, SpvOpName, operands);
}

void ModuleBuilder::member_name(Id struct_type, uint32_t member, std::string_view name) {
  Words operands{struct_type, member};
  append_string(operands, name);
  append_instruction(debug_names_, SpvOpMemberName, operands);
}

void ModuleBuilder::decorate(Id target, SpvDecoration decoration, std::initializer_list<uint32_t> literals) {
  Words operands{target, uint32_t(decoration)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  append_instruction(annotations_, SpvOpDecorate, operands);
}

void ModuleBuilder::member_decorate(Id struct_type, uint32_t member, SpvDecoration decoration,
                                    std::initializer_list<uint32_t> literals) {
  Words operands{struct_type, member, uint32_t(decoration)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  append_instruction(annotations_, SpvOpMemberDecorate, operands);
}

Id ModuleBuilder::deduplicated(std::map<Words, Id>& table, SpvOp op, const Words& operands_after_result) {
  Words key{uint32_t(op)};
  key.insert(key.end(), operands_after_result.begin(), operands_after_result.end());
  auto it = table.find(key);
  if (it != table.end()) return it->second;
  Id id = new_id();
  table.emplace(std::move(key), id);
  Words operands{id};
  operands.insert(operands.end(), operands_after_result.begin(), operands_after_result.end());
  append_instruction(types_constants_globals_, op, operands);
  return id;
}

Id ModuleBuilder::type_void() { return deduplicated(types_, SpvOpTypeVoid, {}); }
Id ModuleBuilder::type_bool() { return deduplicated(types_, SpvOpTypeBool, {}); }
Id ModuleBuilder::type_int(uint32_t width, bool is_signed) {
  return deduplicated(types_, SpvOpTypeInt, {width, is_signed ? 1u : 0u});
}
Id ModuleBuilder::type_float(uint32_t width) { return deduplicated(types_, SpvOpTypeFloat, {width}); }
Id ModuleBuilder::type_bfloat16() {
  return deduplicated(types_, SpvOpTypeFloat, {16, khr::kFPEncodingBFloat16});
}
Id ModuleBuilder::type_cooperative_matrix(Id component, uint32_t rows, uint32_t columns, uint32_t use, uint32_t scope) {
  // The scope, sizes and use are <id>s of constants, created first: they must precede the type in the section.
  Words operands{component, constant_u32(scope), constant_u32(rows), constant_u32(columns), constant_u32(use)};
  return deduplicated(types_, SpvOp(khr::kOpTypeCooperativeMatrix), operands);
}
Id ModuleBuilder::type_tensor_layout(uint32_t dims, uint32_t clamp_mode) {
  Words operands{constant_u32(dims), constant_u32(clamp_mode)};
  return deduplicated(types_, SpvOp(nv::kOpTypeTensorLayout), operands);
}
Id ModuleBuilder::type_tensor_view(const std::vector<uint32_t>& permutation) {
  Words operands{constant_u32(uint32_t(permutation.size())), constant_bool(false)};
  for (uint32_t p : permutation) operands.push_back(constant_u32(p));
  return deduplicated(types_, SpvOp(nv::kOpTypeTensorView), operands);
}
Id ModuleBuilder::type_vector(Id component, uint32_t count) {
  return deduplicated(types_, SpvOpTypeVector, {component, count});
}
Id ModuleBuilder::type_array(Id element, uint32_t length) {
  Id length_id = constant_u32(length);  // created first: it must precede the array in the section
  return deduplicated(types_, SpvOpTypeArray, {element, length_id});
}

Id ModuleBuilder::type_runtime_array(Id element, uint32_t stride) {
  // The stride is part of the key but not an operand: it is a decoration on the type.
  Words key{uint32_t(SpvOpTypeRuntimeArray), element, ~0u, stride};
  auto it = types_.find(key);
  if (it != types_.end()) return it->second;
  Id id = new_id();
  types_.emplace(std::move(key), id);
  append_instruction(types_constants_globals_, SpvOpTypeRuntimeArray, {id, element});
  decorate(id, SpvDecorationArrayStride, {stride});
  return id;
}

Id ModuleBuilder::type_pointer(SpvStorageClass storage, Id pointee) {
  return deduplicated(types_, SpvOpTypePointer, {uint32_t(storage), pointee});
}

Id ModuleBuilder::type_function(Id result, const std::vector<Id>& params) {
  Words operands{result};
  operands.insert(operands.end(), params.begin(), params.end());
  return deduplicated(types_, SpvOpTypeFunction, operands);
}

Id ModuleBuilder::type_struct(const std::vector<Id>& members) {
  Id id = new_id();
  Words operands{id};
  operands.insert(operands.end(), members.begin(), members.end());
  append_instruction(types_constants_globals_, SpvOpTypeStruct, operands);
  return id;
}

Id ModuleBuilder::typed_constant(SpvOp op, Id type, const Words& bits) {
  // A constant's result type comes before its result id, so it cannot go through deduplicated().
  Words key{uint32_t(op), type};
  key.insert(key.end(), bits.begin(), bits.end());
  auto it = constants_.find(key);
  if (it != constants_.end()) return it->second;
  Id id = new_id();
  constants_.emplace(std::move(key), id);
  Words instr{type, id};
  instr.insert(instr.end(), bits.begin(), bits.end());
  append_instruction(types_constants_globals_, op, instr);
  return id;
}

Id ModuleBuilder::constant(Id type, const Words& bits) { return typed_constant(SpvOpConstant, type, bits); }

Id ModuleBuilder::constant_bool(bool value) {
  return typed_constant(value ? SpvOpConstantTrue : SpvOpConstantFalse, type_bool(), {});
}

Id ModuleBuilder::constant_u32(uint32_t value) { return constant(type_int(32, false), {value}); }

Id ModuleBuilder::constant_null(Id type) { return typed_constant(SpvOpConstantNull, type, {}); }

Id ModuleBuilder::global_variable(Id pointer_type, SpvStorageClass storage) {
  Id id = new_id();
  append_instruction(types_constants_globals_, SpvOpVariable, {pointer_type, id, uint32_t(storage)});
  return id;
}

Words ModuleBuilder::assemble(uint32_t version) const {
  // Generator 0: no registered generator id (the tools then print "Unknown").
  Words out{SpvMagicNumber, version, 0u, next_id_, 0u};
  for (const Words* section : {&capabilities_, &extensions_, &ext_inst_imports_, &memory_model_, &entry_points_,
                               &execution_modes_, &debug_names_, &annotations_, &types_constants_globals_,
                               &functions_})
    out.insert(out.end(), section->begin(), section->end());
  return out;
}

}  // namespace spire::spirv
