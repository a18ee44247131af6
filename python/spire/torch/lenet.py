"""The seed's LeNet and the Fashion-MNIST it trains on, as the Python side's one definition of both (the CLI's is
`spire train lenet`): padding 2 on both convolutions, Linear(784 -> 120); the IDX files of Debian's
dataset-fashion-mnist with pixels scaled to [-1, 1], as the seed feeds them."""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class LeNet(nn.Module):
    """The seed article's LeNet, with its state_dict names."""

    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 7 * 7, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.fc(self.convnet(x))


def fashion_mnist_present(folder=FASHION_MNIST):
    return os.path.exists(os.path.join(folder, "train-images-idx3-ubyte.gz"))


def fashion_mnist(split, limit=None, folder=FASHION_MNIST):
    """(images float32 [N,1,28,28] in [-1, 1], labels int64 [N]) of 'train' or 't10k' (the first `limit` only).
    FileNotFoundError names the missing file and the package that installs it."""
    def read(name, offset):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing (Debian's dataset-fashion-mnist installs it)")
        with gzip.open(path, "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
    images = read(f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)[:limit]
    labels = read(f"{split}-labels-idx1-ubyte.gz", 8)[:limit]
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - 0.5) / 0.5
    return x, torch.from_numpy(labels.astype(np.int64))
