"""Writes a safetensors file holding LeNet parameters (copied from a safetensors file) plus one test batch:
x [N,1,28,28] f32 (pixels scaled to [-1, 1], as the trainer feeds them by default) and y [N] i64, from the Fashion-MNIST IDX files.
Pure Python (no numpy), so it runs on any machine:
    make_batch.py WEIGHTS.safetensors DATA_DIR N OUT.safetensors"""
import gzip, json, struct, sys

MEAN, STD = 0.5, 0.5

def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], data[b:e])
    return out

def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

weights, data_dir, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
tensors = read_safetensors(weights)
images = gzip.open(f"{data_dir}/t10k-images-idx3-ubyte.gz").read()[16:16 + n * 784]
labels = gzip.open(f"{data_dir}/t10k-labels-idx1-ubyte.gz").read()[8:8 + n]
x = struct.pack(f"<{n * 784}f", *[(p / 255.0 - MEAN) / STD for p in images])
y = struct.pack(f"<{n}q", *labels)
tensors["x"] = ("F32", [n, 1, 28, 28], x)
tensors["y"] = ("I64", [n], y)
write_safetensors(out, tensors)
