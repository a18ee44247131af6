"""Lists what the Vulkan devices here offer for tensor-core matrices (issue 10: bf16 on vulkan:0): the device
extensions about cooperative matrices, bfloat16 and float16, every VkCooperativeMatrixPropertiesKHR entry
(M x N x K, component types of A, B, C and the result, scope), and VK_NV_cooperative_matrix2's features, properties
and flexible-dimension entries (granularities, scope, workgroup invocations). Plain ctypes against libvulkan.so.1, so it needs no
headers; run it on the GPU machine after `source tools/gpu/env.sh`."""
import ctypes as C

from vulkan_ctypes import DevProps, instance_and_devices, properties, vk


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

inst, devs = instance_and_devices(b"coopmat_query")
coop_fn = vk.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
get_coop = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint32), C.c_void_p)(coop_fn) if coop_fn else None
flex_fn = vk.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV")
get_flex = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint32), C.c_void_p)(flex_fn) if flex_fn else None


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
