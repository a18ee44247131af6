// The runtime conformance suite: ONE set of tests of the contract in runtime/device.h, run against every
// driver, in the spirit of IREE's HAL CTS. Every test is a TEST_P over a device id, so a promise of the contract
// is checked in one place for vulkan:N and cuda:N alike.
//
// Instances. spire_runtime_conformance_tests runs the suite on every device of rt::list_devices() (lavapipe
// here; vulkan:0 and cuda:0 on the GPU machine) with the Khronos validation layer on: any validation message
// fails the test. spire_runtime_conformance_adopted_tests runs it on "vulkan:app", a device a test app created
// itself and handed to spire (runtime/vulkan/vulkan_external.h, tests/runtime/vulkan_external/app_vulkan.h), also
// with the layer on. spire_runtime_conformance_mock_tests runs it on cuda:0 of the mock CUDA driver
// (tests/runtime/cuda/mock_driver, found through that executable's RUNPATH). The mock runs kernels for real with the
// PTX interpreter, so the whole suite is instantiated for it; two tests skip there, as on any CUDA device,
// because CUDA's limits make them too costly or impossible: a grid past 2^31-1 workgroups in x, and a view
// larger than the binding limit (all of memory).
//
// What it covers, one file each:
//   info_test.cpp      DeviceInfo is well-formed and agrees with list_devices() and a second open;
//                      SPIRE_MASK_FEATURES hides features from both.
//   memory_test.cpp    alloc of both memory kinds at sizes 0, 1, 3, 5, ...; upload and download at unaligned
//                      offsets; transfers out of range; fills up to a last partial word; OutOfMemory.
//   load_test.cpp      load(): the same binary twice reuses the loaded program; binaries of the other format,
//                      needing a masked feature (MissingFeature) or beyond the device's limits are refused,
//                      naming kernel and device; a loaded kernel keeps its signature without the IR.
//   dispatch_test.cpp  vector add against the CPU with the output poisoned; grid folding past
//                      max_workgroup_count[0] where that is cheap; scalars of 32 and 64 bits; views at aligned
//                      offsets; empty grids and buffers; binding-count, scalar, alignment, range and
//                      binding-limit errors; objects that outlive their device.
//   half_conversion_test.cpp  f32 <-> bf16 bit for bit (ties, NaNs, denormals) on devices with bfloat16; a
//                      masked bfloat16 refuses the kernel by name.
//   stream_test.cpp    record once, submit many; barriers between kernels, fills and copies; fills and copies
//                      in a stream and the views they refuse; timestamps; finish() and submit() end recording.
//   sync_test.cpp      fences (waited, polled) and wait_idle.
//   mapped_test.cpp    Buffer::mapped(): host-visible bytes read and written in place, a stream fed and read
//                      through them with one submit and one wait, mapped device memory (Memory::DeviceMapped)
//                      read by kernels as written; Device::sync_counts().
//
// What stays backend-specific, and why (it is not part of the contract, or only one backend can show it):
//   tests/runtime/vulkan   the validation layer's plumbing, listing and naming devices, lavapipe's identity, the run
//                  without a Vulkan driver, optional features (f16, i64, atomics: the runtime must enable them
//                  or the layer complains), the staging path SPIRE_VULKAN_FORCE_STAGING forces, and
//                  resubmitting a stream still in flight (beyond the contract, invalid Vulkan if mishandled).
//   tests/runtime/cuda     the driver ABI against NVIDIA's headers; host-side helpers (scalar packing, fold_grid, the
//                  mask parser) and loading without a driver; what every NVIDIA GPU offers; PTX numerics,
//                  shared memory and 3D builtins on a GPU; streams as CUDA graphs or launch lists; and what
//                  only the mock shows: launch parameters as packed, grids folded past 2^31, JIT rejection
//                  logs, sticky faults, contexts across threads, allocations freed.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace spire::rt::conformance {

// The device ids this executable instantiates the suite for: all_devices.cpp, mock_driver_devices.cpp or
// adopted_device.cpp.
std::vector<std::string> device_ids();
// A new device of that id: open_device(id) for listed devices (listed_devices.cpp); the host app's device adopted
// anew for "vulkan:app" (adopted_device.cpp).
std::unique_ptr<Device> open_suite_device(const std::string& id);
// What list_devices() says about the device of that id (for "vulkan:app": about the same physical device, with
// the adopted id and index), or a test failure when it lists none.
DeviceInfo listed_info(const std::string& id);
// "vulkan:0" -> "vulkan_0", for test names.
std::string param_name(const ::testing::TestParamInfo<std::string>& info);

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;
  // One device per id and process, opened on first use: opening a device costs more than most tests.
  Device& dev();
  const DeviceInfo& info() { return dev().info(); }
  // A fresh device of the same id opened with SPIRE_MASK_FEATURES=mask (the variable is unset again after).
  std::unique_ptr<Device> open_masked(const std::string& mask);

 private:
  uint64_t validation_messages_before_ = 0;
};

}  // namespace spire::rt::conformance

// Instantiates the conformance suite `Suite` (a class derived from Conformance) for every device id; test names
// read Conformance/Suite.Test/vulkan_0, so `ctest -R Conformance/` runs them all.
#define SPIRE_CONFORMANCE_INSTANTIATE(Suite)                                                                 \
  INSTANTIATE_TEST_SUITE_P(Conformance, Suite, ::testing::ValuesIn(::spire::rt::conformance::device_ids()), \
                           ::spire::rt::conformance::param_name);                                           \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Suite)

// Declares a suite of conformance tests that needs nothing beyond the fixture, and instantiates it.
#define SPIRE_CONFORMANCE_SUITE(Suite)                              \
  class Suite : public ::spire::rt::conformance::Conformance {};   \
  SPIRE_CONFORMANCE_INSTANTIATE(Suite)
