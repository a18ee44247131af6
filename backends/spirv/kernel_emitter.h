// Walks one kir::Kernel and writes its SPIR-V module through a ModuleBuilder (private to the backend).
//
// The work is split by purpose:
//  * emit_kernel.cpp: the module around the function (capabilities, resources, builtins, entry point) and
//    the statements and structured control flow of the body;
//  * emit_ops.cpp: one kir::Op -> the SPIR-V instruction of the right signed/unsigned/float variant;
//  * emit_math.cpp: operations whose SPIR-V/Vulkan form differs from C semantics (signed remainder, pow,
//    tanh) or does not exist for a type (GLSL.std.450 exp/log/pow/tanh take no f64).
#pragma once

#include <spirv/unified1/GLSL.std.450.h>

#include <initializer_list>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "backends/spirv/copy_plan.h"
#include "backends/spirv/module_builder.h"
#include "ir/kernel/kernel.h"

namespace spire::spirv {

// SPIR-V 1.3: the version every Vulkan 1.1 device accepts.
inline constexpr uint32_t kSpirvVersion = 0x00010300;

class KernelEmitter {
 public:
  explicit KernelEmitter(const kir::Kernel& k);
  // The whole module; call once.
  Words emit();

 private:
  // --- module around the function (emit_kernel.cpp)
  void declare_capabilities();
  void declare_buffers();
  void declare_scalars();
  void declare_shared_arrays();
  void declare_local_variables();
  // A second declaration of buffer `binding` as a read-only runtime array of `element` (`stride` bytes apart): variables
  // sharing a binding alias one buffer; where the buffer is also written, the caller decorates both Aliased.
  Id declare_read_only_view(uint32_t binding, Id element, uint32_t stride, const std::string& name);
  // The same for a buffer written only through the view (packed fragment stores): the buffer's own declaration is
  // then never accessed (stmt(StoreBuffer) refuses it), so the two still overlap in no access.
  Id declare_write_only_view(uint32_t binding, Id element, uint32_t stride, const std::string& name);
  Id declare_view(uint32_t binding, Id element, uint32_t stride, const std::string& name, SpvDecoration access);
  Id builtin_input(SpvBuiltIn builtin, Id type, const char* name);  // loaded once, in the prologue
  Id builtin_value(kir::Builtin b);
  Id scalar_value(uint32_t index);

