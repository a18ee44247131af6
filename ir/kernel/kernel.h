// The SIMT kernel IR: one invocation's scalar program with structured control flow.
//
// A kernel is what both backends (SPIR-V, PTX) consume. It is deliberately small:
//  * parameters: typed storage buffers (binding order = declaration order) and scalars (push constants /
//    kernel params, in declaration order);
//  * workgroup (shared) arrays of fixed size and mutable local variables;
//  * a body: a tree of statements. Pure operations define SSA values (`ValueId`); a value is visible in the
//    block that defines it and in blocks nested inside it, after its definition. Values that change across
//    loop iterations or branches live in local variables (`VarId`), read with LoadVar and written with
//    StoreVar; backends map variables to registers (PTX) or Function-storage variables (SPIR-V).
//
// Grid model: the runtime launches a 1D logical grid of workgroups and may fold it into 2D/3D to respect a
// device's limits; the backend reconstructs the linear ids, so kernels only ever see linear builtins.
// Folding can launch more workgroups than asked for (up to the next multiple of the fold width), so a
// kernel must bounds-check its own problem size, which every well-formed kernel does anyway.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/buffer_access.h"
#include "ir/kernel/types.h"

namespace spire::kir {

using ValueId = uint32_t;
using VarId = uint32_t;
inline constexpr ValueId kNoValue = ~0u;

using spire::Access;  // base/buffer_access.h
using spire::access_name;

struct BufferParam {
  std::string name;
  Type elem;
  Access access;
  // Read before the kernel's WaitForPriorKernels (a read-only buffer the kernel before it may still be running
  // beside): a runtime that overlaps launches does so only where the launch before writes none of these.
  bool read_before_wait = false;
};

struct ScalarParam {
  std::string name;
  Type type;
};

struct SharedArray {
  std::string name;
  Type elem;
  uint32_t count;
};

struct LocalVar {
  std::string name;
  Type type;
};

// A cooperative matrix fragment (Feature::CooperativeMatrix): a 16x16 tile held jointly by the 32 invocations
// of a subgroup, in a layout only the device knows (PTX wmma fragments, Vulkan cooperative matrices). A kernel
// only fills, loads, multiplies-and-accumulates and stores whole fragments, so it never depends on the layout.
// An A operand is 16 (rows) x 16 (k), a B operand 16 (k) x 16 (columns), an accumulator 16 x 16.
//
// A warpgroup accumulator (Feature::WarpgroupMatrix) is a 64 x `columns` f32 tile held by the 128 invocations of a
// warpgroup: 4 consecutive subgroups of 32, the first a multiple of 4 (so the workgroup holds whole warpgroups). Its
// layout is fixed (PTX's wgmma accumulator), since the kernel reads its elements one by one (Op::MatrixElement):
// element i (0 .. columns/2 - 1) of warpgroup invocation t (local id % 128) is row 16 (t / 32) + (t % 32) / 4 +
// 8 ((i / 2) % 2), column 8 (i / 4) + 2 (t % 4) + i % 2. (Checked on an H100: tools/gpu/wgmma_layout_probe.cu.)
//
// A workgroup matrix (`workgroup`, Feature::WorkgroupMatrix) is a `rows` x `columns` A, B or accumulator held by
// every invocation of the workgroup together (16 to 1024 each way, multiples of 16; an A is rows x k, a B k x
// columns), in a layout only the driver knows. It is filled, multiplied (MatrixMulAdd, all four workgroup
// matrices of matching sizes), loaded straight from a buffer (MatrixLoadTensor) and stored straight into one
// (MatrixStoreTensor); the driver stages the tiles through workgroup memory itself. Every invocation of the
// workgroup executes those statements together, with the same operands.
enum class MatrixUse : uint8_t { A, B, Accumulator, WarpgroupAccumulator };
std::string_view matrix_use_name(MatrixUse u);
inline constexpr uint32_t kMatrixTile = 16;  // rows, columns and depth of every fragment
inline constexpr uint32_t kWarp = 32;  // invocations of the subgroup a fragment is spread over (NVIDIA's warp)
inline constexpr uint32_t kWarpgroupRows = 64;  // rows of a warpgroup accumulator and of its A operand
inline constexpr uint32_t kWarpgroupInvocations = 128;
inline constexpr uint32_t kWarpgroupMaxColumns = 256;
inline constexpr uint32_t kWorkgroupMatrixMax = 1024;  // rows and columns of a workgroup matrix at most

struct MatrixFragment {
  std::string name;
  MatrixUse use;
  Type elem;  // A and B: F16, BF16 or (PTX only) F32, multiplied as TF32 (both the same); accumulators: F32
  // How loads and stores lay it out in memory: row-major (element (r, c) at index + r * stride + c) or
  // column-major (at index + c * stride + r), e.g. an operand staged from a transposed buffer.
  bool column_major = false;
  uint32_t columns = kMatrixTile;  // warpgroup accumulators: 8 to 256, a multiple of 8; workgroup matrices
  uint32_t rows = kMatrixTile;     // workgroup matrices
  bool workgroup = false;
};

// A tensor map (Feature::TensorCopy): how the copy engine reads tiles ("boxes") of a buffer viewed as a dense tensor
// of 1 to 3 dimensions, innermost first. The runtime encodes it against the buffer bound at dispatch (its view's
// start is element 0). Every stride and the view's start must be multiples of 16 bytes; each box dimension is 1 to
// 256 elements. With swizzle_128, a box row (box[0] elements) is exactly 128 bytes and lands in workgroup memory with
// its 16-byte pieces permuted within each 1024-byte group of 8 rows (the layout warpgroup operands read when
// swizzled), and the destination must start on 1024 bytes (backends align every array of such kernels so).
struct TensorMap {
  std::string name;
  uint32_t buffer;
  std::vector<uint64_t> extents;  // elements per dimension, innermost first
  std::vector<uint64_t> strides;  // elements between neighbours along dimensions 1.. (extents.size() - 1 of them)
  std::vector<uint32_t> box;      // elements per dimension of one copy
  bool swizzle_128 = false;
};

// Arrival barriers (Feature::TensorCopy): `count` counters in workgroup memory, each completing a phase once
// `arrivals` invocations have arrived at it and every byte of tensor copies announced to it has landed, then starting
// the next phase. Phases alternate parity 0, 1, 0, ...; waiting for parity p returns once the latest phase of that
// parity has completed (at first, waiting for parity 1 returns at once). The backend initializes them before the
// kernel's first statement.
struct ArrivalBarriers {
  std::string name;
  uint32_t count;
  uint32_t arrivals;
};

// Builtins, all u32 and all linear (see the grid model above).
enum class Builtin : uint8_t {
  GlobalId,       // group_id * workgroup_size + local_id
  LocalId,        // 0 .. workgroup_size-1 (linearized when the workgroup is 2D/3D)
  GroupId,        // linear workgroup index in the logical grid
  NumGroups,      // workgroups launched (>= the logical count asked for; see folding)
  WorkgroupSize,  // invocations per workgroup (product of the three dims)
  GlobalSize,     // NumGroups * WorkgroupSize, for grid-stride loops
  LocalIdX, LocalIdY, LocalIdZ,  // per-dimension local ids, for 2D/3D workgroups
  // Subgroups (Feature::SubgroupShuffle). The size is the one the device runs, which may differ from the size it
  // reports (Intel), so kernels that bake a size in must check this one; PTX's is always 32.
  SubgroupSize,
  SubgroupId,       // 0 .. subgroups per workgroup - 1
  SubgroupLocalId,  // 0 .. SubgroupSize - 1
};
std::string_view builtin_name(Builtin b);

enum class Op : uint8_t {
  // Leaves
  Const,        // imm holds the bits (see Instr::imm)
  ReadBuiltin,  // index = Builtin
  ReadScalar,   // index = scalar parameter
  LoadVar,      // index = variable
  // Binary arithmetic (operands same type as result)
  Add, Sub, Mul, Div, Rem, Min, Max, Pow,
  // Bitwise / logical (ints; And/Or/Xor also on Bool)
  And, Or, Xor, Shl, Shr,
  // Comparisons (operands same type, result Bool)
  Eq, Ne, Lt, Le, Gt, Ge,
  // Unary
  Neg, Not, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Floor,
  // select(cond: Bool, a, b) -> a if cond else b
  Select,
  // fma(a, b, c) = a * b + c rounded once (floats). Products that accumulate use it: a backend keeps a separate
  // multiply and add apart (PTX's .rn forbids contraction), so without it an inner product costs two instructions.
  Fma,
  // Numeric conversion to the result type (float->int truncates toward zero; int->float rounds to nearest)
  Convert,
  // Memory reads (index operand is u32 or i32 element index)
  LoadBuffer,   // index = buffer parameter; operands = {elem_index}
  LoadShared,   // index = shared array;     operands = {elem_index}
  // Atomic add on a buffer element; returns the old value. index = buffer; operands = {elem_index, value}
  AtomicAdd,
  // The value `operands[0]` of the invocation whose subgroup-local id is this one's xor `operands[1]` (u32, the
  // same in every invocation of the subgroup). Every invocation of the subgroup must execute it together
  // (uniform control flow), and the partner must exist: kernels use it only with full subgroups.
  ShuffleXor,
  // Element imm.i of this invocation's share of warpgroup accumulator `index` (f32; see MatrixUse). Read it only
  // after a WarpgroupWait covers every multiply into it.
  MatrixElement,
  // The value result buffer `index`'s epilogue makes of operands[1] at the buffer's element operands[0]: what a store
  // of operands[1] there would store once the lowering folds a pointwise epilogue into the kernel
  // (KernelBuilder::rewrite_taps; lowering/fuse.h), so a kernel can also compute with its stored values (a pooling of
  // them). operands[1] itself where no epilogue is folded in: every backend emits a copy.
  EpilogueTap,
};
std::string_view op_name(Op op);
int op_arity(Op op);  // number of value operands (-1 none fixed)

// A value-defining instruction.
struct Instr {
  ValueId result;
  Op op;
  Type type;
  uint32_t index = 0;  // buffer/shared/var/scalar/builtin index where the op names one
  std::array<ValueId, 3> operands{kNoValue, kNoValue, kNoValue};
  // Constant payload: the value converted to the constant's type; backends read the member of that type.
  union {
    int64_t i;   // I32, I64, U32 (zero-extended), Bool (0/1)
    double f;    // F16, F32, F64 (already rounded to the type's precision)
  } imm{0};
};

struct Block;

struct StoreBuffer { uint32_t buffer; ValueId index; ValueId value; };
struct StoreShared { uint32_t array; ValueId index; ValueId value; };
// Loads results.size() (2 or 4) consecutive elements of shared `array` from element `index` on, which must be a
// multiple of that count, into the values `results` (each of the array's type, 32-bit): one wide access where the
// backend makes it one (PTX ld.shared.v4; SPIR-V loads the elements, see backends/spirv/emit_kernel.cpp).
struct LoadSharedVector { uint32_t array; ValueId index; std::vector<ValueId> results; };
// The same for a buffer the kernel reads: results.size() (2 or 4) consecutive 32- or 16-bit elements from `index` on,
// a multiple of that count (16-bit ones: 4 or 8 bytes at once, a few-rows product's half weights). Views start on 16
// bytes (what dispatch asks of CUDA devices; memory plans align every buffer so), so the access is aligned. PTX makes
// it one ld.global.v2/.v4; SPIR-V loads one vector from a second, vector-typed view of the buffer
// (backends/spirv/emit_kernel.cpp). `widen` (f16 or bf16 elements only): the results are the elements converted to
// f32 (exactly), which SPIR-V can do on 32-bit words of the buffer (shifts for bf16, UnpackHalf2x16 for f16) where
// 16-bit values would have to be loaded one by one (taking a 16-bit vector apart needs Int16).
struct LoadBufferVector { uint32_t buffer; ValueId index; std::vector<ValueId> results; bool widen = false; };
struct StoreVar { VarId var; ValueId value; };
struct Barrier {};  // workgroup execution + workgroup/storage memory barrier
// Where the kernel waits for the kernel launched before it to finish and its writes to be visible (PTX's
// griddepcontrol.wait; nothing on Vulkan, whose barriers between dispatches wait before the launch). A kernel without
// one waits before its first instruction. Before it a kernel stores nothing and reads only its buffers marked
// read_before_wait: a few-rows product reads its weights there, whose latency then hides behind the kernel before.
// At most one, outside loops.
struct WaitForPriorKernels {};
// Cooperative matrix statements. Every invocation of a subgroup executes them together (uniform control flow
// across the subgroup, whole subgroups of 32: PTX's warp), and every
// invocation passes the same index. A fragment's element (r, c) lives at shared[index + r * stride + c] (or
// c * stride + r, MatrixFragment::column_major); the index times the element size must be a multiple of 32 bytes
// and the stride of 16 bytes.
struct MatrixFill { uint32_t fragment; ValueId value; };  // every element of an accumulator = value (f32)
struct MatrixLoad { uint32_t fragment; uint32_t array; ValueId index; uint32_t stride; };
struct MatrixStore { uint32_t fragment; uint32_t array; ValueId index; uint32_t stride; };  // accumulators only
// d = a x b + c, products and sums in f32 (d and c may be the same accumulator).
struct MatrixMulAdd { uint32_t d, a, b, c; };
// Feature::WorkgroupMatrix. Buffer `buffer` from element `base` on (its byte offset a multiple of 16), viewed as a
// dense row-major `rows` x `columns` matrix: the workgroup matrix's block whose first element is (row, column) of it
// is loaded, elements outside the matrix reading as zeros, or stored, elements outside it not written. A
// column-major fragment views the buffer as its transpose: a row-major `columns` x `rows` matrix whose element
// (c, r) is element (r, c) of the view (an operand stored transposed). All five values are u32. The buffer holds the
// fragment's type: f16 or bf16 operands, which are loaded; f32 accumulators, which are stored.
struct MatrixLoadTensor { uint32_t fragment; uint32_t buffer; ValueId base, row, column, rows, columns; };
struct MatrixStoreTensor { uint32_t fragment; uint32_t buffer; ValueId base, row, column, rows, columns; };
// Packed operand fragments (subgroup A or B fragments of f16 or bf16): each invocation's share of the fragment, its
// kPackedShare elements in the order the device holds them, is the 16 bytes at buffer element `index` (this
// invocation's own, a multiple of kPackedShare). What one kernel stores (MatrixStorePacked, any fragment filled by a
// MatrixLoad) another loads (MatrixLoadPacked) as the same fragment, so a packing launch can lay an operand out once
// for products whose every fragment load is then one contiguous 16-byte load per invocation, with no workgroup memory.
// The layout is the device's own: only a kernel of the same device reads what such a kernel stored.
inline constexpr uint32_t kPackedShare = 8;  // 16-bit elements per invocation of a 16x16 operand fragment
struct MatrixLoadPacked { uint32_t fragment; uint32_t buffer; ValueId index; };
struct MatrixStorePacked { uint32_t fragment; uint32_t buffer; ValueId index; };
// Feature::AsyncCopy: copies 16 bytes from buffer element `src` on into shared element `dst` on, or writes 16 zero
// bytes when `valid` (bool) is false (the buffer is then not read). The copy joins the invocation's open batch and
// may land any time until a CopyWait that covers that batch; nothing may read or write those shared bytes in
// between, and other invocations see them only after a Barrier that follows the wait. Both element offsets must
// be multiples of 16 bytes, and buffer and array must hold the same type.
struct CopyToShared { uint32_t array; ValueId dst; uint32_t buffer; ValueId src; ValueId valid; };
// Closes the invocation's open batch of copies (an empty batch is allowed: pipelines commit one every round).
struct CopyCommit {};
// Waits until at most `pending` of the invocation's closed batches are still in flight (the newest ones); copies
// of the open batch are not waited for. A pipeline of S stages waits with pending = S - 2.
struct CopyWait { uint32_t pending; };
// Feature::WarpgroupMatrix: acc (64 x N) += A (64 x 16) x B (16 x N), both operands read from workgroup memory,
// products and sums in f32. Every invocation of the warpgroup executes it together with the same operands. An operand
// tile is made of 8 x 8 blocks of 64 consecutive elements (16 bytes per row of a block); along K the blocks are
// k_block_stride elements apart, along M (A) or N (B) mn_block_stride apart. Inside a block the 8 elements of a row
// run along K (element (m, k) of A at index + (m / 8) mn_block_stride + (k / 8) k_block_stride + (m % 8) 8 + k % 8),
// or along M or N when mn_major (at ... + (k % 8) 8 + m % 8): the latter is how rows of a buffer whose contiguous
// direction is M or N land, 16 bytes at a time. Index and strides are multiples of 8 elements (16 bytes). Both
// arrays hold f16, or both bf16.
//
// A swizzled operand is laid out as 128-byte-swizzled tensor copies leave it (TensorMap::swizzle_128), in rows of 64
// elements: K-major, one row per m (or n) holding 64 consecutive k, 8-row groups mn_block_stride apart (element
// (m, k) at index + (m / 8) mn_block_stride + (m % 8) 64 + k; k_block_stride unused, 0); MN-major, one row per k
// holding 64 consecutive m (or n), 8-row groups k_block_stride apart and 64-wide groups mn_block_stride apart (at
// index + (k / 8) k_block_stride + (m / 64) mn_block_stride + (k % 8) 64 + m % 64). Addresses are before the
// swizzle, which permutes 16-byte pieces within each aligned 1024 bytes: the array must start on 1024 bytes, as
// backends align it in kernels with tensor copies.
struct WarpgroupOperand {
  uint32_t array;
  ValueId index;
  uint32_t k_block_stride, mn_block_stride;
  bool mn_major;
  bool swizzled = false;
};
// The multiply runs asynchronously: it joins the warpgroup's open batch and completes by a WarpgroupWait that covers
// that batch. Until then nothing may write its operands' workgroup memory or touch its accumulator. Workgroup memory
// the multiply reads must have been written before a Barrier (which orders it for the tensor cores too).
struct WarpgroupMulAdd { uint32_t acc; WarpgroupOperand a, b; };
struct WarpgroupCommit {};                  // closes the warpgroup's open batch of multiplies
struct WarpgroupWait { uint32_t pending; };  // until at most `pending` closed batches are in flight (newest ones)
// Feature::TensorCopy. The copy engine copies the box of tensor map `map` whose first element sits at `coords`
// (innermost first, i32 or u32, one per dimension; parts outside the tensor read as zeros) into shared `array` from
// element `index` on, and announces its bytes' arrival (the whole box) to arrival barrier `barrier` of `barriers`,
// which must have been told to expect them by an Arrive. One invocation issues it; nothing may touch the destination
// until a wait for that barrier's phase returns.
struct TensorCopy {
  uint32_t map;
  uint32_t array;
  ValueId index;
  std::vector<ValueId> coords;
  uint32_t barriers;
  ValueId barrier;
};
// Arrives at barrier `barrier` of `barriers`, first telling it to expect `expect_bytes` more bytes of tensor copies.
struct Arrive { uint32_t barriers; ValueId barrier; uint32_t expect_bytes; };
// Waits until barrier `barrier` of `barriers` has completed its latest phase of parity `parity` (u32, 0 or 1); what
// the copies and arrivals of that phase wrote is then visible to this invocation.
struct AwaitPhase { uint32_t barriers; ValueId barrier; ValueId parity; };
struct If { ValueId cond; std::unique_ptr<Block> then_body; std::unique_ptr<Block> else_body; };
// for (var = begin; var < end; var += step) body. Compare is signed/unsigned by the var's type; step > 0.
struct For { VarId var; ValueId begin; ValueId end; ValueId step; std::unique_ptr<Block> body; };

using Stmt = std::variant<Instr, StoreBuffer, StoreShared, LoadSharedVector, LoadBufferVector, StoreVar, Barrier, WaitForPriorKernels, If, For, MatrixFill, MatrixLoad,
                          MatrixStore, MatrixMulAdd, CopyToShared, CopyCommit, CopyWait, WarpgroupMulAdd,
                          WarpgroupCommit, WarpgroupWait, TensorCopy, Arrive, AwaitPhase, MatrixLoadTensor,
                          MatrixStoreTensor, MatrixLoadPacked, MatrixStorePacked>;

struct Block {
  std::vector<Stmt> stmts;
};

struct Kernel {
  std::string name;
  std::array<uint32_t, 3> workgroup_size{64, 1, 1};
  // An occupancy request: at least this many workgroups should fit on one core (SM) at once, so a backend that
  // allocates registers (PTX) keeps each invocation within the core's register file divided by that many
  // workgroups. 0: no request. A kernel whose workgroups wait at barriers often asks for 2, so that one workgroup
  // computes while the other waits.
  uint32_t min_workgroups_per_core = 0;
  // Whether a barrier must also order storage buffers: true unless the kernel's author knows that no invocation reads
  // a buffer element another invocation of its workgroup wrote in the same launch (a kernel that writes a cache row and
  // reads the row from where it came). SPIR-V then orders workgroup memory only: ordering buffers costs NVIDIA's
  // Vulkan compiler a memory fence at every barrier. Only a kernel with a buffer it both reads and writes is affected.
  bool barriers_order_buffers = true;
  Features features;  // declared device needs (the builder adds those its types and ops imply)
  std::vector<BufferParam> buffers;
  std::vector<ScalarParam> scalars;
  std::vector<SharedArray> shared;
  std::vector<LocalVar> vars;
  std::vector<MatrixFragment> fragments;
  std::vector<TensorMap> tensor_maps;  // launch parameters after the scalars
  std::vector<ArrivalBarriers> arrival_barriers;
  std::vector<Type> value_types;  // type of every ValueId
  Block body;
  // A kernel given as a finished SPIR-V module (a custom op's GLSL compiled by shaderc) instead of a body:
  // the parameters above declare its interface (bindings, push constants, workgroup size), which the module
  // must follow (backends/spirv/spirv_backend.h). Only SPIR-V backends can run it; the body stays empty.
  std::vector<uint32_t> spirv_module;
  bool prebuilt() const { return !spirv_module.empty(); }

