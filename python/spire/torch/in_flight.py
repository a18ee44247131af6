"""What a plan that exchanges torch CUDA tensors in place on spire's cuda:N needs so that a call never waits on the
host: torch's current stream as the driver's handle, and the count of steps submitted but not yet waited for (at most
STEPS_IN_FLIGHT, so Python prepares the next call while the device runs this one, as PyTorch's own CUDA calls do)."""
import torch

STEPS_IN_FLIGHT = 2


def current_stream(device):
    """torch's current CUDA stream on `device` as the driver's handle (an int; 0: the legacy default stream). torch's
    raw getter where it has one: a Stream object per call costs about 10 us."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device.index) if raw is not None else torch.cuda.current_stream(device).cuda_stream


class InFlightPlan:
    """Base of a compiled plan (its Executable in self.exe) that may have steps in flight."""

    def __init__(self, exe):
        self.exe = exe
        self.in_flight = 0  # steps submitted (start_step) and not yet waited for (finish_step)

    def settle(self):
        """Waits for every step in flight: before anything that goes through the host (set, get, last_step_ms)."""
        while self.in_flight:
            self.in_flight -= 1
            self.exe.finish_step()

    def submit(self):
        """One step, not waited for: the oldest step in flight is waited for only when STEPS_IN_FLIGHT are."""
        if self.in_flight == STEPS_IN_FLIGHT:
            self.in_flight -= 1
            self.exe.finish_step()
        self.exe.start_step()
        self.in_flight += 1