  // --- statements and control flow (emit_kernel.cpp)
  void block(const kir::Block& b);
  void stmt(const kir::Instr&);
  void stmt(const kir::StoreBuffer&);
  void stmt(const kir::StoreShared&);
  void stmt(const kir::LoadSharedVector&);
  void stmt(const kir::LoadBufferVector&);
  void widen_words(const kir::LoadBufferVector& s, Id loaded);
  void stmt(const kir::StoreVar&);
  void stmt(const kir::Barrier&);
  // Vulkan's barriers between dispatches wait before a dispatch starts: nothing to wait for inside it.
  void stmt(const kir::WaitForPriorKernels&) {}
  void stmt(const kir::If&);
  void stmt(const kir::For&);
  // Cooperative matrices (emit_matrix.cpp): SPV_KHR_cooperative_matrix, each fragment a Function variable.
  void declare_fragments();
  Id fragment_type(const kir::MatrixFragment& f);
  Id fragment_component_type(const kir::MatrixFragment& f);
  std::pair<Id, Id> matrix_memory(uint32_t array, kir::ValueId index, uint32_t stride);  // pointer, stride
  void stmt(const kir::MatrixFill&);
  void stmt(const kir::MatrixLoad&);
  void stmt(const kir::MatrixStore&);
  void stmt(const kir::MatrixMulAdd&);
  // Workgroup matrices' tensor loads and stores (emit_matrix.cpp): SPV_NV_cooperative_matrix2.
  struct TensorAccess {
    Id pointer, layout;
    Words memory, addressing;  // the Memory Operand and Tensor Addressing Operands words
  };
  TensorAccess tensor_access(const kir::MatrixFragment& f, uint32_t buffer, kir::ValueId base, kir::ValueId row,
                             kir::ValueId column, kir::ValueId rows, kir::ValueId columns);
  void stmt(const kir::MatrixLoadTensor&);
  void stmt(const kir::MatrixStoreTensor&);
  // Packed operand shares (emit_matrix.cpp): the fragment's components, in the driver's order, as 16 bytes.
  void stmt(const kir::MatrixLoadPacked&);
  void stmt(const kir::MatrixStorePacked&);
  Id packed_share_pointer(Id view, const kir::MatrixFragment& f, kir::ValueId index);
  // Copies into workgroup memory (emit_copies.cpp): a 16-byte load into registers where the kernel issues the copy,
  // its store deferred to the wait that covers it, so the load flies while the kernel computes in between.
  void plan_copies();
  void declare_copy_sites();
  void flush_copy(uint32_t site);
  Id as_u32(kir::Type t, Id index);                       // an i32 or u32 index as u32
  Id as_u32(kir::ValueId index);
  Id vector_index(kir::Type elem, Id element_index);      // u32 element index -> index of its 16-byte vector
  Id copy_destination(uint32_t array, Id element_index);  // pointer to the 16-byte vector holding that element
  // One element (u32 index) of a copy destination, read out of its 16-byte vector.
  Id load_from_vectors(uint32_t array, Id element_index);
  void stmt(const kir::CopyToShared&);
  void stmt(const kir::CopyCommit&) {}  // batches matter only to waits, whose landings copy_plan.h worked out
  void stmt(const kir::CopyWait&);
  // Refused before emission (compile.cpp): no Vulkan path for warpgroup matrices or tensor copies.
  [[noreturn]] void stmt(const kir::WarpgroupMulAdd&) { unsupported(); }
  [[noreturn]] void stmt(const kir::WarpgroupCommit&) { unsupported(); }
  [[noreturn]] void stmt(const kir::WarpgroupWait&) { unsupported(); }
  [[noreturn]] void stmt(const kir::TensorCopy&) { unsupported(); }
  [[noreturn]] void stmt(const kir::Arrive&) { unsupported(); }
  [[noreturn]] void stmt(const kir::AwaitPhase&) { unsupported(); }
  [[noreturn]] static void unsupported() {
    throw std::logic_error("SPIR-V backend: warpgroup matrices and tensor copies are not emitted");
  }
  void label(Id id);
  void branch(Id target);

  // --- one value-defining instruction (emit_ops.cpp)
  Id instr(const kir::Instr& in);
  Id constant(const kir::Instr& in);
  Id arithmetic(const kir::Instr& in);
  Id comparison(const kir::Instr& in);
  Id unary(const kir::Instr& in);
  Id convert(Id v, kir::Type from, kir::Type to);
  Id convert_bf16(Id v, kir::Type to);  // bf16 <-> f32 on the bits
  Id buffer_element(uint32_t buffer, kir::ValueId index);  // pointer
  Id shared_element(uint32_t array, kir::ValueId index);   // pointer
  Id atomic_add(const kir::Instr& in);

  // --- C semantics on top of SPIR-V (emit_math.cpp)
  Id signed_remainder(kir::Type t, Id a, Id b);
  Id pow_c(kir::Type t, Id x, Id y);
  Id tanh_safe(kir::Type t, Id x);
  Id exp_any(kir::Type t, Id x);
  Id log_any(kir::Type t, Id x);
  Id exp_f64(Id x);
  Id log_f64(Id x);
  Id tanh_f64(Id x);
  Id expm1_poly_f64(Id r);  // e^r - 1 for |r| <= ln2/2

