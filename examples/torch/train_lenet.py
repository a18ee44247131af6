"""Trains the seed's LeNet on Fashion-MNIST with spire inside PyTorch, with the recipe of `spire train lenet` (batch 64,
SGD lr 0.05 momentum 0.9, a reshuffle each epoch, pixels scaled to [-1, 1]) plus, where torch's optimizer steps,
cosine annealing of the rate, and prints each epoch's time, mean loss and the test accuracy.

    python3 examples/torch/train_lenet.py --how backend --device cuda:0    # torch.compile(model, backend="spire")
    python3 examples/torch/train_lenet.py --how compile --device vulkan:0  # spire.torch.compile: loss.backward()
    python3 examples/torch/train_lenet.py --how step                       # spire.torch.compile_step: all in spire

--how backend needs torch >= 2 (Dynamo). With --how backend or compile the optimizer is torch.optim.SGD and the
model's tensors live on torch's CUDA device when there is one (a spire cuda:N device then exchanges them in place);
with --how step the whole step (forward, loss, backward, SGD) is one spire graph and only the batch and the loss
cross. --expect ACC exits 1 when the final test accuracy is below ACC (a fraction), so a run can be a check.
Fashion-MNIST is read from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, or --data DIR)."""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import spire.torch
from spire.torch.lenet import FASHION_MNIST, LeNet, fashion_mnist


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--how", choices=["backend", "compile", "step"], default="backend" if hasattr(torch, "compile")
                   else "compile", help="how spire gets the model (default: backend on torch >= 2, else compile)")
    p.add_argument("--device", default=None, help="spire's device, e.g. cuda:0 or vulkan:0 (default: the best present)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--limit", type=int, default=None, help="train on the first N images only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=FASHION_MNIST)
    p.add_argument("--schedule", choices=["constant", "cosine"], default=None,
                   help="the learning rate over the run: cosine annealing to 0 per step (default; PyTorch's "
                        "CosineAnnealingLR), or constant (the default and only choice of --how step)")
    p.add_argument("--expect", type=float, default=None, help="exit 1 below this final test accuracy (0..1)")
    a = p.parse_args()

    if a.how == "backend" and not hasattr(torch, "compile"):
        sys.exit(f"train_lenet.py: --how backend needs torch >= 2 (this is torch {torch.__version__}); "
                 "use --how compile")
    names = [d.id for d in spire.devices()]
    device = a.device or (names[0] if names else None)
    if device not in names:
        sys.exit(f"train_lenet.py: no spire device {device!r}; present: {', '.join(names) or 'none'}")
    # The model's tensors live where a spire device can read them in place: torch's cuda:N for spire's cuda:N.
    where = torch.device(device) if device.startswith("cuda") and torch.cuda.is_available() else torch.device("cpu")
    schedule = a.schedule or ("constant" if a.how == "step" else "cosine")
    if a.how == "step" and schedule != "constant":
        sys.exit("train_lenet.py: compile_step builds the learning rate into its graph; --how step trains at a "
                 "constant rate (--schedule constant)")

    torch.manual_seed(a.seed)
    model = LeNet().to(where)
    try:
        train_x, train_y = fashion_mnist("train", a.limit, a.data)
        test_x, test_y = fashion_mnist("t10k", folder=a.data)
    except FileNotFoundError as e:
        sys.exit(f"train_lenet.py: {e}; or --data DIR")
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    if a.how == "step":
        step = spire.torch.compile_step(model, nn.CrossEntropyLoss(), opt, device=device)
        evaluate = spire.torch.compile(model, device=device)
    else:
        fast = (torch.compile(model, backend="spire", options={"device": device}, dynamic=False) if a.how == "backend"
                else spire.torch.compile(model, device=device))
        evaluate = fast
    train_x, train_y = train_x.to(where), train_y.to(where)
    steps = len(train_x) // a.batch
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs * steps) if schedule == "cosine"
                 else None)
    print(f"LeNet on Fashion-MNIST through {a.how} on spire's {device} (torch {torch.__version__}, tensors on "
          f"{where}): {len(train_x)} images, batch {a.batch}, lr {a.lr} ({schedule})")

    accuracy = 0.0
    for epoch in range(a.epochs):
        order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(a.seed + epoch)).to(where)
        losses = torch.zeros(steps, device=where)
        t = time.perf_counter()
        for i in range(steps):
            idx = order[i * a.batch:(i + 1) * a.batch]
            x, y = train_x[idx], train_y[idx]
            if a.how == "step":
                losses[i] = step(x, y)
            else:
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(fast(x), y)
                loss.backward()
                opt.step()
                if scheduler is not None:
                    scheduler.step()
                losses[i] = loss.detach()
        mean_loss = float(losses.mean())  # waits for the epoch's last step
        seconds = time.perf_counter() - t
        if a.how == "step":
            step.sync()  # the trained weights back in the torch module
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_x), 1000):
                logits = evaluate(test_x[i:i + 1000].to(where))
                correct += int((logits.argmax(1).cpu() == test_y[i:i + 1000]).sum())
        model.train()
        accuracy = correct / len(test_x)
        print(f"epoch {epoch + 1}: {seconds:.3f} s ({steps * a.batch / seconds:.0f} images/s), mean loss "
              f"{mean_loss:.4f}, test accuracy {100 * accuracy:.2f}%", flush=True)
    if a.expect is not None and accuracy < a.expect:
        print(f"train_lenet.py: test accuracy {100 * accuracy:.2f}% is below the expected {100 * a.expect:.2f}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
