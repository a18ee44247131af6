// Walks one kir::Kernel and writes its PTX entry. Split in two files by concern:
//  * ptx_translator.cpp: the module frame (header, parameters, shared arrays), builtins, memory and
//    structured control flow;
//  * ptx_ops.cpp: value-defining operations, from a table of templates per op and type class, after a
//    legalization step (f16 computed in f32, 64-bit shift amounts narrowed, bool compares and selects as
//    predicate logic, f32 transcendentals expanded by ptx_math).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "backends/ptx/ptx_backend.h"
#include "backends/ptx/ptx_writer.h"
#include "ir/kernel/kernel.h"

namespace spire::ptx {

inline constexpr const char* kDynamicShared = "s_dynamic";  // the one .extern .shared array (ptx_shared_layout.h)

class Translator {
 public:
  Translator(const kir::Kernel& k, const Target& target);
  std::string module();

 private:
  // ptx_translator.cpp
  void block(const kir::Block& b);
  void stmt(const kir::Instr& in);
  void stmt(const kir::StoreBuffer& s);
  void stmt(const kir::StoreShared& s);
  void stmt(const kir::LoadSharedVector& s);
  void stmt(const kir::LoadBufferVector& s);
  void stmt(const kir::StoreVar& s);
  void stmt(const kir::Barrier& s);
  void stmt(const kir::WaitForPriorKernels& s);  // griddepcontrol.wait where the kernel places it (sm_90 on)
  bool non_coherent(uint32_t buffer) const;      // whether loads of the buffer may take the read-only path (.nc)
  void stmt(const kir::If& s);
  void stmt(const kir::For& s);
  // ptx_matrix.cpp: cooperative matrices as wmma m16n16k16 fragments.
  void stmt(const kir::MatrixFill& s);
  void stmt(const kir::MatrixLoad& s);
  void stmt(const kir::MatrixStore& s);
  void stmt(const kir::MatrixMulAdd& s);
  void stmt(const kir::CopyToShared& s);
  void stmt(const kir::CopyCommit& s);
  void stmt(const kir::CopyWait& s);
  // ptx_warpgroup.cpp: warpgroup matrices as Hopper's wgmma (sm_90a).
  void stmt(const kir::WarpgroupMulAdd& s);
  void stmt(const kir::WarpgroupCommit& s);
  void stmt(const kir::WarpgroupWait& s);
  std::string warpgroup_descriptor(const kir::WarpgroupOperand& o);  // a .b64 register
  // ptx_tensor_copy.cpp: tensor copies as cp.async.bulk.tensor, arrival barriers as mbarrier (sm_90).
  void init_arrival_barriers();
  std::string barrier_address(uint32_t barriers, kir::ValueId index);
  void stmt(const kir::TensorCopy& s);
  void stmt(const kir::Arrive& s);
  void stmt(const kir::AwaitPhase& s);
  // Refused before any statement (workgroup-matrix has no PTX form); never reached.
  void stmt(const kir::MatrixLoadTensor&) {}
  void stmt(const kir::MatrixStoreTensor&) {}
  // ptx_matrix.cpp: packed operand shares (bf16 fragments: their 4 registers as one 16-byte access).
  void stmt(const kir::MatrixLoadPacked& s);
  void stmt(const kir::MatrixStorePacked& s);
  void declare_fragments();
  std::string fragment_list(uint32_t fragment) const;  // "{%r1, %r2, ...}"
  std::string packed_share(uint32_t fragment);  // a bf16 fragment's 4 registers, as fragment_list
  std::string tf32_half(uint32_t fragment, int half) const;  // a TF32 operand's k half (0 or 1), 4 registers
  void builtin(kir::Builtin b, const std::string& dst);
  void shuffle_xor(const kir::Instr& in, const std::string& dst);
  std::string buffer_address(uint32_t buffer, kir::ValueId index);  // a .b64 register
  std::string buffer_operand(uint32_t buffer, kir::ValueId index);  // what goes in [...]: "%rd4" or "%rd4+20"
  std::string shared_address(uint32_t array, kir::ValueId index);
  void memory_op(const kir::Instr& in, const std::string& dst);
  std::string entry_params() const;

  // ptx_ops.cpp
  void value_op(const kir::Instr& in, const std::string& dst);
  void constant(const kir::Instr& in, const std::string& dst);
  void compute(kir::Op op, kir::Type t, const std::string& dst, const std::vector<std::string>& src);
  void compare(kir::Op op, kir::Type t, const std::string& dst, const std::string& a, const std::string& b);
  void convert(kir::Type from, kir::Type to, const std::string& dst, const std::string& src);
  void convert_bf16(kir::Type to, const std::string& dst, const std::string& src);  // bf16 <-> f32 on the bits
  void compute_f16(const kir::Instr& in, const std::string& dst);

  [[noreturn]] void fail(const std::string& problem) const;
  const std::string& val(kir::ValueId v) const { return values_[v]; }
  kir::Type type_of(kir::ValueId v) const { return k_.value_types[v]; }

  const kir::Kernel& k_;
  Target target_;
  std::string entry_;
  bool hopper_ = false;  // sm_90 on: programmatic dependent launch (griddepcontrol)
  PtxWriter w_;
  std::vector<std::string> values_;   // register of each ValueId
  std::vector<std::string> vars_;     // register of each variable
  std::vector<std::string> buffers_;  // global base address of each buffer (.b64)
  std::vector<std::string> shared_;   // shared-window base address of each array (.b32)
  std::vector<std::string> barriers_;  // shared-window base address of each kir::ArrivalBarriers (.b32)
  std::vector<std::string> tensor_maps_;  // generic address of each tensor map parameter (.b64)
  std::vector<std::vector<std::string>> fragments_;  // the registers of each matrix fragment
  std::string accumulate_;  // a predicate register that is true: wgmma's scale-d (D = A B + D)
  bool tf32_ = false;          // the operand fragments are f32, multiplied as TF32 (ptx_matrix.cpp)
  bool operands_seen_ = false;  // declare_fragments has met an operand fragment
  std::unordered_map<kir::ValueId, int64_t> int_constants_;  // integer Const values seen so far (SSA: before use)
  // 32-bit integer values that are another value plus a small constant (x + c, c + x, x - c, and chains of them):
  // buffer_address puts the constant into the load's or store's immediate offset ([addr+bytes]) instead of adding it
  // before the widening multiply. ptxas cannot do that itself (the 32-bit add may wrap, the 64-bit address does not);
  // kir's rule that indices never rely on wrapping (ir/kernel/builder.h) makes it exact. A row kernel's unrolled loads
  // each cost an add, a widening multiply and a 64-bit add before: LeNet's second convolution's input gradient went from
  // 544 to 408 instructions through ptxas.
  struct ConstantOffset {
    kir::ValueId base;
    int64_t offset;
  };
  std::unordered_map<kir::ValueId, ConstantOffset> offsets_;
  void note_constant_offset(const kir::Instr& in);
};

}  // namespace spire::ptx
