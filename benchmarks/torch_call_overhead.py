"""The host's share of one call of a model compiled by spire inside PyTorch, split by part, for the issue's goal (a
call's wall time within 1.1x of spire's device time plus 50 us). Parts of a call, each timed nested inside the one
above it (so the device's time, however long, cancels out of the host's parts):
  dynamo   torch.compile's frame evaluation and guards, up to the backend's callable (torch >= 2 only)
  module   spire's compiled module: the partition's lookup, the FX items between segments
  segment  each spire segment's host work: parameters checked for change, inputs set, outputs made and read
  step     the step's launch and wait beyond the device's time (what is left of the wall time; with CUDA it also
           holds the synchronization after the call)
  device   the plans' device time (Executable.last_step_ms)
On lavapipe the device's time is the CPU's own and the step's part is noise beside it; and what a long step leaves
behind (its threads still winding down, cold caches) slows the host's parts after it. So each model is also timed
with its plans' steps skipped (Executable.skip_steps): "steps skipped" is the host's work alone, warm, as it runs
between the short steps of a GPU, in the thread's CPU time (other processes on the same cores do not count).

usage: PYTHONPATH=build/python python3 benchmarks/torch_call_overhead.py [--device D] [--runs N] [--models M,...]
       [--dynamo] [--batch B] [--skipped-runs N]
Also imported by tools/gpu/run-torch.sh's timing (call_parts, print_table)."""
import argparse
import statistics
import time
import warnings

import torch

import spire.torch
from spire.torch.segment_runner import SegmentRunner


class _Clock:
    """Nested wall times of one call: the backend's callables and each segment's forward, patched in while timing."""

    def __init__(self, now):
        self.now = now
        self.piece = self.segments = 0.0
        self.piece_calls = 0

    def timed(self, fn, add):
        """fn, with the time of each call given to add(seconds)."""
        def timed_fn(*args):
            t = self.now()
            try:
                return fn(*args)
            finally:
                add(self.now() - t)
        return timed_fn

    def patch(self):
        # A segment's two paths (the C++ call, which a backend's piece may call directly, and the Python path).
        self._forwards = [(name, getattr(SegmentRunner, name)) for name in ("forward_described", "_forward_python")]
        for name, forward in self._forwards:
            setattr(SegmentRunner, name, self.timed(forward, self._add_segment))
        self._piece = None
        try:
            from spire.torch.dynamo_backend import _Piece
        except ImportError:
            return
        self._piece = (_Piece, _Piece.__call__)
        _Piece.__call__ = self.timed(_Piece.__call__, self._add_piece)

    def _add_segment(self, seconds):
        self.segments += seconds

    def _add_piece(self, seconds):
        self.piece += seconds
        self.piece_calls += 1

    def unpatch(self):
        for name, forward in self._forwards:
            setattr(SegmentRunner, name, forward)
        if self._piece is not None:
            self._piece[0].__call__ = self._piece[1]


def _plans(fn):
    """Every forward plan of the SpireModules reachable from fn (a SpireModule, or a torch.compile'd callable whose
    backend pieces are listed by the caller)."""
    modules = fn if isinstance(fn, list) else [fn]
    return {p for m in modules for part in m._partitions.values() for r in part.runners.values()
            for p in r.plans.values()}


def _step_seconds(plans):
    return sum(p.exe.step_seconds for p in plans)


def _timed_calls(fn, x, runs, plans, sync, now=time.perf_counter):
    """Per call of fn(x): its time by `now` and its parts (see the module's docstring), medians in microseconds."""
    clock = _Clock(now)
    rows = []
    clock.patch()
    try:
        for _ in range(runs):
            piece0, seg0, step0, calls0 = clock.piece, clock.segments, _step_seconds(plans), clock.piece_calls
            t = now()
            fn(x)
            returned = now()
            sync()
            wall = now() - t
            call = returned - t  # without the synchronization, which the step's part holds
            segments = clock.segments - seg0
            steps = _step_seconds(plans) - step0
            piece = clock.piece - piece0 if clock.piece_calls > calls0 else call
            rows.append({"wall": wall, "dynamo": call - piece, "module": piece - segments, "segment": segments - steps})
    finally:
        clock.unpatch()
    return {k: statistics.median(r[k] for r in rows) * 1e6 for k in ("wall", "dynamo", "module", "segment")}


