"""What a conformance case is, and helpers to make inputs for one."""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

__all__ = ["Case", "arr", "tol"]


@dataclass(frozen=True)
class Case:
    op: str                       # the op of the op set this case exercises
    fn: object                    # fn(nx, *tensors) -> tensor or container
    inputs: tuple                 # NumPy arrays
    label: str = ""
    tol: float = 0.0              # relative tolerance (0: exact)
    kwargs: dict = field(default_factory=dict)

    @property
    def id(self):
        types = ",".join(str(a.dtype) for a in self.inputs)
        shapes = ",".join("x".join(map(str, a.shape)) or "scalar" for a in self.inputs)
        return f"{self.op}[{self.label or types}:{shapes}]"


def arr(shape, dtype, lo=-3, hi=3, seed=0, nonzero=False):
    rng = np.random.default_rng(seed + hash((shape, str(dtype))) % 1000)
    dt = np.dtype(dtype) if dtype != "bf16" else None
    if dtype == "bf16":
        return rng.uniform(lo, hi, shape).astype(ml_dtypes.bfloat16)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        lo = max(lo, 0) if dt.kind == "u" else lo
        a = rng.integers(lo, hi + 1, shape).astype(dt)
        if nonzero:
            a[a == 0] = 1
        return a
    if dt.kind == "c":
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    a = rng.uniform(lo, hi, shape).astype(dt)
    if nonzero:
        a[np.abs(a) < 0.1] = 0.5
    return a


_LOOSE = {"float16": 2e-3, "bfloat16": 2e-2}


def tol(dtype, base=1e-5):
    return _LOOSE.get(str(np.dtype(dtype)) if dtype != "bf16" else "bfloat16", base)


_arr, _tol = arr, tol  # the names the case modules use
