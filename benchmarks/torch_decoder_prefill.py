"""A decoder LLM written in PyTorch (tests/tools/decoders/decoder_models.py, random weights, no cache: the whole prompt
each call) through spire.torch.compile and torch.compile(backend="spire") on torch's CUDA tensors, next to eager and
Inductor (default mode) in the same process: compile seconds, error against eager, wall ms per call (median of RUNS
after warm-up, synchronized after each: what a caller waits). fp32, TF32 off. Needs torch >= 2 and CUDA.

    python3 benchmarks/torch_decoder_prefill.py CONFIG TOKENS [DEVICE]     e.g. gpt2-124m 32 cuda:0
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "tools", "decoders"))
import decoder_models as dm  # noqa: E402
import spire.torch  # noqa: E402  (registers backend="spire")

RUNS = int(os.environ.get("RUNS", 30))


class Prefill(dm.WithoutCache):
    """WithoutCache with its empty cache made on the inputs' device (the test's makes it on the CPU)."""

    def forward(self, input_ids, attention_mask, position_ids):
        c = self.c
        past = [torch.zeros(input_ids.shape[0], c.kv_heads, 0, c.head_dim, device=input_ids.device)
                for _ in range(2 * c.layers)]
        return self.model(input_ids, attention_mask, position_ids, *past)[0]


def wall_ms(fn, inputs):
    with torch.no_grad():
        start = time.perf_counter()
        while time.perf_counter() - start < 0.5:  # warm-up: clocks up, plans and graphs made
            fn(*inputs)
            torch.cuda.synchronize()
        times = []
        for _ in range(RUNS):
            t = time.perf_counter()
            fn(*inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    config, tokens = sys.argv[1], int(sys.argv[2])
    device = sys.argv[3] if len(sys.argv) > 3 else "cuda:0"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    model = Prefill(dm.build(config)).eval().cuda()
    g = torch.Generator().manual_seed(0)
    inputs = (torch.randint(0, model.c.vocab, (1, tokens), generator=g).cuda(),
              torch.ones(1, tokens, dtype=torch.int64).cuda(), torch.arange(tokens)[None].cuda())
    with torch.no_grad():
        want = model(*inputs)
    rows = [("eager", model)]
    for label, make in ((f"spire.torch.compile {device}", lambda: spire.torch.compile(model, device=device)),
                        (f"backend=spire {device}", lambda: torch.compile(model, backend="spire",
                                                                         options={"device": device})),
                        ("Inductor", lambda: torch.compile(model))):
        torch._dynamo.reset()
        t0 = time.perf_counter()
        compiled = make()
        with torch.no_grad():
            got = compiled(*inputs)
        torch.cuda.synchronize()
        err = ((got - want).abs().max() / want.abs().max()).item()
        print(f"{label}: first call (compile) {time.perf_counter() - t0:.1f} s, max error / max |eager| {err:.1e}")
        rows.append((label, compiled))
    for label, fn in rows:
        print(f"{config} {tokens} tokens, {label}: {wall_ms(fn, inputs):.3f} ms")


if __name__ == "__main__":
    main()
