"""A spire graph under construction from FX nodes.

Each tensor value carries its dtype, shape and whether dim 0 is the batch ("batched"). The builder also keeps one
flag for the whole graph, rows_independent: True while every op seen computes each output row from the same input
row only (convolutions, pointwise ops with weights, linear layers, reductions not over dim 0). Only then may a call at
batch b run a plan compiled for a larger batch with zero rows appended (dynamic batch); every op that mixes rows, or
that the builder cannot judge, clears it.
"""
import re

import torch

from spire import _spire


class Unsupported(Exception):
    """The converter cannot map this node onto spire ops; the node runs in eager PyTorch instead."""


def registrar(table):
    """A decorator factory for a table of handlers: @registrar(T)(k1, k2) puts the function under each key."""
    def keys(*names):
        def register(fn):
            for name in names:
                table[name] = fn
            return fn
        return register
    return keys


TORCH_TO_SPIRE = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int32: "i32", torch.int64: "i64", torch.bool: "bool",
}
SPIRE_TO_TORCH = {v: k for k, v in TORCH_TO_SPIRE.items()}
FLOATS = ("f32", "f64", "f16", "bf16")


def spire_dtype(dtype):
    if dtype not in TORCH_TO_SPIRE:
        raise Unsupported(f"spire has no dtype for {dtype}")
    return TORCH_TO_SPIRE[dtype]


class SpireValue:
    """A value of the graph being built (its id in the spire graph)."""
    __slots__ = ("id", "dtype", "shape", "batched")

    def __init__(self, id, dtype, shape, batched):
        self.id, self.dtype, self.shape, self.batched = id, dtype, tuple(shape), batched

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f"SpireValue({self.id}, {self.dtype}{list(self.shape)}, batched={self.batched})"


_NAME_BAD = re.compile(r"[^A-Za-z0-9_.]")


