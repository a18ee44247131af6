#!/usr/bin/env python3
"""What NVIDIA's Vulkan compiler made of spire's kernels: splits a Vulkan pipeline cache file that NVIDIA's driver
wrote (spire's disk cache, SPIRE_CACHE_DIR) into its pipelines and writes each one's machine code as NAME.code (raw
SASS, 16 bytes an instruction), to be read with `nvdisasm --binary SM90 NAME.code`.

The layout is the driver's own and undocumented; what this reads, as seen with driver 580.159.04 (2026-11-26): after
the Vulkan header, one zstd frame per pipeline; each decompresses to an "NVDANVVM" record whose header holds the words 1, the
code's size (the Binary Size VK_KHR_pipeline_executable_properties reports) and its offset, the code starting 8 bytes
past that offset, then the kernel's name as its first string. Usage: vulkan_cache_sass.py CACHE.bin OUT_DIR"""
import os
import re
import struct
import subprocess
import sys


def frames(blob):
    starts = [m.start() for m in re.finditer(re.escape(b"\x28\xb5\x2f\xfd"), blob)]
    for i, at in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(blob)
        r = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob[at:end], capture_output=True)
        if r.stdout.startswith(b"NVDANVVM"):
            yield r.stdout


def main():
    blob = open(sys.argv[1], "rb").read()
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for record in frames(blob):
        size = offset = 0
        for k in range(16, 160, 4):  # the code's entry: 1, its size, its offset
            one, n, at = struct.unpack_from("<III", record, k)
            if one == 1 and n > 0 and n % 16 == 0 and at + 8 + n <= len(record):
                size, offset = n, at
                break
        name = re.search(rb"[A-Za-z_][A-Za-z0-9_]{5,}", record[16:]).group().decode()
        code = record[offset + 8:offset + 8 + size]
        open(os.path.join(out, name + ".code"), "wb").write(code)
        print(f"{name}: {size} bytes of code, {size // 16} instructions")


main()
