"""What the Vulkan devices here offer, read through libvulkan.so.1 with plain ctypes (no headers). Run it on the GPU
machine after `source tools/gpu/env.sh`.

  python3 tools/gpu/vulkan_query.py coopmat   tensor-core matrices: the device extensions about cooperative matrices,
                                              bfloat16 and float16, every VkCooperativeMatrixPropertiesKHR entry
                                              (M x N x K, component types of A, B, C and the result, scope), and
                                              VK_NV_cooperative_matrix2's features, properties and flexible dimensions
  python3 tools/gpu/vulkan_query.py memory    each device's memory heaps and types: which are device-local and
                                              host-visible at once (resizable BAR), which a streamed input can be
                                              written into in place (runtime/plan_executor.h)
With no argument it prints both."""
import ctypes as C
import sys

vk = C.CDLL("libvulkan.so.1")
vk.vkGetInstanceProcAddr.restype = C.c_void_p
vk.vkGetInstanceProcAddr.argtypes = [C.c_void_p, C.c_char_p]


class AppInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("pApplicationName", C.c_char_p), ("appVer", C.c_uint32),
                ("pEngineName", C.c_char_p), ("engVer", C.c_uint32), ("apiVersion", C.c_uint32)]


class InstanceInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("flags", C.c_uint32), ("pApp", C.POINTER(AppInfo)),
                ("layers", C.c_uint32), ("ppLayers", C.c_void_p), ("exts", C.c_uint32), ("ppExts", C.c_void_p)]


class DevProps(C.Structure):  # VkPhysicalDeviceProperties up to deviceName; the rest is left as bytes
    _fields_ = [("api", C.c_uint32), ("driver", C.c_uint32), ("vendor", C.c_uint32), ("device", C.c_uint32),
                ("type", C.c_int), ("name", C.c_char * 256), ("rest", C.c_byte * 4096)]


def instance_and_devices(app_name):
    """A Vulkan 1.3 instance and its physical devices (handles as ints)."""
    app = AppInfo(0, None, app_name, 1, b"spire", 1, (1 << 22) | (3 << 12))
    info = InstanceInfo(1, None, 0, C.pointer(app), 0, None, 0, None)
    inst = C.c_void_p()
    r = vk.vkCreateInstance(C.byref(info), None, C.byref(inst))
    assert r == 0, f"vkCreateInstance: {r}"
    n = C.c_uint32()
    vk.vkEnumeratePhysicalDevices(inst, C.byref(n), None)
    devs = (C.c_void_p * n.value)()
    vk.vkEnumeratePhysicalDevices(inst, C.byref(n), devs)
    return inst, list(devs)


def properties(device):
    p = DevProps()
    vk.vkGetPhysicalDeviceProperties(C.c_void_p(device), C.byref(p))
    return p


class ExtProps(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("version", C.c_uint32)]


class CoopProps(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("M", C.c_uint32), ("N", C.c_uint32), ("K", C.c_uint32),
                ("A", C.c_int), ("B", C.c_int), ("Cc", C.c_int), ("R", C.c_int), ("sat", C.c_uint32), ("scope", C.c_int)]


class FlexProps(C.Structure):  # VkCooperativeMatrixFlexibleDimensionsPropertiesNV
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("M", C.c_uint32), ("N", C.c_uint32), ("K", C.c_uint32),
                ("A", C.c_int), ("B", C.c_int), ("Cc", C.c_int), ("R", C.c_int), ("sat", C.c_uint32), ("scope", C.c_int),
                ("invocations", C.c_uint32)]


class Cm2Features(C.Structure):  # VkPhysicalDeviceCooperativeMatrix2FeaturesNV
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("workgroupScope", C.c_uint32), ("flexibleDimensions", C.c_uint32),
                ("reductions", C.c_uint32), ("conversions", C.c_uint32), ("perElementOperations", C.c_uint32),
                ("tensorAddressing", C.c_uint32), ("blockLoads", C.c_uint32)]


class Cm2Props(C.Structure):  # VkPhysicalDeviceCooperativeMatrix2PropertiesNV
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("maxWorkgroupSize", C.c_uint32), ("maxDimension", C.c_uint32),
                ("reservedSharedMemory", C.c_uint32)]


class Features2(C.Structure):  # VkPhysicalDeviceFeatures2: 55 VkBool32 after the header
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("features", C.c_uint32 * 55)]


