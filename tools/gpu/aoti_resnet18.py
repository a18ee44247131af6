"""PyTorch's AOTInductor next to a spire bundle: resnet18 (random weights, seed 0, eval) exported with a dynamic
batch 1..8 and compiled to a .pt2 package ('build'), then, in a fresh process, the package loaded and run once at
batch 1 ('first'), timed from process start. Prints one line per step, or the reason AOTInductor could not run
here (it needs a C++ compiler and Triton on the machine).

  python3 aoti_resnet18.py build DIR      # DIR/resnet18.pt2
  python3 aoti_resnet18.py first DIR      # wall seconds from process start to the first result
"""
import sys
import time

T_START = time.time()


def build(folder):
    import os
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval().cuda()
    x = torch.randn(2, 3, 224, 224, device="cuda")
    batch = torch.export.Dim("batch", min=1, max=8)
    t0 = time.time()
    with torch.no_grad():
        exported = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
        path = torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(folder, "resnet18.pt2"))
    print(f"aoti build: {time.time() - t0:.1f} s -> {path} ({os.path.getsize(path) / 1e6:.1f} MB)", flush=True)


def first(folder):
    import os
    import torch
    t_import = time.time()
    runner = torch._inductor.aoti_load_package(os.path.join(folder, "resnet18.pt2"))
    t_load = time.time()
    torch.manual_seed(1)
    x = torch.randn(1, 3, 224, 224, device="cuda")
    with torch.no_grad():
        y = runner(x)
    torch.cuda.synchronize()
    t_done = time.time()
    shape = tuple((y[0] if isinstance(y, (list, tuple)) else y).shape)
    print(f"aoti first result: {t_done - T_START:.3f} s from process start (import torch {t_import - T_START:.3f}, "
          f"load package {t_load - t_import:.3f}, first run {t_done - t_load:.3f}); output {shape}", flush=True)


if __name__ == "__main__":
    step, folder = sys.argv[1], sys.argv[2]
    try:
        {"build": build, "first": first}[step](folder)
    except Exception as e:  # the reason goes into the record, not a traceback wall
        print(f"aoti {step}: could not run here: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        sys.exit(1)
