"""Lists each Vulkan device's memory heaps and types (VkPhysicalDeviceMemoryProperties): which types are device-local
and host-visible at once (resizable BAR on a discrete GPU), which a streamed input can be written into directly
(lowering/streamed_values.h). Plain ctypes against libvulkan.so.1, no headers; on the GPU machine after
`source tools/gpu/env.sh`."""
import ctypes as C

from vulkan_ctypes import instance_and_devices, properties, vk


class MemoryType(C.Structure):
    _fields_ = [("flags", C.c_uint32), ("heap", C.c_uint32)]


class MemoryHeap(C.Structure):
    _fields_ = [("size", C.c_uint64), ("flags", C.c_uint32)]


class MemoryProperties(C.Structure):
    _fields_ = [("type_count", C.c_uint32), ("types", MemoryType * 32), ("heap_count", C.c_uint32),
                ("heaps", MemoryHeap * 16)]


FLAGS = {1: "DEVICE_LOCAL", 2: "HOST_VISIBLE", 4: "HOST_COHERENT", 8: "HOST_CACHED", 16: "LAZILY_ALLOCATED",
         32: "PROTECTED"}

inst, devs = instance_and_devices(b"memory_types")
for d in devs:
    p = properties(d)
    m = MemoryProperties()
    vk.vkGetPhysicalDeviceMemoryProperties(C.c_void_p(d), C.byref(m))
    print(f"== {p.name.decode()}")
    for h in range(m.heap_count):
        heap = m.heaps[h]
        print(f"  heap {h}: {heap.size / 2**30:.2f} GiB{' DEVICE_LOCAL' if heap.flags & 1 else ''}")
    for t in range(m.type_count):
        ty = m.types[t]
        names = "|".join(v for k, v in FLAGS.items() if ty.flags & k) or "(none)"
        print(f"  type {t}: heap {ty.heap} {names}")
