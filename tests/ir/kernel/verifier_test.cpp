#include <algorithm>
#include <functional>
#include <stdexcept>
// The verifier rejects malformed kernels with a message naming the problem.
#include <gtest/gtest.h>

#include "ir/kernel/builder.h"

using namespace spire::kir;

namespace {

Kernel minimal() {
  KernelBuilder kb("k");
  auto o = kb.buffer("o", Type::F32, Access::Write);
  o[kb.global_id()] = kb.f32(1);
  return kb.finish();
}

TEST(KernelVerifier, AcceptsAWellFormedKernel) { EXPECT_EQ(verify(minimal()), ""); }

TEST(KernelVerifier, RejectsStoreToReadOnlyBuffer) {
  Kernel k = minimal();
  k.buffers[0].access = Access::Read;

  EXPECT_NE(verify(k).find("read-only"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsUndeclaredFeature) {
  Kernel k = minimal();
  k.buffers[0].elem = Type::F64;
  EXPECT_NE(verify(k).find("float64"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsZeroWorkgroup) {
  Kernel k = minimal();
  k.workgroup_size = {0, 1, 1};
  EXPECT_NE(verify(k), "");
}

TEST(KernelVerifier, RejectsDanglingOperand) {
  Kernel k = minimal();
  auto& st = std::get<StoreBuffer>(k.body.stmts.back());
  st.value = 999;
  EXPECT_NE(verify(k).find("does not exist"), std::string::npos) << verify(k);
}

TEST(KernelVerifier, RejectsBoolBuffer) {
  Kernel k = minimal();
  k.buffers[0].elem = Type::Bool;
  EXPECT_NE(verify(k).find("bool"), std::string::npos);
}

TEST(KernelVerifier, ScalarLayoutAlignsEachToItsSize) {
  KernelBuilder kb("k");
  kb.scalar("a", Type::U32);
  kb.scalar("b", Type::F64);
  kb.scalar("c", Type::F32);
  Kernel k = kb.finish();
  EXPECT_EQ(k.scalar_offsets(), (std::vector<uint32_t>{0, 8, 16}));
  EXPECT_EQ(k.scalar_block_bytes(), 20u);
}

// bf16 is storage only (types.h): loaded, stored, converted to or from f32.
TEST(KernelVerifier, AcceptsBFloat16LoadConvertStore) {
  KernelBuilder kb("k");
  auto x = kb.buffer("x", Type::BF16, Access::Read);
  auto y = kb.buffer("y", Type::BF16, Access::Write);
  Val i = kb.global_id();
  y[i] = cast(cast(x[i].load(), Type::F32) * kb.f32(2), Type::BF16);
  Kernel k = kb.finish();
  EXPECT_TRUE(k.features.has(Feature::BFloat16));
}

TEST(KernelVerifier, BuilderRoutesOtherBFloat16ConversionsThroughF32) {
  KernelBuilder kb("k");
  auto x = kb.buffer("x", Type::BF16, Access::Read);
  auto y = kb.buffer("y", Type::I32, Access::Write);
  Val i = kb.global_id();
  y[i] = cast(x[i].load(), Type::I32);  // bf16 -> f32 -> i32
  EXPECT_NO_THROW(kb.finish());
}

TEST(KernelVerifier, RejectsBFloat16Arithmetic) {
  KernelBuilder kb("k");
  auto x = kb.buffer("x", Type::BF16, Access::Read);
  auto y = kb.buffer("y", Type::BF16, Access::Write);
  Val i = kb.global_id();
  y[i] = x[i].load() + x[i].load();
  try {
    kb.finish();
    FAIL() << "a bf16 add was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bf16 values are only loaded, stored and converted"), std::string::npos) << e.what();
  }
}

TEST(KernelVerifier, RejectsBFloat16OutsideBuffers) {
  {
    KernelBuilder kb("k");
    kb.scalar("s", Type::BF16);
    auto o = kb.buffer("o", Type::F32, Access::Write);
    o[kb.global_id()] = kb.f32(1);
    EXPECT_NE(verify(kb.peek()).find("scalar s is bf16"), std::string::npos) << verify(kb.peek());
  }
  {
    KernelBuilder kb("k");
    kb.shared("tile", Type::BF16, 64);
    auto o = kb.buffer("o", Type::F32, Access::Write);
    o[kb.global_id()] = kb.f32(1);
    EXPECT_NE(verify(kb.peek()).find("shared array tile holds bf16"), std::string::npos) << verify(kb.peek());
  }
}

// A one-subgroup tensor-core kernel: c = a x b through shared memory, every statement of kernel.h's cooperative
// matrices once.
Kernel matrix_kernel(Type half = Type::BF16, uint32_t stride = 16) {
  KernelBuilder kb("mma", 32);
  auto a_tile = kb.shared("a", half, 256), b_tile = kb.shared("b", half, 256);
  auto c_tile = kb.shared("c", Type::F32, 256);
  auto a = kb.fragment("fa", MatrixUse::A, half), b = kb.fragment("fb", MatrixUse::B, half);
  auto acc = kb.fragment("acc", MatrixUse::Accumulator, Type::F32);
  auto o = kb.buffer("o", Type::F32, Access::Write);
  kb.matrix_fill(acc, kb.f32(0));
  kb.matrix_load(a, a_tile, kb.u32(0), stride);
  kb.matrix_load(b, b_tile, kb.u32(0), stride);
  kb.matrix_mul_add(acc, a, b, acc);
  kb.matrix_store(c_tile, kb.u32(0), 16, acc);
  kb.barrier();
  o[kb.local_id()] = c_tile[kb.local_id()];
  return kb.finish();
}

TEST(KernelVerifier, AcceptsCooperativeMatricesAndDeclaresTheFeature) {
  for (Type half : {Type::BF16, Type::F16}) {
    const Kernel k = matrix_kernel(half);
    EXPECT_EQ(verify(k), "");
    EXPECT_TRUE(k.features.has(Feature::CooperativeMatrix));
  }
}

TEST(KernelVerifier, RejectsMisusedFragments) {
  {
    Kernel k = matrix_kernel(Type::F16);  // (bf16 tiles would be refused first: bf16 in shared memory)
    k.features = Features(Feature::Float16);
    EXPECT_NE(verify(k).find("does not declare cooperative-matrix"), std::string::npos) << verify(k);
  }
  {
    Kernel k = matrix_kernel();
    k.fragments[2].elem = Type::F16;  // an f16 accumulator
    EXPECT_NE(verify(k).find("accumulators f32"), std::string::npos) << verify(k);
  }
  {
    Kernel k = matrix_kernel();
    k.fragments[1].elem = Type::F16;  // a bf16 A with an f16 B
    k.features |= Feature::Float16;
    EXPECT_NE(verify(k), "");
  }
  {
    Kernel k = matrix_kernel();
    std::swap(k.fragments[0], k.fragments[1]);  // A where B belongs
    EXPECT_NE(verify(k).find("matrix_mul_add"), std::string::npos) << verify(k);
  }
  // A stride that is not whole 16 bytes (or shorter than a row) is refused.
  EXPECT_THROW(matrix_kernel(Type::BF16, 20), std::invalid_argument);
  EXPECT_THROW(matrix_kernel(Type::BF16, 8), std::invalid_argument);
  EXPECT_NO_THROW(matrix_kernel(Type::BF16, 24));
}

// A workgroup's c (64 x 32) = a (64 x 16) x b (16 x 32), straight from and to buffers.
Kernel workgroup_matrix_kernel() {
  KernelBuilder kb("wgm", 256);
  auto a_buf = kb.buffer("a", Type::BF16, Access::Read), b_buf = kb.buffer("b", Type::BF16, Access::Read);
  auto c_buf = kb.buffer("c", Type::F32, Access::Write);
  auto a = kb.workgroup_matrix("a", MatrixUse::A, Type::BF16, 64, 16);
  auto b = kb.workgroup_matrix("b", MatrixUse::B, Type::BF16, 16, 32);
  auto acc = kb.workgroup_matrix("acc", MatrixUse::Accumulator, Type::F32, 64, 32);
  Val zero = kb.u32(0), rows = kb.u32(64), k = kb.u32(16), columns = kb.u32(32);
  kb.matrix_fill(acc, kb.f32(0));
  kb.matrix_load_tensor(a, a_buf, zero, zero, zero, rows, k);
  kb.matrix_load_tensor(b, b_buf, zero, zero, zero, k, columns);
  kb.matrix_mul_add(acc, a, b, acc);
  kb.matrix_store_tensor(c_buf, zero, zero, zero, rows, columns, acc);
  return kb.finish();
}

template <class S>
S& first(Kernel& k) {
  for (Stmt& s : k.body.stmts)
    if (auto* x = std::get_if<S>(&s)) return *x;
  throw std::logic_error("no such statement");
}

TEST(KernelVerifier, WorkgroupMatricesMoveThroughBuffersInMatchingSizes) {
  const Kernel good = workgroup_matrix_kernel();
  EXPECT_EQ(verify(good), "");
  EXPECT_TRUE(good.features.has(Feature::WorkgroupMatrix));
  EXPECT_FALSE(good.features.has(Feature::CooperativeMatrix));
  EXPECT_TRUE(stores_matrices_into(good, 2));
  EXPECT_FALSE(stores_matrices_into(good, 0));
  auto refused = [&](const std::function<void(Kernel&)>& change, const std::string& why) {
    Kernel k = clone(good);
    change(k);
    const std::string e = verify(k);
    EXPECT_NE(e.find(why), std::string::npos) << "wanted '" << why << "', got '" << e << "'";
  };
  refused([](Kernel& k) { k.features = Features(Feature::BFloat16); }, "does not declare workgroup-matrix");
  refused([](Kernel& k) { k.fragments[2].columns = 48; }, "sizes do not match");
  refused([](Kernel& k) { k.fragments[0].rows = k.fragments[2].rows = 40; }, "multiples of 16");
  refused([](Kernel& k) { k.fragments[1].workgroup = false; }, "subgroup fragments are 16 x 16");
  refused([](Kernel& k) { first<MatrixLoadTensor>(k).fragment = 2; }, "operands (a, b) are loaded, accumulators stored");
  refused([](Kernel& k) { first<MatrixStoreTensor>(k).fragment = 0; }, "operands (a, b) are loaded, accumulators stored");
  refused([](Kernel& k) { first<MatrixLoadTensor>(k).buffer = 2; }, "fragment holds bf16, buffer c holds f32");
  refused([](Kernel& k) { k.buffers[0].access = Access::Write; }, "buffer a is write");
  refused([](Kernel& k) { first<MatrixStoreTensor>(k).rows = first<MatrixFill>(k).value; }, "are u32");
  refused([](Kernel& k) {
    k.shared.push_back({"t", Type::BF16, 1024});
    k.body.stmts.push_back(MatrixLoad{0, 0, first<MatrixLoadTensor>(k).base, 16});
  }, "a workgroup matrix moves through buffers");
  // Its whole-matrix stores cannot take an epilogue.
  KernelBuilder kb(clone(good));
  EXPECT_THROW(kb.rewrite_stores(2, [](Val, Val v) { return v; }), std::invalid_argument);
}

// Asynchronous copies, their batches and waits declare async-copy; without the feature each is refused by name.
TEST(KernelVerifier, AsynchronousCopiesNeedTheirFeature) {
  KernelBuilder kb("copies", 32);
  auto tile = kb.shared("tile", Type::F32, 128);
  auto in = kb.buffer("in", Type::F32, Access::Read);
  auto out = kb.buffer("out", Type::F32, Access::Write);
  kb.copy_to_shared(tile, kb.local_id() * 4u, in, kb.local_id() * 4u, kb.boolean(true));
  kb.copy_commit();
  kb.copy_wait(0);
  kb.barrier();
  out[kb.local_id()] = tile[kb.local_id()];
  const Kernel k = kb.finish();
  EXPECT_EQ(verify(k), "");
  ASSERT_TRUE(k.features.has(Feature::AsyncCopy));
  Kernel without = clone(k);
  without.features = Features();
  const std::string e = verify(without);
  EXPECT_NE(e.find("copy_to_shared: the kernel does not declare async-copy"), std::string::npos) << e;
  // The commit and the wait alone, each without the feature.
  auto erase_first = [](Kernel& kernel, auto kind) {
    auto& st = kernel.body.stmts;
    st.erase(std::find_if(st.begin(), st.end(), [](const Stmt& x) { return std::holds_alternative<decltype(kind)>(x); }));
  };
  Kernel part = clone(without);
  erase_first(part, CopyToShared{});
  EXPECT_NE(verify(part).find("copy_commit: the kernel does not declare async-copy"), std::string::npos) << verify(part);
  erase_first(part, CopyCommit{});
  EXPECT_NE(verify(part).find("copy_wait: the kernel does not declare async-copy"), std::string::npos) << verify(part);
}

}  // namespace

namespace {

// kir::LoadSharedVector: 2 or 4 lanes of a 32-bit array, each result defined once.
TEST(KernelVerifier, ChecksVectorLoadsOfWorkgroupMemory) {
  auto kernel = [](Type elem, uint32_t count, uint32_t lanes, uint32_t second_lanes) {
    KernelBuilder kb("vec", 32);
    auto out = kb.buffer("out", elem, Access::Write);
    auto tile = kb.shared("tile", elem, count);
    auto lid = kb.local_id();
    tile[lid] = cast(lid, elem);
    kb.barrier();
    Val sum = tile.load_vector(lid * lanes, lanes)[0];
    if (second_lanes) sum = sum + tile.load_vector(lid * second_lanes, second_lanes)[1];
    out[lid] = sum;
    return clone(kb.peek());  // unverified: finish() would throw
  };
  auto problem = [&](Type elem, uint32_t count, uint32_t lanes, uint32_t second = 0) {
    return verify(kernel(elem, count, lanes, second));
  };
  EXPECT_EQ(problem(Type::F32, 128, 4), "");
  EXPECT_EQ(problem(Type::U32, 64, 2, 2), "");
  EXPECT_NE(problem(Type::F32, 96, 3).find("3 lanes (2 or 4)"), std::string::npos) << problem(Type::F32, 96, 3);
  EXPECT_EQ(problem(Type::F32, 128, 4, 2), "") << "widths may differ between loads of one array";
  EXPECT_NE(problem(Type::F64, 128, 2).find("32-bit only"), std::string::npos) << problem(Type::F64, 128, 2);

  Kernel twice = kernel(Type::F32, 128, 4, 0);
  std::vector<Stmt>& body = twice.body.stmts;
  auto at = std::find_if(body.begin(), body.end(), [](const Stmt& s) { return std::holds_alternative<LoadSharedVector>(s); });
  ASSERT_NE(at, body.end());
  std::get<LoadSharedVector>(*at).results[1] = std::get<LoadSharedVector>(*at).results[0];
  EXPECT_NE(verify(twice).find("defined twice"), std::string::npos) << verify(twice);
}

TEST(KernelVerifier, ChecksVectorLoadsOfBuffers) {
  auto problem = [](Type elem, Access access, uint32_t lanes) {
    KernelBuilder kb("vec", 32);
    auto x = kb.buffer("x", elem, access);
    auto out = kb.buffer("out", elem, Access::Write);
    out[kb.local_id()] = x.load_vector(kb.local_id() * lanes, lanes)[0];
    return verify(clone(kb.peek()));
  };
  EXPECT_EQ(problem(Type::F32, Access::Read, 4), "");
  EXPECT_EQ(problem(Type::I32, Access::ReadWrite, 2), "");
  EXPECT_NE(problem(Type::F32, Access::Write, 4).find("write-only"), std::string::npos) << problem(Type::F32, Access::Write, 4);
  EXPECT_NE(problem(Type::F32, Access::Read, 8).find("8 lanes"), std::string::npos) << problem(Type::F32, Access::Read, 8);
  // 16-bit elements from a buffer (a few-rows product's half weights, 8 bytes at once), not 64-bit ones.
  EXPECT_EQ(problem(Type::BF16, Access::Read, 4), "");
  EXPECT_EQ(problem(Type::F16, Access::Read, 2), "");
  EXPECT_NE(problem(Type::F64, Access::Read, 2).find("32-bit or 16-bit only"), std::string::npos)
      << problem(Type::F64, Access::Read, 2);
}

TEST(KernelVerifier, ChecksWidenedVectorLoads) {
  auto problem = [](Type elem, uint32_t lanes) {
    KernelBuilder kb("widened", 32);
    auto x = kb.buffer("x", elem, Access::Read);
    auto out = kb.buffer("out", Type::F32, Access::Write);
    out[kb.local_id()] = x.load_vector_widened(kb.local_id() * lanes, lanes)[0];  // f32 results
    return verify(clone(kb.peek()));
  };
  EXPECT_EQ(problem(Type::BF16, 4), "");
  EXPECT_EQ(problem(Type::F16, 2), "");
  EXPECT_NE(problem(Type::F32, 4).find("widened from f32 (f16 or bf16 only)"), std::string::npos) << problem(Type::F32, 4);
  EXPECT_NE(problem(Type::BF16, 8).find("8 lanes"), std::string::npos) << problem(Type::BF16, 8);
}

// kernel.h's WaitForPriorKernels: before it a kernel reads only buffers marked read_before_wait (read-only ones) and
// stores nothing; at most one, outside loops.
TEST(KernelVerifier, ChecksWhatComesBeforeAPlacedWait) {
  // what: 0 a good kernel, 1 an unmarked read first, 2 a store first, 3 two waits, 4 a wait in a loop, 5 a marked
  // buffer that is written.
  auto make = [](int what) {
    KernelBuilder kb("early", 64);
    auto w = kb.buffer("w", Type::F32, what == 5 ? Access::ReadWrite : Access::Read);
    auto x = kb.buffer("x", Type::F32, Access::Read);
    auto out = kb.buffer("out", Type::F32, Access::Write);
    kb.read_before_wait(w);
    Val early = (what == 1 ? x : w)[kb.global_id()].load();
    if (what == 2) out[kb.global_id()] = early;
    if (what == 4)
      kb.for_(kb.u32(0), kb.u32(2), kb.u32(1), [&](Val) { kb.wait_for_prior_kernels(); });
    else
      kb.wait_for_prior_kernels();
    if (what == 3) kb.wait_for_prior_kernels();
    out[kb.global_id()] = early * x[kb.global_id()].load();
    return kb.finish();
  };
  // (finish() verifies: a malformed kernel throws the verifier's message.)
  auto problem = [&](int what) {
    try {
      make(what);
      return std::string();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(verify(make(0)), "");
  EXPECT_TRUE(places_wait(make(0)));
  EXPECT_FALSE(places_wait(minimal()));
  const std::pair<int, const char*> bad[] = {{1, "buffer x is read before the kernel's wait_for_prior_kernels but is "
                                                 "not marked read_before_wait"},
                                             {2, "buffer out is written before"},
                                             {3, "more than one wait_for_prior_kernels"},
                                             {4, "wait_for_prior_kernels inside a loop"},
                                             {5, "buffer w is read before the kernel's wait but is not read-only"}};
  for (const auto& [what, message] : bad)
    EXPECT_NE(problem(what).find(message), std::string::npos) << what << ": " << problem(what);
}

}  // namespace
