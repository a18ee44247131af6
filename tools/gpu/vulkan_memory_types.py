"""Lists each Vulkan device's memory heaps and types (VkPhysicalDeviceMemoryProperties): which types are device-local
and host-visible at once (resizable BAR on a discrete GPU), which a streamed input can be written into directly
(lowering/streamed_values.h). Plain ctypes against libvulkan.so.1, no headers; on the GPU machine after
`source tools/gpu/env.sh`."""
import ctypes as C

vk = C.CDLL("libvulkan.so.1")


class AppInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("pApplicationName", C.c_char_p), ("appVer", C.c_uint32),
                ("pEngineName", C.c_char_p), ("engVer", C.c_uint32), ("apiVersion", C.c_uint32)]


class InstanceInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("flags", C.c_uint32), ("pApp", C.POINTER(AppInfo)),
                ("layers", C.c_uint32), ("ppLayers", C.c_void_p), ("exts", C.c_uint32), ("ppExts", C.c_void_p)]


class DevProps(C.Structure):  # VkPhysicalDeviceProperties up to deviceName; the rest is left as bytes
    _fields_ = [("api", C.c_uint32), ("driver", C.c_uint32), ("vendor", C.c_uint32), ("device", C.c_uint32),
                ("type", C.c_int), ("name", C.c_char * 256), ("rest", C.c_byte * 4096)]


class MemoryType(C.Structure):
    _fields_ = [("flags", C.c_uint32), ("heap", C.c_uint32)]


class MemoryHeap(C.Structure):
    _fields_ = [("size", C.c_uint64), ("flags", C.c_uint32)]


class MemoryProperties(C.Structure):
    _fields_ = [("type_count", C.c_uint32), ("types", MemoryType * 32), ("heap_count", C.c_uint32),
                ("heaps", MemoryHeap * 16)]


FLAGS = {1: "DEVICE_LOCAL", 2: "HOST_VISIBLE", 4: "HOST_COHERENT", 8: "HOST_CACHED", 16: "LAZILY_ALLOCATED",
         32: "PROTECTED"}

app = AppInfo(0, None, b"memory_types", 1, b"spire", 1, (1 << 22) | (3 << 12))
info = InstanceInfo(1, None, 0, C.pointer(app), 0, None, 0, None)
inst = C.c_void_p()
assert vk.vkCreateInstance(C.byref(info), None, C.byref(inst)) == 0, "vkCreateInstance failed"
n = C.c_uint32()
vk.vkEnumeratePhysicalDevices(inst, C.byref(n), None)
devs = (C.c_void_p * n.value)()
vk.vkEnumeratePhysicalDevices(inst, C.byref(n), devs)
for d in devs:
    p = DevProps()
    vk.vkGetPhysicalDeviceProperties(C.c_void_p(d), C.byref(p))
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