def call_parts(fn, x, runs, modules=None, synchronize=None, skipped_runs=200):
    """Per-part microseconds (median over runs) of calling fn(x) under no_grad, after three warm-up calls. modules:
    the SpireModules fn runs (default: fn itself), or a function returning them after the warm-up; synchronize: called
    after each call (torch.cuda.synchronize for CUDA tensors), its time counted in the call. Then skipped_runs calls
    with the plans' steps skipped (Executable.skip_steps): the host's parts alone, free of what a long step leaves
    behind (lavapipe's threads, cold caches). Returns {part: us, 'wall': us, 'host': module + segment, and the same
    as 'skipped <part>'}."""
    sync = synchronize or (lambda: None)
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        sync()
        modules = modules() if callable(modules) else (modules or [fn])
        plans = _plans(modules)
        parts = _timed_calls(fn, x, runs, plans, sync)
        for p in plans:
            p.settle()  # the steps still in flight, before their device time is read
        device = sum(p.exe.last_step_ms() for p in plans) * 1e-3
        for p in plans:
            p.exe.skip_steps = True
        try:
            # The thread's CPU time: what the host's work costs, free of other processes sharing the cores.
            skipped = _timed_calls(fn, x, skipped_runs, plans, sync, now=time.thread_time)
        finally:
            for p in plans:
                p.settle()  # counts the skipped steps out (nothing waits), so none is waited for once they run again
                p.exe.skip_steps = False
    parts["device"] = device * 1e6
    parts["step"] = parts["wall"] - parts["dynamo"] - parts["module"] - parts["segment"] - parts["device"]
    parts["host"] = parts["module"] + parts["segment"]
    for k in ("wall", "dynamo", "module", "segment"):
        parts["skipped " + k] = skipped[k]
    return parts


def print_table(rows, title):
    """rows: (model, batch, weights, parts) as call_parts returns them."""
    print(title)
    print("| model | batch | weights | wall | device | over device | dynamo | module | segment | step | "
          "goal: wall <= 1.1 device + 50 | steps skipped, CPU: call | dynamo | module | segment |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for name, batch, weights, p in rows:
        goal = p["wall"] <= 1.1 * p["device"] + 50
        print(f"| {name} | {batch} | {weights} | {p['wall']:.0f} | {p['device']:.0f} | {p['wall'] - p['device']:.0f} | "
              f"{p['dynamo']:.0f} | {p['module']:.0f} | {p['segment']:.0f} | {p['step']:.0f} | "
              f"{'met' if goal else 'missed by %.0f' % (p['wall'] - 1.1 * p['device'] - 50)} | "
              f"{p['skipped wall']:.1f} | {p['skipped dynamo']:.1f} | {p['skipped module']:.1f} | "
              f"{p['skipped segment']:.1f} |")


def model(name, device="cpu"):
    """The issue's three models with random weights from a fixed seed, and one input's shape without the batch."""
    import torchvision
    torch.manual_seed(0)
    if name == "resnet18":
        return torchvision.models.resnet18().eval().to(device), (3, 224, 224)
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2().eval().to(device), (3, 224, 224)
    if name == "encoder":
        return torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True).eval().to(device), (64, 128)
    raise ValueError(f"unknown model '{name}'; this benchmark has resnet18, mobilenet_v2 and encoder")


def weight_count(module):
    return sum(1 for _ in module.parameters()) + sum(1 for _ in module.buffers())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="spire's device (default: the best present)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--skipped-runs", type=int, default=200, help="calls timed with the steps skipped")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,encoder")
    ap.add_argument("--dynamo", action="store_true", help="through torch.compile(backend='spire') (torch >= 2)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    rows = []
    for name in args.models.split(","):
        m, shape = model(name)
        x = torch.randn(args.batch, *shape)
        if args.dynamo:
            from spire.torch.dynamo_backend import compiled_pieces, pieces_made
            torch._dynamo.reset()
            before = pieces_made()
            fn = torch.compile(m, backend="spire", options={"device": args.device}, dynamic=False)
            parts = call_parts(fn, x, args.runs, modules=lambda: compiled_pieces(since=before),
                               skipped_runs=args.skipped_runs)
        else:
            fn = spire.torch.compile(m, device=args.device, dynamic=False)
            parts = call_parts(fn, x, args.runs, skipped_runs=args.skipped_runs)
        rows.append((name, args.batch, weight_count(m), parts))
    device = spire.device(args.device).info.id
    print_table(rows, f"host overhead per call on {device}, us (median of {args.runs} calls; "
                      f"{'torch.compile(backend=spire)' if args.dynamo else 'spire.torch.compile'}, CPU tensors)")


if __name__ == "__main__":
    main()
