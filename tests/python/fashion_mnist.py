"""Fashion-MNIST from Debian's dataset-fashion-mnist (gzipped IDX files), as the seed feeds it: pixels to [-1, 1]."""
import gzip
import os

import numpy as np
import torch

DIR = "/usr/share/datasets/fashion-mnist"


def available():
    return os.path.exists(os.path.join(DIR, "train-images-idx3-ubyte.gz"))


def _read(name, offset):
    with gzip.open(os.path.join(DIR, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(split, limit=None):
    """(images float32 [N,1,28,28] in [-1, 1], labels int64 [N]) of 'train' or 't10k'."""
    images = _read(f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    labels = _read(f"{split}-labels-idx1-ubyte.gz", 8)
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - 0.5) / 0.5
    return x, torch.from_numpy(labels.astype(np.int64))
