"""Lists what the Vulkan devices here offer for tensor-core matrices (issue 10: bf16 on vulkan:0): the device
extensions about cooperative matrices, bfloat16 and float16, and every VkCooperativeMatrixPropertiesKHR entry
(M x N x K, component types of A, B, C and the result, scope). Plain ctypes against libvulkan.so.1, so it needs no
headers; run it on the GPU machine after `source tools/gpu/env.sh`."""
import ctypes as C

vk = C.CDLL("libvulkan.so.1")
vk.vkGetInstanceProcAddr.restype = C.c_void_p
vk.vkGetInstanceProcAddr.argtypes = [C.c_void_p, C.c_char_p]


class AppInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("pApplicationName", C.c_char_p), ("appVer", C.c_uint32),
                ("pEngineName", C.c_char_p), ("engVer", C.c_uint32), ("apiVersion", C.c_uint32)]


class InstanceInfo(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("flags", C.c_uint32), ("pApp", C.POINTER(AppInfo)),
                ("layers", C.c_uint32), ("ppLayers", C.c_void_p), ("exts", C.c_uint32), ("ppExts", C.c_void_p)]


class ExtProps(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("version", C.c_uint32)]


class DevProps(C.Structure):  # VkPhysicalDeviceProperties up to deviceName; the rest is left as bytes
    _fields_ = [("api", C.c_uint32), ("driver", C.c_uint32), ("vendor", C.c_uint32), ("device", C.c_uint32),
                ("type", C.c_int), ("name", C.c_char * 256), ("rest", C.c_byte * 4096)]


class CoopProps(C.Structure):
    _fields_ = [("sType", C.c_int), ("pNext", C.c_void_p), ("M", C.c_uint32), ("N", C.c_uint32), ("K", C.c_uint32),
                ("A", C.c_int), ("B", C.c_int), ("Cc", C.c_int), ("R", C.c_int), ("sat", C.c_uint32), ("scope", C.c_int)]


TYPES = {0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64", 7: "u8", 8: "u16", 9: "u32", 10: "u64",
         1000141000: "bf16", 1000491002: "e4m3", 1000491003: "e5m2"}

app = AppInfo(0, None, b"coopmat_query", 1, b"spire", 1, (1 << 22) | (3 << 12))
info = InstanceInfo(1, None, 0, C.pointer(app), 0, None, 0, None)
inst = C.c_void_p()
r = vk.vkCreateInstance(C.byref(info), None, C.byref(inst))
assert r == 0, f"vkCreateInstance: {r}"
n = C.c_uint32()
vk.vkEnumeratePhysicalDevices(inst, C.byref(n), None)
devs = (C.c_void_p * n.value)()
vk.vkEnumeratePhysicalDevices(inst, C.byref(n), devs)
coop_fn = vk.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
get_coop = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint32), C.c_void_p)(coop_fn) if coop_fn else None
for d in devs:
    p = DevProps()
    vk.vkGetPhysicalDeviceProperties(C.c_void_p(d), C.byref(p))
    print(f"== {p.name.decode()} (driver {p.driver:#x}, api {p.api >> 22}.{(p.api >> 12) & 0x3ff}.{p.api & 0xfff})")
    m = C.c_uint32()
    vk.vkEnumerateDeviceExtensionProperties(C.c_void_p(d), None, C.byref(m), None)
    exts = (ExtProps * m.value)()
    vk.vkEnumerateDeviceExtensionProperties(C.c_void_p(d), None, C.byref(m), exts)
    for e in exts:
        name = e.name.decode()
        if any(k in name for k in ("cooperative", "bfloat16", "float16", "16bit", "subgroup_size", "shader_integer_dot")):
            print(f"  {name} v{e.version}")
    if get_coop:
        k = C.c_uint32()
        if get_coop(C.c_void_p(d), C.byref(k), None) == 0 and k.value:
            props = (CoopProps * k.value)()
            for q in props:
                q.sType = 1000506001
            get_coop(C.c_void_p(d), C.byref(k), props)
            for q in props:
                print(f"  coopmat {q.M}x{q.N}x{q.K} A={TYPES.get(q.A, q.A)} B={TYPES.get(q.B, q.B)} "
                      f"C={TYPES.get(q.Cc, q.Cc)} R={TYPES.get(q.R, q.R)} scope={q.scope}")