  // --- writing instructions into the current block
  Id op(SpvOp opcode, Id result_type, std::initializer_list<Id> operands);
  void op_void(SpvOp opcode, std::initializer_list<uint32_t> operands);
  Id ext(GLSLstd450 inst, Id result_type, std::initializer_list<Id> operands);
  Id value(kir::ValueId v) const;
  // Loads and stores through buffer and workgroup pointers: under the Vulkan memory model (kernels with cooperative
  // matrices) they carry NonPrivatePointer, so that barriers order them between invocations.
  Id load_memory(Id result_type, Id pointer);
  Id load_buffer(uint32_t buffer, Id result_type, Id pointer);  // private where the kernel only reads the buffer
  void store_memory(Id pointer, Id value);
  // The optional Memory Operand words of such an access (empty under GLSL450's memory model).
  Words memory_operands() const;

  // --- types and constants of kir types
  Id type(kir::Type t);
  Id unsigned_type(kir::Type t);  // the unsigned integer type of t's width
  Id signed_type(kir::Type t);    // the signed integer type of t's width
  Id bool_type() { return m_.type_bool(); }
  Id float_constant(kir::Type t, double v);
  Id int_constant(kir::Type t, int64_t v);

  const kir::Kernel& k_;
  ModuleBuilder m_;
  std::vector<Id> values_;  // kir ValueId -> SPIR-V id

  std::vector<Id> buffer_vars_, shared_vars_, local_vars_;
  std::vector<Id> fragment_vars_;  // Function variables of cooperative-matrix type, one per kir fragment
  // Copies (emit_copies.cpp). A copy destination is declared as an array of uvec4 (16-byte vectors), which only
  // copies and matrix stores may then write (element reads pick their word out); a copy source gets a uvec4 view.
  std::vector<bool> shared_vectors_;  // per shared array
  std::vector<Id> buffer_copy_views_;  // per buffer, 0 where no copy reads it
  std::vector<Id> buffer_packed_views_;  // per buffer, 0 where no packed fragment is stored into it (uvec4, written)
  struct CopySite {
    uint32_t array = 0;
    Id data = 0, destination = 0, pending = 0;  // Function variables: uvec4 loaded, u32 element index, bool
    bool flush_before = false;  // the site may run again before a wait flushed its previous copy
  };
  std::vector<CopySite> copy_sites_;
  CopyPlan copy_plan_;
  // SPV_KHR_cooperative_matrix requires the Vulkan memory model in shader modules, so kernels with fragments get it;
  // the others keep GLSL450 (what every Vulkan 1.1 device takes).
  bool vulkan_memory_model_ = false;
  // Whether barriers order storage buffers as well as workgroup memory: only kernels with a buffer they both read and
  // write need it (stmt(Barrier)).
  bool barriers_order_buffers_ = false;
  // The widest vector load of each buffer: a read-only buffer with vector loads is declared a second time, as an
  // array of vectors at the same binding (buffer_vector_vars_, 0 where not).
  std::vector<uint32_t> buffer_lanes_;
  std::vector<Id> buffer_vector_vars_;
  Id push_constants_ = 0;
  Id frexp_struct_ = 0;  // {f64, i32}, the result of GLSL.std.450 FrexpStruct
  std::vector<Id> scalar_values_;  // 0 until first read
  std::map<kir::Builtin, Id> builtin_values_;
  std::map<uint32_t, Id> builtin_loads_;  // SpvBuiltIn -> value loaded in the prologue
  std::vector<Id> interface_;             // Input variables the entry point lists (SPIR-V 1.3 rule)

  // The entry block is written as three parts so that values discovered late can still go first:
  // OpVariables (must open the entry block), then the prologue (builtins and scalars, loaded once and
  // dominating everything), then the body.
  Words locals_, prologue_, body_;
  Words* current_ = &body_;
  // While set, float arithmetic is decorated NoContraction (emit_math.cpp's f64 series rely on their
  // exact evaluation order; spirv-opt would otherwise fuse and reassociate them).
  bool no_contraction_ = false;
};

}  // namespace spire::spirv
