"""PyTorch's side of `spire_bench_lenet_step` on the same GPU: one training step of the seed article's LeNet
(forward, cross-entropy, backward, SGD with momentum 0.9) on random pixels and labels, timed with CUDA events
(median of many steps after warm-up), in eager mode and with torch.compile, in its default mode and in
"reduce-overhead", which replays CUDA graphs: the closest match to spire's recorded stream.
Strict fp32 (TF32 off), as spire computes. Prints one row per batch and mode.
    torch_lenet_step.py [BATCH ...]   (default: 64 8192)"""
import sys
import torch
from torch import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/tools/gpu")
from torch_lenet_reference import LeNet
from torch_timing import median_ms

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
batches = [int(b) for b in sys.argv[1:]] or [64, 8192]
print(f"{'torch mode':<28} {'batch':>6} {'step ms':>9}   {torch.cuda.get_device_name()} (torch {torch.__version__})")
for batch in batches:
    for mode in ["eager", "compile default", "compile reduce-overhead"]:
        torch.manual_seed(0)
        model = LeNet().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x = torch.randn(batch, 1, 28, 28, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")

        def step():  # returns nothing: CUDA graphs reuse an output's memory at the next replay
            opt.zero_grad(set_to_none=False)
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        fn = step if mode == "eager" else torch.compile(step, mode=mode.split()[1])
        if mode.endswith("reduce-overhead"):
            compiled = fn

            def fn():
                torch.compiler.cudagraph_mark_step_begin()  # each call is a new step of the training loop
                compiled()
        try:
            ms = median_ms(fn, runs=100, warmup=20)
            print(f"{mode:<28} {batch:>6} {ms:>9.3f}")
        except Exception as e:  # a compile failure is a row, not the end of the table
            print(f"{mode:<28} {batch:>6} {'failed':>9}   {type(e).__name__}: {str(e).splitlines()[0][:100]}")
