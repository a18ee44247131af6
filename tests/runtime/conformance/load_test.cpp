// Device::load: binaries from backends::compile_kernel are loaded once per device and refused by name when
// they are of the other format, need a feature the device lacks, or exceed its limits. Refusals are checked on
// load itself: each binary is compiled for a target that accepts it, so the compiler's own checks do not
// answer first.
#include "backends/compile_kernel.h"
#include "backends/kernel_interface.h"
#include "ir/kernel/builder.h"
#include "tests/runtime/conformance/backend_probe.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"
#include "tests/runtime/conformance/kernels.h"

namespace spire::rt::conformance {
namespace {

using namespace spire::kir;

SPIRE_CONFORMANCE_SUITE(LoadTest);

// A target of the other backend with this device's limits: its binaries are of the wrong format here.
DeviceInfo other_backend(DeviceInfo d) {
  d.id += "-as-other-backend";
  if (d.backend == Backend::Vulkan) {
    d.backend = Backend::Cuda;
    d.compute_capability = 75;
  } else {
    d.backend = Backend::Vulkan;
    d.compute_capability = 0;
  }
  return d;
}

// Runs a vector_add kernel on a few elements and checks the result.
void expect_adds(Device& d, const Kernel& k) {
  const uint32_t n = 300;
  auto xs = random_floats(n, 21), ys = random_floats(n, 22);
  auto x = upload_vector(d, xs), y = upload_vector(d, ys);
  auto z = d.alloc(n * 4);
  d.fill(*z, kNaNBits);
  BufferView views[] = {BufferView(x), BufferView(y), BufferView(z)};
  d.dispatch_now(k, views, ScalarArgs().u32(n), Grid::threads(n, k.interface().workgroup_size[0]));
  auto zs = download_vector<float>(d, *z, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(zs[i], xs[i] + ys[i]) << i;
}

TEST_P(LoadTest, TheSameBinaryTwiceReusesTheLoadedProgram) {
  const KernelBinary bin = backends::compile_kernel(vector_add(256), info());
  ASSERT_EQ(bin.format, dev().binary_format());
  auto a = dev().load(bin);
  auto b = dev().load(bin);
  EXPECT_EQ(loaded_program(*a), loaded_program(*b));
  auto other = dev().load(backends::compile_kernel(vector_add(64), info()));
  EXPECT_NE(loaded_program(*other), loaded_program(*a)) << "a different binary shared a program";
  expect_adds(dev(), *b);
  expect_adds(dev(), *other);
}

TEST_P(LoadTest, TheLoadedKernelKeepsItsInterface) {
  std::shared_ptr<Kernel> k;
  {
    kir::Kernel ir = vector_add(128);
    k = dev().load(backends::compile_kernel(ir, info()));
  }
  // The runtime holds a kernel's interface (runtime/kernel_interface.h), never its IR.
  EXPECT_EQ(k->interface().name, "vector_add");
  EXPECT_EQ(k->interface().workgroup_size, (std::array<uint32_t, 3>{128, 1, 1}));
  ASSERT_EQ(k->interface().buffers.size(), 3u);
  EXPECT_EQ(k->interface().buffers[2].name, "z");
  EXPECT_EQ(k->interface().buffers[2].access, Access::Write);
  ASSERT_EQ(k->interface().scalars.size(), 1u);
  EXPECT_EQ(k->interface().scalars[0].type, DType::U32);
  expect_adds(dev(), *k);
}

TEST_P(LoadTest, ABinaryOfTheOtherFormatIsRefusedNamingTheDevice) {
  const KernelBinary foreign = backends::compile_kernel(vector_add(64), other_backend(info()));
  ASSERT_NE(foreign.format, dev().binary_format());
  try {
    dev().load(foreign);
    FAIL() << "loaded a " << binary_format_name(foreign.format) << " binary";
  } catch (const MissingFeature& e) {
    FAIL() << "a format mismatch is not a missing feature: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), info().id)) << e.what();
    EXPECT_TRUE(contains(e.what(), "vector_add")) << e.what();
  }
  // A binary of this device's own kernel, labelled with the other format, is refused as well.
  KernelBinary relabelled = backends::compile_kernel(vector_add(64), info());
  relabelled.format = foreign.format;
  std::string msg = error_of([&] { dev().load(relabelled); });
  EXPECT_TRUE(contains(msg, info().id)) << msg;
}

TEST_P(LoadTest, ABinaryNeedingAMaskedFeatureIsMissingFeature) {
  KernelBuilder kb("needs_float64", 64);
  kb.require(Feature::Float64);
  auto y = kb.buffer("y", Type::F64, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(y[i]) * 2.0; });
  const kir::Kernel k = kb.finish();
  DeviceInfo with_f64 = info();
  with_f64.features |= Feature::Float64;  // so this compiles even for a device that truly lacks float64
  const KernelBinary bin = backends::compile_kernel(k, with_f64);

  auto masked = open_masked("float64");
  ASSERT_FALSE(masked->info().features.has(Feature::Float64));
  try {
    masked->load(bin);
    FAIL() << "loaded a float64 kernel on a device without float64";
  } catch (const MissingFeature& e) {
    EXPECT_TRUE(contains(e.what(), "needs_float64")) << e.what();
    EXPECT_TRUE(contains(e.what(), "float64")) << e.what();
    EXPECT_TRUE(contains(e.what(), info().id)) << e.what();
  }
  // The compiler refuses the masked target the same way, before any binary exists.
  EXPECT_THROW(backends::compile_kernel(k, masked->info()), MissingFeature);
  if (info().features.has(Feature::Float64)) {
    EXPECT_NO_THROW(dev().load(bin)) << "the unmasked device takes it";
  }
}

// A binary of kernel `k`, which is beyond a limit of the device, compiled for a target whose limits allow it.
// Where the backend's compiler itself refuses `k` (PTX: no CUDA device runs more than 1024 invocations), the
// binary is `small`'s module under `k`'s interface, as a damaged bundle could carry: the runtime checks limits
// against the interface, so it must refuse that too.
KernelBinary binary_beyond_limits(const kir::Kernel& k, const kir::Kernel& small, const DeviceInfo& target) {
  try {
    return backends::compile_kernel(k, target);
  } catch (const Error&) {
    KernelBinary bin = backends::compile_kernel(small, target);
    bin.interface = backends::kernel_interface(k, target.backend == Backend::Cuda ? BinaryFormat::Ptx : BinaryFormat::Spirv);
    return bin;
  }
}

void expect_beyond_limits(Device& d, const kir::Kernel& k, const kir::Kernel& small, const DeviceInfo& target) {
  SCOPED_TRACE(k.name);
  const KernelBinary bin = binary_beyond_limits(k, small, target);
  try {
    d.load(bin);
    FAIL() << "loaded kernel '" << k.name << "' beyond the device's limits";
  } catch (const MissingFeature& e) {
    FAIL() << "a limit is not a missing feature: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), k.name)) << e.what();
    EXPECT_TRUE(contains(e.what(), d.info().id)) << e.what();
  }
}

TEST_P(LoadTest, KernelsBeyondTheDeviceLimitsAreErrors) {
  const DeviceInfo& d = info();
  DeviceInfo roomy = d;
  roomy.max_workgroup_size[0] *= 4;
  roomy.max_workgroup_invocations *= 4;
  roomy.shared_memory_bytes *= 4;
  auto wide = [](const std::string& name, uint32_t invocations) {
    KernelBuilder kb(name, {invocations, 1, 1});
    auto o = kb.buffer("o", Type::U32, Access::Write);
    o[kb.global_id()] = kb.local_id();
    return kb.finish();
  };
  expect_beyond_limits(dev(), wide("too_many_invocations", d.max_workgroup_invocations * 2),
                       wide("too_many_invocations", 64), roomy);
  auto tiled = [](const std::string& name, uint32_t floats) {
    KernelBuilder kb(name, 64);
    auto o = kb.buffer("o", Type::F32, Access::Write);
    auto tile = kb.shared("tile", Type::F32, floats);
    tile[kb.local_id()] = 1.0f;
    kb.barrier();
    o[kb.global_id()] = tile[kb.local_id()];
    return kb.finish();
  };
  expect_beyond_limits(dev(), tiled("too_much_workgroup_memory", d.shared_memory_bytes / 4 + 1),
                       tiled("too_much_workgroup_memory", 64), roomy);
}

}  // namespace
}  // namespace spire::rt::conformance
