// Cooperative matrices in SPIR-V (backends/spirv/emit_matrix.cpp): the words of SPV_KHR_cooperative_matrix,
// SPV_KHR_bfloat16 and the Vulkan memory model, checked against those specifications' instruction layouts. Debian
// 12's SPIRV-Tools cannot read these modules (backends/spirv/compile.cpp), so the test decodes the words itself; the
// expected numbers are the registry's (opcode 4456 OpTypeCooperativeMatrixKHR: Result, Component Type, Scope, Rows,
// Columns, Use; 4457 Load: Result Type, Result, Pointer, Layout, Stride, Memory Operand; ...), written here from the
// specifications rather than taken from the backend's header. Workgroup matrices (SPV_NV_cooperative_matrix2 and
// SPV_NV_tensor_addressing: 5367 OpCooperativeMatrixLoadTensorNV, 5368 Store, 5370 OpTypeTensorLayoutNV, ...) likewise,
// from the registry's grammar and those extensions' specifications.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backends/spirv/spirv_backend.h"
#include "ir/kernel/builder.h"

namespace spire::spirv {
namespace {

using namespace kir;

struct Inst {
  uint32_t opcode;
  std::vector<uint32_t> operands;
};

struct Module {
  std::vector<Inst> insts;
  std::map<uint32_t, const Inst*> defs;  // result id -> defining instruction
  std::vector<uint32_t> capabilities;
  std::vector<std::string> extensions;

