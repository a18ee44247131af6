"""PyTorch eager baseline for `spire train lenet` on the same GPU: the seed article's LeNet, the same recipe
(5 epochs, batch 64, SGD lr 0.05 momentum 0.9, pixels scaled to [-1, 1]), the data already on the GPU and
shuffled with torch.randperm (so the timing is the training steps, like spire's). Prints seconds per epoch
(CUDA-synchronized wall time) and test accuracy after each epoch.
    torch_lenet_train.py DATA_DIR [SEED]"""
import gzip, sys, time
import torch
from torch import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_lenet_reference import LeNet

def idx(path, offset):
    return torch.frombuffer(bytearray(gzip.open(path).read()[offset:]), dtype=torch.uint8)

data, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
dev = "cuda"
def images(split):
    return ((idx(f"{data}/{split}-images-idx3-ubyte.gz", 16).float() / 255 - 0.5) / 0.5).reshape(-1, 1, 28, 28).to(dev)
xtr, ytr = images("train"), idx(f"{data}/train-labels-idx1-ubyte.gz", 8).long().to(dev)
xte, yte = images("t10k"), idx(f"{data}/t10k-labels-idx1-ubyte.gz", 8).long().to(dev)
torch.manual_seed(seed)
model = LeNet().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(1, 6):
    torch.cuda.synchronize(); t = time.perf_counter()
    perm = torch.randperm(len(xtr), device=dev)
    for b in range(0, len(xtr) - 63, 64):
        i = perm[b:b + 64]
        loss = nn.functional.cross_entropy(model(xtr[i]), ytr[i])
        opt.zero_grad(); loss.backward(); opt.step()
    torch.cuda.synchronize(); s = time.perf_counter() - t
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print(f"torch epoch {epoch}: {s:.2f} s, test accuracy {100 * acc:.2f}%")
