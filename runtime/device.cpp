#include "runtime/device.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "runtime/backend_registry.h"
#include "runtime/startup_profile.h"
#include "runtime/device_ids.h"

namespace spire::rt {

std::string_view backend_name(Backend b) { return b == Backend::Vulkan ? "vulkan" : "cuda"; }

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::DiscreteGpu: return "discrete GPU";
    case DeviceType::IntegratedGpu: return "integrated GPU";
    case DeviceType::VirtualGpu: return "virtual GPU";
    case DeviceType::Cpu: return "CPU";
    case DeviceType::Other: return "other";
  }
  return "?";
}

std::array<uint32_t, 3> fold_grid(uint64_t groups, const std::array<uint32_t, 3>& max_count) {
  if (groups == 0) return {0, 0, 0};
  uint64_t mx = max_count[0], my = max_count[1], mz = max_count[2];
  if (groups <= mx) return {uint32_t(groups), 1, 1};
  // Two dimensions: x full width, y = ceil(groups / x). Keep x as large as allowed so few groups idle.
  uint64_t y = (groups + mx - 1) / mx;
  if (y <= my) {
    // Shrink x to the smallest width that still fits in y rows, to launch as few extra groups as possible.
    uint64_t x = (groups + y - 1) / y;
    return {uint32_t(x), uint32_t(y), 1};
  }
  uint64_t plane = mx * my;
  uint64_t z = (groups + plane - 1) / plane;
  if (z > mz)
    throw Error(fmt::format("grid of {} workgroups exceeds the device limit of {} x {} x {}", groups, mx, my, mz));
  uint64_t yy = (groups + mx * z - 1) / (mx * z);
  return {uint32_t(mx), uint32_t(yy), uint32_t(z)};
}

ScalarArgs& ScalarArgs::push(const void* p, size_t n) {
  size_t at = (bytes_.size() + n - 1) / n * n;  // same packing as KernelInterface::scalar_offsets()
  bytes_.resize(at + n);
  std::memcpy(bytes_.data() + at, p, n);
  ++count_;
  return *this;
}

void Device::dispatch_now(const Kernel& k, std::span<const BufferView> buffers, const ScalarArgs& scalars, Grid grid) {
  auto s = record();
  s->dispatch(k, buffers, scalars, grid);
  run(*s);
}

void Device::copy_from_address(Buffer&, uint64_t, uint64_t, uint64_t) {
  throw InvalidUse(fmt::format("{}: copy_from_address: {} devices have no device addresses shared with other "
                               "libraries; pass the data through the host",
                               info().id, backend_name(info().backend)));
}

void Device::copy_to_address(const Buffer&, uint64_t, uint64_t, uint64_t) {
  throw InvalidUse(fmt::format("{}: copy_to_address: {} devices have no device addresses shared with other "
                               "libraries; pass the data through the host",
                               info().id, backend_name(info().backend)));
}

void Device::wait_for_stream(uint64_t) {
  throw InvalidUse(fmt::format("{}: wait_for_stream: {} devices have no queue shared with other libraries; wait for "
                               "their work on the host",
                               info().id, backend_name(info().backend)));
}

void Device::signal_stream(uint64_t) {
  throw InvalidUse(fmt::format("{}: signal_stream: {} devices have no queue shared with other libraries; wait for "
                               "spire's work on the host",
                               info().id, backend_name(info().backend)));
}

Features apply_feature_mask(Features available) {
  const char* env = std::getenv("SPIRE_MASK_FEATURES");
  if (!env || !*env) return available;
  std::string_view list = env;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string_view name = list.substr(start, comma - start);
    start = comma + 1;
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty()) continue;
    bool known = false;
    for (uint32_t bit = 1; bit <= uint32_t(kLastFeature); bit <<= 1) {
      if (feature_name(Feature(bit)) == name) {
        available.bits &= ~bit;
        known = true;
      }
    }
    if (!known)
      std::fprintf(stderr, "spire: SPIRE_MASK_FEATURES names an unknown feature '%.*s' (ignored)\n", int(name.size()),
                   name.data());
  }
  return available;
}

uint64_t apply_allocation_cap(uint64_t driver) {
  const char* env = std::getenv("SPIRE_MAX_ALLOCATION_BYTES");
  if (!env || !*env) return driver;
  char* end = nullptr;
  const unsigned long long cap = std::strtoull(env, &end, 10);
  if (*end != '\0' || cap == 0) {
    std::fprintf(stderr, "spire: SPIRE_MAX_ALLOCATION_BYTES='%s' is not a positive byte count (ignored)\n", env);
    return driver;
  }
  return driver ? std::min<uint64_t>(driver, cap) : cap;
}

