"""What a plan that exchanges torch CUDA tensors in place on spire's cuda:N needs so that a call never waits on the
host: torch's current stream as the driver's handle, and up to STEPS_IN_FLIGHT steps submitted but not yet waited for
(so Python prepares the next call while the device runs this one, as PyTorch's own CUDA calls do). The count lives in
the Executable (submit, settle, in_flight), where the C++ segment call (SegmentCall) and Python both see it."""
import functools

import torch

STEPS_IN_FLIGHT = 2


def current_stream(device):
    """torch's current CUDA stream on `device` as the driver's handle (an int; 0: the legacy default stream)."""
    return current_stream_getter(device)()


def current_stream_getter(device):
    """A function of no arguments returning current_stream(device): torch's raw getter where it has one (a Stream
    object per call costs about 10 us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, device.index)
    return lambda: torch.cuda.current_stream(device).cuda_stream


class InFlightPlan:
    """Base of a compiled plan (its Executable in self.exe) that may have steps in flight."""

    def __init__(self, exe):
        self.exe = exe

    def settle(self):
        """Waits for every step in flight: before anything that goes through the host (set, get, last_step_ms)."""
        self.exe.settle()

    def submit(self):
        """One step, not waited for: the oldest step in flight is waited for only when STEPS_IN_FLIGHT are."""
        self.exe.submit()
