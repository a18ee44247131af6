"""torch tensors <-> the numpy arrays spire's executables exchange (bf16 travels as float32: numpy has none)."""
import numpy as np
import torch

from spire.torch.frontend.builder import SPIRE_TO_TORCH, TORCH_TO_SPIRE

# Tensor dtypes spire has; any other input (complex, uint8, ...) is refused with this list.
SUPPORTED_DTYPES = tuple(TORCH_TO_SPIRE)
# Values of non-tensor arguments a trace is specialized to (a forward may branch on them: `if mask is None`).
CONSTANT_TYPES = (type(None), bool, int, float, str)


def to_numpy(t, rows=None):
    """A contiguous numpy array of t (detached, on the CPU), with zero rows appended up to `rows` if given."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    a = t.contiguous().numpy()
    if rows is not None and rows != a.shape[0]:
        padded = np.zeros((rows,) + a.shape[1:], dtype=a.dtype)
        padded[: a.shape[0]] = a
        a = padded
    return a


def from_numpy(a, spire_dtype, rows=None):
    t = torch.from_numpy(np.ascontiguousarray(a))
    if rows is not None and rows != t.shape[0]:
        t = t[:rows].clone()
    want = SPIRE_TO_TORCH[spire_dtype]
    return t.to(want) if t.dtype != want else t


def upload_constants(exe, conv):
    """Gives a new executable the tensors its conversion computed (Builder.const_tensor): once, as they never change."""
    for name, t in conv.constants.items():
        exe.set(name, to_numpy(t))