class Builder:
    def __init__(self):
        self.g = _spire.Graph()
        self.rows_independent = True
        self.row_reasons = []     # why rows_independent went False
        self.params = {}          # spire parameter name -> attribute path in the GraphModule
        self.constants = {}       # spire parameter name -> the tensor the converter computed for it (set once a plan)
        self._param_values = {}   # attribute path -> SpireValue
        self._names = set()

    # ---- names and leaves
    def unique_name(self, hint):
        name = _NAME_BAD.sub("_", hint) or "v"
        if not (name[0].isalpha() or name[0] == "_"):
            name = "v_" + name
        base, n = name, 1
        # (the graph names the ops' values itself, permute_26 and the like, which an FX node's name can equal)
        while name in self._names or self.g.find(name) is not None:
            name = f"{base}_{n}"
            n += 1
        self._names.add(name)
        return name

    def input(self, hint, dtype, shape, batched):
        name = self.unique_name(hint)
        return self._wrap(self.g.input(name, dtype, list(shape)), batched)

    def param(self, path, tensor):
        """The graph parameter for the module attribute `path` (one per attribute, however often it is used)."""
        if path in self._param_values:
            return self._param_values[path]
        if not isinstance(tensor, torch.Tensor):
            raise Unsupported(f"attribute {path} is not a tensor")
        name = self.unique_name(path)
        v = self._wrap(self.g.parameter(name, spire_dtype(tensor.dtype), list(tensor.shape)), False)
        self.params[name] = path
        self._param_values[path] = v
        return v

    def const(self, value, dtype, shape=()):
        return self._wrap(self.g.constant(float(value), dtype, list(shape)), False)

    def const_tensor(self, hint, tensor):
        """A tensor the converter computed (a resize's coefficients, a causal mask): the graph holds no literal
        tensors, so it is a parameter of its own that each plan is given once (segment_runner's upload_constants),
        never a weight of the module."""
        name = self.unique_name(f"const.{hint}")
        v = self._wrap(self.g.parameter(name, spire_dtype(tensor.dtype), list(tensor.shape)), False)
        self.constants[name] = tensor.detach().cpu().contiguous()
        return v

    def _wrap(self, vid, batched):
        dtype, shape = self.g.type(vid)
        return SpireValue(vid, dtype, shape, batched)

    # ---- rows
    def mixes_rows(self, reason):
        if self.rows_independent:
            self.row_reasons.append(reason)
        self.rows_independent = False

    # ---- ops
    def op(self, op, inputs, attrs=None, rows="first"):
        """Appends an op. rows: 'pointwise' (inputs broadcast together: a batched result, and an unbatched operand
        that varies along dim 0 mixes rows), 'first' (the result's rows follow inputs[0]'s, as for conv2d, pooling
        or a layout op the caller checked), an input's index i (the result's rows follow inputs[i]'s, as gather's
        follow its indices' when it reads an unbatched table), or 'mixes' (the result's rows depend on other rows)."""
        for v in inputs:
            if not isinstance(v, SpireValue):
                raise Unsupported(f"{op}: an operand is {type(v).__name__}, not a tensor")
        vid = self.g.op(op, [v.id for v in inputs], attrs or {})
        if rows == "pointwise":
            batched = any(v.batched for v in inputs)
            if batched:
                out_rank = len(self.g.type(vid)[1])
                for v in inputs:
                    if not v.batched and v.rank == out_rank and v.shape[0] != 1:
                        self.mixes_rows(f"{op} broadcasts an unbatched {list(v.shape)} along the batch")
        elif rows == "first":
            batched = inputs[0].batched
        elif isinstance(rows, int):
            batched = inputs[rows].batched
        else:
            batched = any(v.batched for v in inputs)
            if batched:
                self.mixes_rows(f"{op} mixes rows of the batch")
        return self._wrap(vid, batched)

    # ---- helpers used by many handlers
    def scalar_like(self, x, value):
        if x.dtype not in FLOATS and float(value) != int(value):
            raise Unsupported(f"a float scalar {value} with an integer tensor (PyTorch promotes; spire does not)")
        return self.const(value, x.dtype)

    def operands(self, op, a, b):
        """Two operands of one dtype for a pointwise op: a Python number becomes a scalar constant of the other's
        dtype; two numbers or two dtypes are refused (PyTorch would promote)."""
        if not isinstance(a, SpireValue) and not isinstance(b, SpireValue):
            raise Unsupported(f"{op} of two Python numbers stays in Python")
        if not isinstance(a, SpireValue):
            a = self.scalar_like(b, a)
        if not isinstance(b, SpireValue):
            b = self.scalar_like(a, b)
        if a.dtype != b.dtype:
            raise Unsupported(f"{op} of {a.dtype} and {b.dtype} (PyTorch promotes; spire does not)")
        return a, b

    def binary(self, op, a, b):
        """A pointwise binary op; a Python number becomes a scalar constant of the tensor's dtype."""
        return self.op(op, list(self.operands(op, a, b)), rows="pointwise")

    def reshape(self, x, shape):
        shape = [int(s) for s in shape]
        if shape.count(-1) > 1:
            raise Unsupported("reshape with more than one -1")
        if -1 in shape:
            known = 1
            for s in shape:
                if s != -1:
                    known *= s
            total = 1
            for s in x.shape:
                total *= s
            if known == 0 or total % known:
                raise Unsupported(f"reshape of {list(x.shape)} to {shape}")
            shape[shape.index(-1)] = total // known
        if tuple(shape) == x.shape:
            return x
        if x.batched and (not shape or not x.shape or shape[0] != x.shape[0]):
            self.mixes_rows(f"reshape {list(x.shape)} -> {shape} moves the batch dimension")
        return self.op("reshape", [x], {"shape": shape})

    def permute(self, x, perm):
        perm = [p % x.rank for p in perm]
        if perm == list(range(x.rank)):
            return x
        if x.batched and perm[0] != 0:
            self.mixes_rows("a permutation moves the batch dimension")
        return self.op("permute", [x], {"perm": perm})

    def reduce(self, op, x, dims, keepdim):
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0 and op != "sum"):
            dims = list(range(x.rank))
        if isinstance(dims, int):
            dims = [dims]
        axes = sorted({d % x.rank for d in dims}) if x.rank else []
        if x.batched and 0 in axes:
            self.mixes_rows(f"{op} over the batch dimension")
        return self.op(op, [x], {"axes": axes, "keepdim": bool(keepdim)})

    def normalize_dim(self, x, dim):
        return dim % x.rank if x.rank else 0

    def flatten(self, x, start=0, end=-1):
        if x.rank == 0:
            return self.reshape(x, [1])
        start, end = start % x.rank, end % x.rank
        if start == end:
            return x
        if x.batched and start == 0:
            self.mixes_rows("flatten from dim 0 merges the batch")
        return self.op("flatten", [x], {"start_dim": start, "end_dim": end})
