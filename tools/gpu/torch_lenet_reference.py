"""PyTorch's float64 LeNet (the seed article's model) as the reference for `spire graph eval`: writes
random parameters and a batch (x, y) under PyTorch's state_dict names, and the logits, loss and every
parameter gradient PyTorch computes, then compares spire's outputs with them.
    torch_lenet_reference.py make IN.safetensors REF.safetensors [--batch 8] [--seed 0]
    torch_lenet_reference.py compare REF.safetensors OUT.safetensors"""
import sys
import torch
from torch import nn
from safetensors_io import read_safetensors, write_safetensors

def save_file(tensors, path):
    write_safetensors(path, {k: v.detach().cpu().numpy() for k, v in tensors.items()})

def load_file(path):
    return {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(path).items()}

class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                     nn.Conv2d(6, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(16 * 7 * 7, 120), nn.ReLU(),
                                nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    def forward(self, x):
        return self.fc(self.convnet(x))

def make(inp, ref, batch=8, seed=0):
    torch.manual_seed(seed)
    model = LeNet().double()
    x = torch.randn(batch, 1, 28, 28, dtype=torch.float64)
    y = torch.randint(0, 10, (batch,), dtype=torch.int64)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    tensors.update(x=x, y=y)
    save_file(tensors, inp)
    out = {"logits": logits.detach(), "loss": loss.detach().reshape(())}
    for k, p in model.named_parameters():
        out["grad." + k] = p.grad.detach().contiguous()
    save_file(out, ref)

def compare(ref, got):
    r, g = load_file(ref), load_file(got)
    worst = 0.0
    for k, v in r.items():
        if k not in g:
            print(f"MISSING {k}"); worst = float("inf"); continue
        a = g[k].double().reshape(v.shape)
        err = ((a - v).abs().max() / v.abs().max().clamp_min(1e-300)).item()
        worst = max(worst, err)
        print(f"{k:<22} max rel err {err:.3e}")
    print(f"worst relative error {worst:.3e} ({'PASS' if worst <= 1e-9 else 'FAIL'} at 1e-9)")

if __name__ != "__main__":
    pass
elif sys.argv[1] == "make":
    args = sys.argv[2:]
    batch = int(args[args.index("--batch") + 1]) if "--batch" in args else 8
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
    make(args[0], args[1], batch, seed)
else:
    compare(sys.argv[2], sys.argv[3])
