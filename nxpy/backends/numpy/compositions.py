"""The NumPy backend's kernels for the compositions family's two primitives:
``population_count`` and ``count_leading_zeros`` (bits of the two's complement, counted
in the unsigned type of the same width; the result has the input's type)."""
from __future__ import annotations

import numpy as np

from ...backend import Backend

__all__ = ["CompositionsKernels"]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _unsigned(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(_UNSIGNED[a.dtype.itemsize]).reshape(a.shape)


def _bit_length(u: np.ndarray) -> np.ndarray:
    """The number of significant bits of each unsigned integer (0 for 0)."""
    v = u.astype(np.uint64)
    n = np.zeros(u.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        if s < u.dtype.itemsize * 8:
            big = (v >> np.uint64(s)) != 0
            n += np.where(big, s, 0)
            v = np.where(big, v >> np.uint64(s), v)
    return n + (v != 0)


class CompositionsKernels(Backend):
    """Kernels of the compositions family (the rest of it is made of other ops)."""

    def population_count(self, out, x):
        return self._wrap(out, np.bitwise_count(_unsigned(x.data)).astype(out.type.dtype))

    def count_leading_zeros(self, out, x):
        u = _unsigned(x.data)
        n = u.dtype.itemsize * 8 - _bit_length(u)
        return self._wrap(out, n.astype(out.type.dtype))