std::string missing_feature_message(const KernelInterface& k, const DeviceInfo& d) {
  return fmt::format("kernel '{}' needs {} which device {} ({}) does not support", k.name,
                     features_to_string(k.features.missing_from(d.features)), d.id, d.name);
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> all = vulkan::list_devices();
  for (auto& d : cuda::list_devices()) all.push_back(std::move(d));
  return all;
}

namespace {

int rank(const DeviceInfo& d) {
  int r = 0;
  switch (d.type) {
    case DeviceType::DiscreteGpu: r = 40; break;
    case DeviceType::IntegratedGpu: r = 30; break;
    case DeviceType::VirtualGpu: r = 20; break;
    case DeviceType::Other: r = 10; break;
    case DeviceType::Cpu: r = 0; break;
  }
  if (d.backend == Backend::Cuda) r += 1;  // on the same NVIDIA GPU prefer the native driver
  return r;
}

std::string names_of(const std::vector<DeviceInfo>& ds) {
  std::string s;
  for (const auto& d : ds) s += (s.empty() ? "" : ", ") + d.id;
  return s.empty() ? "none" : s;
}

}  // namespace

namespace {

// The devices of the backends asked for, each backend's start (loader, instance, driver) timed for the start-up
// profile. Opening a named device starts only its own backend: on a GPU machine cuInit alone costs a tenth of a
// second, wasted when the name is vulkan:N (and a Vulkan instance wasted for cuda:N).
std::vector<DeviceInfo> listed_devices(bool vulkan, bool cuda) {
  std::vector<DeviceInfo> all;
  if (vulkan) {
    startup::PhaseTimer t("Vulkan: loader, instance, devices listed");
    all = vulkan::list_devices();
    t.detail(fmt::format("{} device{}", all.size(), all.size() == 1 ? "" : "s"));
  }
  if (cuda) {
    startup::PhaseTimer t("CUDA: driver loaded, cuInit, devices listed");
    const size_t before = all.size();
    for (auto& d : cuda::list_devices()) all.push_back(std::move(d));
    t.detail(fmt::format("{} device{}", all.size() - before, all.size() - before == 1 ? "" : "s"));
  }
  return all;
}

std::unique_ptr<Device> opened(const DeviceInfo& d) {
  startup::PhaseTimer t(fmt::format("device opened ({})", d.id));
  auto dev = d.backend == Backend::Vulkan ? vulkan::open(d.index) : cuda::open(d.index);
  t.detail(d.backend == Backend::Vulkan ? "vkCreateDevice, pipeline cache file read" : "CUDA primary context");
  return dev;
}

}  // namespace

std::unique_ptr<Device> open_device(const std::string& name) {
  if (name.empty() || name == "default") {
    std::vector<DeviceInfo> ds = listed_devices(true, true);
    if (ds.empty())
      throw Error("no compute device found: no Vulkan device (install mesa-vulkan-drivers for lavapipe, the CPU "
                  "device) and no CUDA driver");
    auto best = std::max_element(ds.begin(), ds.end(), [](const auto& a, const auto& b) { return rank(a) < rank(b); });
    return opened(*best);
  }
  auto colon = name.find(':');
  std::string backend = name.substr(0, colon);
  int index = -1;
  if (colon != std::string::npos) {
    const char* b = name.data() + colon + 1;
    const char* e = name.data() + name.size();
    auto [p, ec] = std::from_chars(b, e, index);
    if (ec != std::errc() || p != e || b == e) index = -1;
  }
  if ((backend != "vulkan" && backend != "cuda") || index < 0)
    throw Error(fmt::format("'{}' is not a device name: use vulkan:N or cuda:N (present: {})", name,
                            names_of(listed_devices(true, true))));
  const std::vector<DeviceInfo> ds = listed_devices(backend == "vulkan", backend == "cuda");
  for (const auto& d : ds)
    if (d.id == name) return opened(d);
  throw Error(fmt::format("no device named {} (present: {})", name, names_of(listed_devices(true, true))));
}

std::vector<std::string> device_ids(const std::string& spec) {
  const std::vector<DeviceInfo> present = list_devices();
  std::vector<std::string> ids;
  if (spec == "all") {
    for (const auto& d : present) ids.push_back(d.id);
    if (ids.empty()) throw Error("no compute device found");
    return ids;
  }
  std::istringstream list(spec);
  for (std::string id; std::getline(list, id, ',');) {
    if (std::none_of(present.begin(), present.end(), [&](const DeviceInfo& d) { return d.id == id; }))
      throw Error(fmt::format("unknown device '{}' (devices present: {})", id, names_of(present)));
    ids.push_back(id);
  }
  if (ids.empty()) throw Error(fmt::format("no device named (devices present: {})", names_of(present)));
  return ids;
}

}  // namespace spire::rt

namespace spire::rt {

std::string_view binary_format_name(BinaryFormat f) { return f == BinaryFormat::Ptx ? "PTX" : "SPIR-V"; }

}  // namespace spire::rt
