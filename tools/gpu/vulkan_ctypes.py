"""What the Vulkan query scripts here share (vulkan_coopmat_query.py, vulkan_memory_types.py): libvulkan.so.1 through
plain ctypes (no headers), an instance, its physical devices and their names."""
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