  uint32_t workgroup_invocations() const {
    return workgroup_size[0] * workgroup_size[1] * workgroup_size[2];
  }
  uint32_t shared_bytes() const;
  // Byte offset of each scalar in the packed parameter block (push constants / param space): scalars are
  // laid out in declaration order, each aligned to its own size. Runtimes and backends share this layout.
  std::vector<uint32_t> scalar_offsets() const;
  uint32_t scalar_block_bytes() const;
};

// A deep copy (blocks own their children through unique_ptr, so Kernel is move-only). Runtimes keep one so
// a compiled kernel's ir() outlives the caller's kernel.
Kernel clone(const Kernel& k);
// The kernel's interface without its body (name, workgroup size, features, buffers, scalars, shared arrays, tensor
// maps, arrival barriers; no variables, values or prebuilt module): what a runtime needs to bind and launch a compiled binary.
Kernel signature(const Kernel& k);

// True when the kernel writes `buffer` with whole workgroup matrices (MatrixStoreTensor), whose elements no
// StoreBuffer names: such stores cannot take a pointwise epilogue (KernelBuilder::rewrite_stores).
bool stores_matrices_into(const Kernel& k, uint32_t buffer);
// True when the kernel taps `buffer`'s epilogue (Op::EpilogueTap): its stores into it then store tapped values, and an
// epilogue is folded in by rewriting the taps, not the stores.
bool taps_epilogue_of(const Kernel& k, uint32_t buffer);
// True when the kernel writes `buffer` (stores, workgroup-matrix stores, atomic adds): a pooled side output's kernel
// whose result nothing else reads taps its epilogue and stores nothing there (lowering binds it no real buffer).
bool writes_buffer(const Kernel& k, uint32_t buffer);
// True when the kernel places its wait for the kernel before it (WaitForPriorKernels) rather than waiting first.
bool places_wait(const Kernel& k);
// True when the kernel loads or stores packed operand shares (MatrixLoadPacked, MatrixStorePacked).
bool moves_packed_fragments(const Kernel& k);

// Structural checks every backend relies on: operand ids defined and visible, types consistent,
// indices in range, no Bool in memory. Returns an empty string when the kernel is well-formed, else a
// message naming the first problem.
std::string verify(const Kernel& k);

}  // namespace spire::kir