  const Inst& def(uint32_t id) const {
    auto it = defs.find(id);
    if (it == defs.end()) throw std::runtime_error("no definition of %" + std::to_string(id));
    return *it->second;
  }
  // The value of an OpConstant of 32 bits.
  uint32_t constant(uint32_t id) const {
    const Inst& c = def(id);
    EXPECT_EQ(c.opcode, 43u) << "%" << id << " is not an OpConstant";
    return c.operands.at(2);
  }
  std::vector<const Inst*> all(uint32_t opcode) const {
    std::vector<const Inst*> out;
    for (const Inst& i : insts)
      if (i.opcode == opcode) out.push_back(&i);
    return out;
  }
};

std::string literal_string(const std::vector<uint32_t>& words, size_t from) {
  std::string s;
  for (size_t w = from; w < words.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      char c = char((words[w] >> (8 * b)) & 0xFF);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

Module decode(const std::vector<uint32_t>& words) {
  Module m;
  EXPECT_EQ(words.at(0), 0x07230203u);  // SPIR-V's magic number
  size_t at = 5;
  while (at < words.size()) {
    const uint32_t count = words[at] >> 16, opcode = words[at] & 0xFFFF;
    if (count == 0 || at + count > words.size()) throw std::runtime_error("malformed instruction stream");
    m.insts.push_back({opcode, std::vector<uint32_t>(words.begin() + at + 1, words.begin() + at + count)});
    at += count;
  }
  EXPECT_EQ(at, words.size());
  for (const Inst& i : m.insts) {
    const bool type_decl = (i.opcode >= 19 && i.opcode <= 39) || i.opcode == 4456 || i.opcode == 5370 || i.opcode == 5371;
    // Instructions with a Result Type: the result is the second operand.
    const bool typed_result = i.opcode == 41 || i.opcode == 42 || i.opcode == 43 || i.opcode == 44 || i.opcode == 1 ||
                              i.opcode == 59 || i.opcode == 61 || i.opcode == 65 || i.opcode == 80 || i.opcode == 4457 ||
                              i.opcode == 4459 || i.opcode == 5367 || i.opcode == 5372 || i.opcode == 5373 ||
                              i.opcode == 5375 || i.opcode == 5377 || i.opcode == 81 || i.opcode == 82 ||
                              i.opcode == 124;
    if (type_decl) m.defs[i.operands.at(0)] = &i;
    if (typed_result) m.defs[i.operands.at(1)] = &i;
    if (i.opcode == 17) m.capabilities.push_back(i.operands.at(0));
    if (i.opcode == 10) m.extensions.push_back(literal_string(i.operands, 0));
  }
  return m;
}

bool contains(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// One subgroup: c = a x b through workgroup memory, B staged column-major, A's rows padded to 24 elements.
Kernel matrix_kernel(Type half) {
  KernelBuilder kb("mma", 32);
  auto a_tile = kb.shared("a", half, 16 * 24), b_tile = kb.shared("b", half, 256);
  auto c_tile = kb.shared("c", Type::F32, 256);
  auto a = kb.fragment("fa", MatrixUse::A, half), b = kb.fragment("fb", MatrixUse::B, half, /*column_major=*/true);
  auto acc = kb.fragment("acc", MatrixUse::Accumulator, Type::F32);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  kb.matrix_fill(acc, kb.f32(0));
  kb.matrix_load(a, a_tile, kb.u32(0), 24);
  kb.matrix_load(b, b_tile, kb.u32(0), 16);
  kb.matrix_mul_add(acc, a, b, acc);
  kb.matrix_store(c_tile, kb.u32(0), 16, acc);
  kb.barrier();
  o[kb.local_id()] = c_tile[kb.local_id()];
  return kb.finish();
}

// The storage class of the pointer type a pointer value (an OpAccessChain or OpVariable) has.
uint32_t storage_class_of(const Module& m, uint32_t pointer) {
  const Inst& p = m.def(m.def(pointer).operands.at(0));
  EXPECT_EQ(p.opcode, 32u);  // OpTypePointer
  return p.operands.at(1);
}

class SpirvCooperativeMatrix : public testing::TestWithParam<Type> {};

TEST_P(SpirvCooperativeMatrix, WritesTheExtensionsInstructionsAsSpecified) {
  const Type half = GetParam();
  const Module m = decode(compile(matrix_kernel(half)));

  // Capabilities and extensions: CooperativeMatrixKHR 6022, VulkanMemoryModel 5345; bf16: BFloat16TypeKHR 5116,
  // BFloat16CooperativeMatrixKHR 5118, and Int16 (22) for its 16-bit words in workgroup memory; f16: Float16 (9).
  EXPECT_TRUE(contains(m.capabilities, 6022));
  EXPECT_TRUE(contains(m.capabilities, 5345));
  EXPECT_TRUE(contains(m.extensions, "SPV_KHR_cooperative_matrix"));
  EXPECT_TRUE(contains(m.extensions, "SPV_KHR_vulkan_memory_model"));
  EXPECT_EQ(contains(m.capabilities, 5116), half == Type::BF16);
  EXPECT_EQ(contains(m.capabilities, 5118), half == Type::BF16);
  EXPECT_EQ(contains(m.extensions, "SPV_KHR_bfloat16"), half == Type::BF16);
  EXPECT_EQ(contains(m.capabilities, 22), half == Type::BF16);
  EXPECT_EQ(contains(m.capabilities, 9), half == Type::F16);

  // OpMemoryModel (14) Logical (0) Vulkan (3).
  ASSERT_EQ(m.all(14).size(), 1u);
  EXPECT_EQ(m.all(14)[0]->operands, (std::vector<uint32_t>{0, 3}));

  // Three matrix types: component, Subgroup scope (3), 16 x 16, uses A (0), B (1), accumulator (2).
  std::map<uint32_t, uint32_t> use_of_type;  // type id -> use
  for (const Inst* t : m.all(4456)) {
    ASSERT_EQ(t->operands.size(), 6u);
    EXPECT_EQ(m.constant(t->operands[2]), 3u);
    EXPECT_EQ(m.constant(t->operands[3]), 16u);
    EXPECT_EQ(m.constant(t->operands[4]), 16u);
    const uint32_t use = m.constant(t->operands[5]);
    use_of_type[t->operands[0]] = use;
    const Inst& component = m.def(t->operands[1]);
    EXPECT_EQ(component.opcode, 22u);  // OpTypeFloat
    if (use == 2) {
      EXPECT_EQ(component.operands, (std::vector<uint32_t>{component.operands[0], 32}));
    } else if (half == Type::BF16) {
      EXPECT_EQ(component.operands, (std::vector<uint32_t>{component.operands[0], 16, 0}));  // 16, BFloat16KHR
    } else {
      EXPECT_EQ(component.operands, (std::vector<uint32_t>{component.operands[0], 16}));  // IEEE half
    }
  }
  ASSERT_EQ(use_of_type.size(), 3u);

  // Loads: A row-major (0) with stride 24, B column-major (1) with stride 16, from workgroup (4) pointers, with
  // NonPrivatePointer (0x20).
  const auto loads = m.all(4457);
  ASSERT_EQ(loads.size(), 2u);
  for (const Inst* l : loads) {
    ASSERT_EQ(l->operands.size(), 6u);
    const uint32_t use = use_of_type.at(l->operands[0]);
    EXPECT_EQ(storage_class_of(m, l->operands[2]), 4u);
    EXPECT_EQ(m.constant(l->operands[3]), use == 1 ? 1u : 0u);
    EXPECT_EQ(m.constant(l->operands[4]), use == 1 ? 16u : 24u);
    EXPECT_EQ(l->operands[5], 0x20u);
  }
  // MulAdd: accumulator result from A, B and accumulator operands, no operand mask on float components.
  const auto muls = m.all(4459);
  ASSERT_EQ(muls.size(), 1u);
  ASSERT_EQ(muls[0]->operands.size(), 5u);
  EXPECT_EQ(use_of_type.at(muls[0]->operands[0]), 2u);
  const uint32_t operand_uses[] = {0, 1, 2};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(use_of_type.at(m.def(muls[0]->operands[2 + i]).operands[0]), operand_uses[i]);
  // Store: pointer, object, row-major, stride 16, NonPrivatePointer.
  const auto stores = m.all(4458);
  ASSERT_EQ(stores.size(), 1u);
  ASSERT_EQ(stores[0]->operands.size(), 5u);
  EXPECT_EQ(storage_class_of(m, stores[0]->operands[0]), 4u);
  EXPECT_EQ(use_of_type.at(m.def(stores[0]->operands[1]).operands[0]), 2u);
  EXPECT_EQ(m.constant(stores[0]->operands[2]), 0u);
  EXPECT_EQ(m.constant(stores[0]->operands[3]), 16u);
  EXPECT_EQ(stores[0]->operands[4], 0x20u);
  // The fill: a composite of the accumulator type with one constituent.
  const auto fills = m.all(80);
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(use_of_type.at(fills[0]->operands[0]), 2u);
  EXPECT_EQ(fills[0]->operands.size(), 3u);

  // Memory accesses through workgroup and storage-buffer pointers are non-private; those of Function variables
  // (the fragments) carry no operand.
  int non_private = 0;
  for (const Inst& i : m.insts) {
    if (i.opcode != 61 && i.opcode != 62) continue;  // OpLoad, OpStore
    const uint32_t pointer = i.operands.at(i.opcode == 61 ? 2 : 0);
    const uint32_t storage = storage_class_of(m, pointer);
    const size_t plain = i.opcode == 61 ? 3 : 2;
    if (storage == 4 || storage == 12) {  // Workgroup, StorageBuffer
      ASSERT_EQ(i.operands.size(), plain + 1) << "opcode " << i.opcode;
      EXPECT_EQ(i.operands[plain], 0x20u);
      ++non_private;
    } else if (storage == 7) {  // Function
      EXPECT_EQ(i.operands.size(), plain);
    }
  }
  EXPECT_EQ(non_private, 2);  // the c tile's load and the buffer's store

  // The barrier makes the workgroup memory writes available and visible: AcquireRelease | WorkgroupMemory |
  // MakeAvailable | MakeVisible (no UniformMemory: no buffer is both read and written).
  const auto barriers = m.all(224);
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(m.constant(barriers[0]->operands[2]), 0x8u | 0x100u | 0x2000u | 0x4000u);
}

INSTANTIATE_TEST_SUITE_P(Operands, SpirvCooperativeMatrix, testing::Values(Type::BF16, Type::F16),
                         [](const testing::TestParamInfo<Type>& p) { return std::string(dtype_name(p.param)); });

// Kernels without fragments keep the GLSL450 memory model and plain accesses (and still pass the validator).
TEST(SpirvCooperativeMatrix, OtherKernelsKeepTheGlsl450MemoryModel) {
  KernelBuilder kb("plain", 64);
  auto tile = kb.shared("t", Type::F32, 64);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  tile[kb.local_id()] = kb.f32(1);
  kb.barrier();
  o[kb.local_id()] = tile[kb.local_id()];
  const Module m = decode(compile(kb.finish()));
  ASSERT_EQ(m.all(14).size(), 1u);
  EXPECT_EQ(m.all(14)[0]->operands, (std::vector<uint32_t>{0, 1}));  // Logical GLSL450
  EXPECT_FALSE(contains(m.capabilities, 5345));
  for (const Inst& i : m.insts)
    if (i.opcode == 61) {
      EXPECT_EQ(i.operands.size(), 3u);
    }
  const auto barriers = m.all(224);
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(m.constant(barriers[0]->operands[2]), 0x8u | 0x100u);  // no buffer both read and written: no UniformMemory
}

// An A fragment's packed share loaded from one buffer and stored into another (kir's MatrixLoadPacked and
// MatrixStorePacked): each invocation's 16 bytes at element 8 x its id.
Kernel packed_kernel(Type half) {
  KernelBuilder kb("packed", 32);
  auto in = kb.buffer("in", half, Access::Read), out = kb.buffer("out", half, Access::Write);
  auto a = kb.fragment("fa", MatrixUse::A, half);
  kb.matrix_load_packed(a, in, kb.local_id() * 8u);
  kb.matrix_store_packed(out, kb.local_id() * 8u, a);
  return kb.finish();
}

// The decorations of a variable: decoration number -> its literal (0 where none).
std::map<uint32_t, uint32_t> decorations_of(const Module& m, uint32_t target) {
  std::map<uint32_t, uint32_t> out;
  for (const Inst* d : m.all(71))  // OpDecorate: target, decoration, literals
    if (d->operands.at(0) == target) out[d->operands.at(1)] = d->operands.size() > 2 ? d->operands[2] : 0;
  return out;
}

class SpirvPackedFragment : public testing::TestWithParam<Type> {};

TEST_P(SpirvPackedFragment, MovesEachInvocationsComponentsAsOne16ByteVector) {
  const Type half = GetParam();
  const Module m = decode(compile(packed_kernel(half)));
  // Int16 (22): the words split into 16-bit halves.
  EXPECT_TRUE(contains(m.capabilities, 22));
  // The 16-byte vector type: OpTypeVector (23) of 4 unsigned 32-bit integers (OpTypeInt 21, width 32, signedness 0).
  auto is_uvec4 = [&](uint32_t type) {
    const Inst& v = m.def(type);
    if (v.opcode != 23 || v.operands.at(2) != 4) return false;
    const Inst& e = m.def(v.operands.at(1));
    return e.opcode == 21 && e.operands.at(1) == 32 && e.operands.at(2) == 0;
  };
  // Which binding a pointer from OpAccessChain (type, result, base, 0, index) reaches, and whether that variable is
  // declared NonWritable (24) or NonReadable (25) on its block's member.
  auto binding_of = [&](uint32_t pointer) {
    const uint32_t variable = m.def(pointer).operands.at(2);
    return decorations_of(m, variable).at(33);  // Binding
  };
  // One uvec4 load (OpLoad 61) through binding 0, split into the fragment's 8 components in order (OpCompositeInsert
  // 82 with one index each, 0..7, each a bitcast (124) of a 16-bit half), the matrix stored into its variable.
  const Inst* load = nullptr;
  for (const Inst* l : m.all(61))
    if (is_uvec4(l->operands[0])) {
      ASSERT_EQ(load, nullptr) << "a second 16-byte load";
      load = l;
    }
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(binding_of(load->operands[2]), 0u);
  std::vector<uint32_t> inserted;
  for (const Inst* i : m.all(82)) {
    ASSERT_EQ(i->operands.size(), 5u);  // type, result, object, composite, one index
    EXPECT_EQ(m.def(i->operands[2]).opcode, 124u);
    inserted.push_back(i->operands[4]);
  }
  EXPECT_EQ(inserted, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // The store: components 0..7 extracted (OpCompositeExtract 81 from the matrix type, 4456), one uvec4 store (OpStore
  // 62) through binding 1.
  std::vector<uint32_t> extracted;
  for (const Inst* e : m.all(81))
    if (m.def(m.def(e->operands[2]).operands[0]).opcode == 4456) extracted.push_back(e->operands.at(3));
  EXPECT_EQ(extracted, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  int vector_stores = 0;
  for (const Inst* st : m.all(62)) {
    const Inst& value = m.def(st->operands[1]);
    if (value.opcode != 80 || !is_uvec4(value.operands[0])) continue;  // OpCompositeConstruct of a uvec4
    ++vector_stores;
    EXPECT_EQ(binding_of(st->operands[0]), 1u);
  }
  EXPECT_EQ(vector_stores, 1);
}

INSTANTIATE_TEST_SUITE_P(Operands, SpirvPackedFragment, testing::Values(Type::BF16, Type::F16),
                         [](const testing::TestParamInfo<Type>& p) { return std::string(dtype_name(p.param)); });

TEST(SpirvPackedFragment, RefusesAccumulatorsAndBuffersOfAnotherType) {
  KernelBuilder kb("bad", 32);
  auto in = kb.buffer("in", Type::BF16, Access::Read);
  auto acc = kb.fragment("acc", MatrixUse::Accumulator, Type::F32);
  kb.matrix_load_packed(acc, in, kb.u32(0));
  const std::string accumulator = verify(kb.peek());
  EXPECT_NE(accumulator.find("only subgroup A and B fragments are packed"), std::string::npos) << accumulator;
  KernelBuilder kb2("bad2", 32);
  auto in2 = kb2.buffer("h", Type::F16, Access::Read);
  auto a2 = kb2.fragment("a", MatrixUse::A, Type::BF16);
  kb2.matrix_load_packed(a2, in2, kb2.u32(0));
  const std::string other_type = verify(kb2.peek());
  EXPECT_NE(other_type.find("fragment holds bf16, buffer h holds f16"), std::string::npos) << other_type;
  KernelBuilder kb3("bad3", 32);
  auto in3 = kb3.buffer("in", Type::BF16, Access::Read);
  auto a3 = kb3.fragment("a", MatrixUse::A, Type::BF16);
  kb3.matrix_store_packed(in3, kb3.u32(0), a3);
  const std::string read_only = verify(kb3.peek());
  EXPECT_NE(read_only.find("buffer in is read"), std::string::npos) << read_only;
}

// A buffer written through its packed view and element by element too would need aliased declarations: refused.
TEST(SpirvPackedFragment, RefusesElementStoresBesidePackedOnesIntoOneBuffer) {
  KernelBuilder kb("mixed", 32);
  auto in = kb.buffer("in", Type::BF16, Access::Read), out = kb.buffer("out", Type::BF16, Access::Write);
  auto a = kb.fragment("a", MatrixUse::A, Type::BF16);
  kb.matrix_load_packed(a, in, kb.local_id() * 8u);
  kb.matrix_store_packed(out, kb.local_id() * 8u, a);
  out[kb.u32(0)] = cast(kb.f32(1), Type::BF16);
  try {
    (void)compile(kb.finish());
    ADD_FAILURE() << "a buffer took packed and element stores";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("buffer out takes packed fragment stores and also element stores"),
              std::string::npos)
        << e.what();
  }
}

// A workgroup's 64 x 32 block of c = a x b straight from and to buffers, b stored transposed (read through a view).
Kernel workgroup_matrix_kernel() {
  KernelBuilder kb("wgm", 256);
  auto a_buf = kb.buffer("a", Type::BF16, Access::Read), b_buf = kb.buffer("b", Type::BF16, Access::Read);
  auto c_buf = kb.buffer("c", Type::F32, Access::Write);
  auto a = kb.workgroup_matrix("a", MatrixUse::A, Type::BF16, 64, 16);
  auto b = kb.workgroup_matrix("b", MatrixUse::B, Type::BF16, 16, 32, /*column_major=*/true);
  auto acc = kb.workgroup_matrix("acc", MatrixUse::Accumulator, Type::F32, 64, 32);
  kb.matrix_fill(acc, kb.f32(0));
  Val row = kb.group_id() * 64u, k0 = kb.u32(48);
  kb.matrix_load_tensor(a, a_buf, kb.u32(8), row, k0, kb.u32(100), kb.u32(70));  // A: 100 x 70 from element 8
  kb.matrix_load_tensor(b, b_buf, kb.u32(0), k0, kb.u32(32), kb.u32(70), kb.u32(50));  // B^T: 50 x 70
  kb.matrix_mul_add(acc, a, b, acc);
  kb.matrix_store_tensor(c_buf, kb.u32(4), row, kb.u32(32), kb.u32(100), kb.u32(50), acc);
  return kb.finish();
}

TEST(SpirvWorkgroupMatrix, WritesTheTensorAddressingInstructionsAsSpecified) {
  const Module m = decode(compile(workgroup_matrix_kernel()));
  // CooperativeMatrixTensorAddressingNV 5433 (SPV_NV_cooperative_matrix2) and TensorAddressingNV 5439
  // (SPV_NV_tensor_addressing), on top of the cooperative-matrix ones.
  EXPECT_TRUE(contains(m.capabilities, 5433));
  EXPECT_TRUE(contains(m.capabilities, 5439));
  EXPECT_TRUE(contains(m.capabilities, 6022));
  EXPECT_TRUE(contains(m.extensions, "SPV_NV_cooperative_matrix2"));
  EXPECT_TRUE(contains(m.extensions, "SPV_NV_tensor_addressing"));

  // Matrix types at Workgroup scope (2), of the fragments' sizes.
  std::map<uint32_t, uint32_t> use_of_type;
  for (const Inst* t : m.all(4456)) {
    ASSERT_EQ(t->operands.size(), 6u);
    EXPECT_EQ(m.constant(t->operands[2]), 2u);
    const uint32_t use = m.constant(t->operands[5]);
    use_of_type[t->operands[0]] = use;
    const uint32_t rows[] = {64, 16, 64}, columns[] = {16, 32, 32};
    EXPECT_EQ(m.constant(t->operands[3]), rows[use]);
    EXPECT_EQ(m.constant(t->operands[4]), columns[use]);
  }
  ASSERT_EQ(use_of_type.size(), 3u);

  // One layout type: 2 dimensions, clamp mode Constant (1). One view type: 2 dimensions, HasDimensions false,
  // permutation (1, 0).
  ASSERT_EQ(m.all(5370).size(), 1u);
  const Inst& layout_type = *m.all(5370)[0];
  EXPECT_EQ(m.constant(layout_type.operands[1]), 2u);
  EXPECT_EQ(m.constant(layout_type.operands[2]), 1u);
  ASSERT_EQ(m.all(5371).size(), 1u);
  const Inst& view_type = *m.all(5371)[0];
  ASSERT_EQ(view_type.operands.size(), 5u);
  EXPECT_EQ(m.constant(view_type.operands[1]), 2u);
  EXPECT_EQ(m.def(view_type.operands[2]).opcode, 42u);  // OpConstantFalse
  EXPECT_EQ(m.constant(view_type.operands[3]), 1u);
  EXPECT_EQ(m.constant(view_type.operands[4]), 0u);

  // Each access: a fresh layout (5372), its dimensions in storage order (5373), sliced to the block (5375: offset,
  // span per dimension), through a storage-buffer pointer (12) at the base element.
  auto layout_of = [&](uint32_t id, std::vector<uint32_t> dims, std::vector<uint32_t> slice) {
    const Inst& sl = m.def(id);
    ASSERT_EQ(sl.opcode, 5375u);
    ASSERT_EQ(sl.operands.size(), 7u);
    EXPECT_EQ(sl.operands[0], layout_type.operands[0]);
    for (int i = 0; i < 4; ++i)
      if (slice[size_t(i)] != ~0u) {
        EXPECT_EQ(m.constant(sl.operands[3 + size_t(i)]), slice[size_t(i)]) << i;
      }
    const Inst& d = m.def(sl.operands[2]);
    ASSERT_EQ(d.opcode, 5373u);
    ASSERT_EQ(d.operands.size(), 5u);
    EXPECT_EQ(m.constant(d.operands[3]), dims[0]);
    EXPECT_EQ(m.constant(d.operands[4]), dims[1]);
    EXPECT_EQ(m.def(d.operands[2]).opcode, 5372u);
  };
  auto base_of = [&](uint32_t pointer) {
    EXPECT_EQ(storage_class_of(m, pointer), 12u);
    return m.constant(m.def(pointer).operands.at(4));  // OpAccessChain: type, result, base, 0, element
  };
  const auto loads = m.all(5367);
  ASSERT_EQ(loads.size(), 2u);
  for (const Inst* l : loads) {
    const uint32_t use = use_of_type.at(l->operands[0]);
    EXPECT_EQ(m.def(l->operands[3]).opcode, 1u);  // Object: OpUndef (no view clips)
    EXPECT_EQ(l->operands[5], 0u);                // Memory Operand: None (private: nothing in the dispatch syncs)
    if (use == 0) {
      // A: 100 x 70 row-major, the block at (row, 48) of 64 x 16; no addressing operands.
      ASSERT_EQ(l->operands.size(), 7u);
      EXPECT_EQ(base_of(l->operands[2]), 8u);
      layout_of(l->operands[4], {100, 70}, {~0u, 64, 48, 16});
      EXPECT_EQ(l->operands[6], 0u);
    } else {
      // B stored transposed: the layout is its 50 x 70 storage, the slice (32, 32) x (48, 16), read through the view.
      ASSERT_EQ(use, 1u);
      ASSERT_EQ(l->operands.size(), 8u);
      EXPECT_EQ(base_of(l->operands[2]), 0u);
      layout_of(l->operands[4], {50, 70}, {32, 32, 48, 16});
      EXPECT_EQ(l->operands[6], 1u);  // TensorView
      const Inst& view = m.def(l->operands[7]);
      EXPECT_EQ(view.opcode, 5377u);
      EXPECT_EQ(view.operands[0], view_type.operands[0]);
    }
  }
  // The store: pointer at element 4, the accumulator, a 100 x 50 layout sliced at (row, 32) to 64 x 32.
  const auto stores = m.all(5368);
  ASSERT_EQ(stores.size(), 1u);
  ASSERT_EQ(stores[0]->operands.size(), 5u);
  EXPECT_EQ(base_of(stores[0]->operands[0]), 4u);
  EXPECT_EQ(use_of_type.at(m.def(stores[0]->operands[1]).operands[0]), 2u);
  layout_of(stores[0]->operands[2], {100, 50}, {~0u, 64, 32, 32});
  EXPECT_EQ(stores[0]->operands[3], 0u);
  EXPECT_EQ(stores[0]->operands[4], 0u);
}

}  // namespace
}  // namespace spire::spirv