class Properties2(C.Structure):  # VkPhysicalDeviceProperties2
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("properties", DevProps)]


TYPES = {0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64", 7: "u8", 8: "u16", 9: "u32", 10: "u64",
         1000141000: "bf16", 1000491002: "e4m3", 1000491003: "e5m2"}


class MemoryType(C.Structure):
    _fields_ = [("flags", C.c_uint32), ("heap", C.c_uint32)]


class MemoryHeap(C.Structure):
    _fields_ = [("size", C.c_uint64), ("flags", C.c_uint32)]


class MemoryProperties(C.Structure):
    _fields_ = [("type_count", C.c_uint32), ("types", MemoryType * 32), ("heap_count", C.c_uint32),
                ("heaps", MemoryHeap * 16)]


FLAGS = {1: "DEVICE_LOCAL", 2: "HOST_VISIBLE", 4: "HOST_COHERENT", 8: "HOST_CACHED", 16: "LAZILY_ALLOCATED",
         32: "PROTECTED"}


def entries(query, device, struct, stype):
    """A driver's list of `struct` entries through the two-call `query` (None: the driver has no such query)."""
    if not query:
        return []
    k = C.c_uint32()
    if query(C.c_void_p(device), C.byref(k), None) != 0 or not k.value:
        return []
    props = (struct * k.value)()
    for q in props:
        q.sType = stype
    query(C.c_void_p(device), C.byref(k), props)
    return list(props)


def coopmat():
    inst, devs = instance_and_devices(b"coopmat_query")
    coop_fn = vk.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    get_coop = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint32), C.c_void_p)(coop_fn) if coop_fn else None
    flex_fn = vk.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV")
    get_flex = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint32), C.c_void_p)(flex_fn) if flex_fn else None
    for d in devs:
        p = properties(d)
        print(f"== {p.name.decode()} (driver {p.driver:#x}, api {p.api >> 22}.{(p.api >> 12) & 0x3ff}.{p.api & 0xfff})")
        m = C.c_uint32()
        vk.vkEnumerateDeviceExtensionProperties(C.c_void_p(d), None, C.byref(m), None)
        exts = (ExtProps * m.value)()
        vk.vkEnumerateDeviceExtensionProperties(C.c_void_p(d), None, C.byref(m), exts)
        for e in exts:
            name = e.name.decode()
            if any(k in name for k in ("cooperative", "bfloat16", "float16", "16bit", "subgroup_size", "shader_integer_dot")):
                print(f"  {name} v{e.version}")
        for q in entries(get_coop, d, CoopProps, 1000506001):
            print(f"  coopmat {q.M}x{q.N}x{q.K} A={TYPES.get(q.A, q.A)} B={TYPES.get(q.B, q.B)} "
                  f"C={TYPES.get(q.Cc, q.Cc)} R={TYPES.get(q.R, q.R)} scope={q.scope}")
        if any(e.name.decode() == "VK_NV_cooperative_matrix2" for e in exts):
            f = Cm2Features(1000593000, None)
            f2 = Features2(1000059000, C.cast(C.pointer(f), C.c_void_p))
            vk.vkGetPhysicalDeviceFeatures2(C.c_void_p(d), C.byref(f2))
            print("  cooperative_matrix2 features:", {n: getattr(f, n) for n, _ in Cm2Features._fields_[2:]})
            q2 = Cm2Props(1000593002, None)
            p2 = Properties2(1000059001, C.cast(C.pointer(q2), C.c_void_p))
            vk.vkGetPhysicalDeviceProperties2(C.c_void_p(d), C.byref(p2))
            print(f"  cooperative_matrix2 properties: workgroup scope max workgroup size {q2.maxWorkgroupSize}, flexible "
                  f"dimensions max {q2.maxDimension}, reserved shared memory {q2.reservedSharedMemory}")
            for q in entries(get_flex, d, FlexProps, 1000593001):
                print(f"  flexible {q.M}x{q.N}x{q.K} A={TYPES.get(q.A, q.A)} B={TYPES.get(q.B, q.B)} "
                      f"C={TYPES.get(q.Cc, q.Cc)} R={TYPES.get(q.R, q.R)} scope={q.scope} invocations={q.invocations}")


def memory():
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


if __name__ == "__main__":
    what = sys.argv[1:] or ["coopmat", "memory"]
    for w in what:
        {"coopmat": coopmat, "memory": memory}[w]()
