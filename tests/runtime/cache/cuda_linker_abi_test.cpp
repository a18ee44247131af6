// The CUDA linker entry points the module cache declares (runtime/cuda/cuda_driver_api.h), checked against
// NVIDIA's PFN typedefs where the toolkit's headers exist, as tests/runtime/cuda/cuda_abi_test.cpp checks the others.
#include <gtest/gtest.h>

#include <type_traits>

#include "runtime/cuda/cuda_driver_api.h"

#ifdef SPIRE_HAVE_CUDA_TYPEDEFS
namespace mine {
using Api = spire::rt::cuda::DriverApi;
using T_cuLinkCreate = decltype(Api::cuLinkCreate);
using T_cuLinkAddData = decltype(Api::cuLinkAddData);
using T_cuLinkComplete = decltype(Api::cuLinkComplete);
using T_cuLinkDestroy = decltype(Api::cuLinkDestroy);
}  // namespace mine

#include <cuda.h>
#include <cudaTypedefs.h>

#include "tests/support/abi_shape.h"

namespace {

using spire::testing_support::abi::same_abi;

// cuGetProcAddress at CUDA 12.0 returns cuLinkCreate_v2 and cuLinkAddData_v2 (PFN_..._v6050).
static_assert(same_abi<mine::T_cuLinkCreate, PFN_cuLinkCreate_v6050>);
static_assert(same_abi<mine::T_cuLinkAddData, PFN_cuLinkAddData_v6050>);
static_assert(same_abi<mine::T_cuLinkComplete, PFN_cuLinkComplete_v5050>);
static_assert(same_abi<mine::T_cuLinkDestroy, PFN_cuLinkDestroy_v5050>);
static_assert(spire::rt::cuda::CU_JIT_INPUT_PTX == ::CU_JIT_INPUT_PTX);

}  // namespace

TEST(CudaLinkerAbi, DeclarationsMatchTheToolkitHeaders) { SUCCEED() << "checked at compile time against cuda.h"; }
#else
TEST(CudaLinkerAbi, DeclarationsMatchTheToolkitHeaders) {
  GTEST_SKIP() << "cudaTypedefs.h not found at configure time: the linker declarations are not cross-checked";
}
#endif
