// spire.devices() and opening a device by name. A name that is not present is a ValueError listing the devices
// that are (the runtime's own error would be a RuntimeError, but the caller passed a bad value).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "python/src/device_handle.h"
#include "runtime/cuda_peer.h"
#include "runtime/device.h"

namespace py = pybind11;

namespace spire::python {
namespace {

std::string present_names(const std::vector<rt::DeviceInfo>& devices) {
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.id;
  return names.empty() ? "none (install mesa-vulkan-drivers for lavapipe, the CPU Vulkan device)" : names;
}

// The same lines `spire devices` prints for one device.
std::string describe(const rt::DeviceInfo& d) {
  return fmt::format(
      "{}  {}\n    vendor {}, driver {}, type {}\n    subgroup {}, shared memory {} KiB, workgroup <= {} invocations\n"
      "    buffer binding <= {} MiB, memory {} MiB\n    features: {}",
      d.id, d.name, d.vendor, d.driver, rt::device_type_name(d.type), d.subgroup_size, d.shared_memory_bytes / 1024,
      d.max_workgroup_invocations, d.max_buffer_bytes >> 20, d.memory_bytes >> 20, features_to_string(d.features));
}

}  // namespace

std::shared_ptr<rt::Device> open_device_checked(const std::string& name) {
  if (!name.empty() && name != "default") {
    const auto devices = rt::list_devices();
    bool found = false;
    for (const auto& d : devices) found = found || d.id == name;
    if (!found)
      throw py::value_error(fmt::format("spire has no device '{}'; devices present: {}", name, present_names(devices)));
  }
  return std::shared_ptr<rt::Device>(rt::open_device(name));
}

void bind_devices(py::module_& m) {
  py::class_<rt::DeviceInfo>(m, "DeviceInfo", "A compute device as `spire devices` lists it")
      .def_readonly("id", &rt::DeviceInfo::id)
      .def_readonly("name", &rt::DeviceInfo::name)
      .def_readonly("vendor", &rt::DeviceInfo::vendor)
      .def_readonly("driver", &rt::DeviceInfo::driver)
      .def_property_readonly("backend", [](const rt::DeviceInfo& d) { return std::string(rt::backend_name(d.backend)); })
      .def_property_readonly("type", [](const rt::DeviceInfo& d) { return std::string(rt::device_type_name(d.type)); })
      .def_readonly("subgroup_size", &rt::DeviceInfo::subgroup_size)
      .def_readonly("shared_memory_bytes", &rt::DeviceInfo::shared_memory_bytes)
      .def_readonly("max_buffer_bytes", &rt::DeviceInfo::max_buffer_bytes)
      .def_readonly("memory_bytes", &rt::DeviceInfo::memory_bytes)
      .def_property_readonly("features", [](const rt::DeviceInfo& d) { return features_to_string(d.features); })
      .def("describe", &describe, "The lines `spire devices` prints for this device")
      .def("__repr__", [](const rt::DeviceInfo& d) { return fmt::format("<spire device {}: {}>", d.id, d.name); });

  m.def("devices", &rt::list_devices, "Every device of every backend present (vulkan:N, cuda:N), in name order");

  py::class_<rt::Device, std::shared_ptr<rt::Device>>(m, "Device", "An open device; compile() builds for it")
      .def_property_readonly("info", [](const rt::Device& d) { return d.info(); })
      .def_property_readonly("id", [](const rt::Device& d) { return d.info().id; })
      .def_property_readonly("cuda_peer", [](const rt::Device& d) { return rt::cuda_peer(d); },
                             "The CUDA ordinal (torch's cuda:N) whose memory this device reads and writes in place: a "
                             "CUDA device's own, a Vulkan device's GPU where the drivers share memory; else None")
      .def_property_readonly("cuda_ordering", [](rt::Device& d) { return rt::cuda_ordering(d); },
                             "How values exchanged with CUDA memory are ordered against CUDA's streams: the CUDA "
                             "device's own streams, a timeline semaphore both drivers share (no host wait), or the "
                             "host (and why); '' where there is no cuda_peer")
      .def("__repr__", [](const rt::Device& d) { return fmt::format("<spire.Device {}>", d.info().id); });
  m.def("open_device", &open_device_checked, py::arg("name") = "",
        "Opens a device by name ('vulkan:0', 'cuda:0'), or the best present for '' or 'default'. A name not present "
        "raises ValueError naming the devices that are.");
}

}  // namespace spire::python
