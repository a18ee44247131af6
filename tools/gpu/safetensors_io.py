"""safetensors read and written with numpy only (no safetensors package on either machine): an 8-byte
little-endian header length, a JSON header, then the packed little-endian data. numpy has no bfloat16: a BF16
tensor is a Bf16Bits (its uint16 bit patterns) both ways."""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


class Bf16Bits:
    """A bfloat16 tensor as the uint16 array of its bit patterns."""

    def __init__(self, bits):
        self.bits = np.asarray(bits, dtype=np.uint16)

    def to_float32(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        if h["dtype"] == "BF16":
            out[name] = Bf16Bits(np.frombuffer(data[a:b], dtype=np.uint16).reshape(h["shape"]))
        else:
            out[name] = np.frombuffer(data[a:b], dtype=_DTYPES[h["dtype"]]).reshape(h["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        dtype = "BF16" if isinstance(a, Bf16Bits) else None
        a = np.ascontiguousarray(a.bits if dtype else a)
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype or _NAMES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
