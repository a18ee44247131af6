# Registers per thread that the CUDA driver gives each kernel of the PTX files in a folder (e.g. a `--dump` run's
# kernels/), compiled two ways: cuModuleLoadData (the JIT that runs when spire's module disk cache is off,
# SPIRE_NO_DISK_CACHE=1) and the driver's linker, cuLinkCreate/cuLinkAddData/cuLinkComplete (what the disk cache
# stores, runtime/cuda/cuda_module_cache.h). Usage on the GPU machine: python3 tools/gpu/jit_registers.py DIR
import ctypes
import glob
import re
import sys

cu = ctypes.CDLL("libcuda.so.1")
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_JIT_INPUT_PTX = 1


def check(result, what):
    if result != 0:
        raise SystemExit(f"{what}: CUDA error {result}")


def registers(module, names):
    out = []
    for name in names:
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), module, name), "cuModuleGetFunction")
        regs = ctypes.c_int()
        check(cu.cuFuncGetAttribute(ctypes.byref(regs), CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute")
        out.append(regs.value)
    return out


def loaded(ptx, names):
    module = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(module), ptx + b"\0"), "cuModuleLoadData")
    regs = registers(module, names)
    cu.cuModuleUnload(module)
    return regs


def linked(ptx, names):
    state = ctypes.c_void_p()
    check(cu.cuLinkCreate_v2(0, None, None, ctypes.byref(state)), "cuLinkCreate")
    text = ctypes.create_string_buffer(ptx + b"\0")
    check(cu.cuLinkAddData_v2(state, CU_JIT_INPUT_PTX, text, len(ptx) + 1, b"spire.ptx", 0, None, None), "cuLinkAddData")
    cubin, size = ctypes.c_void_p(), ctypes.c_size_t()
    check(cu.cuLinkComplete(state, ctypes.byref(cubin), ctypes.byref(size)), "cuLinkComplete")
    module = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData (cubin)")
    regs = registers(module, names)
    cu.cuModuleUnload(module)
    cu.cuLinkDestroy(state)
    return regs


check(cu.cuInit(0), "cuInit")
device = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
context = ctypes.c_void_p()
check(cu.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
print("registers: loaded (JIT) / linked (module cache)  kernel")
for path in sorted(glob.glob(sys.argv[1] + "/*.ptx")):
    ptx = open(path, "rb").read()
    names = re.findall(rb"\.entry\s+(\w+)", ptx)
    for name, a, b in zip(names, loaded(ptx, names), linked(ptx, names)):
        print(f"{a:4d} / {b:4d}  {name.decode()}")
