"""Printing tensors' values as Nx does: nested brackets, ``true``/``false``, ``NaN``,
``Inf``, complex numbers as ``1.0+2.0i``, eliding after a number of elements.

>>> import numpy as np
>>> print(format_array(np.array([[1, 2], [3, 4]], dtype=np.int32)))
[
  [1, 2],
  [3, 4]
]
>>> format_array(np.array([1.5, np.nan, -np.inf], dtype=np.float32)), format_array(np.array(1 + 2j))
('[1.5, NaN, -Inf]', '1.0+2.0i')
"""
from __future__ import annotations

import math

import numpy as np

from .types import HALF_DTYPES

__all__ = ["format_array"]


def _fmt_scalar(v, kind):
    if kind == "b":
        return "true" if v else "false"
    if kind == "c":
        sign = "+" if math.isnan(v.imag) or math.copysign(1.0, v.imag) > 0 else "-"
        return f"{_fmt_scalar(v.real, 'f')}{sign}{_fmt_scalar(abs(v.imag), 'f')}i"
    if kind in "fV":
        v = float(v)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Inf" if v > 0 else "-Inf"
        return repr(v)
    return str(int(v))


def format_array(arr: np.ndarray, limit: int = 50) -> str:
    """Nx-style nested listing of ``arr``, eliding after ``limit`` elements."""
    kind = "b" if arr.dtype == np.bool_ else ("V" if arr.dtype in HALF_DTYPES else arr.dtype.kind)
    count = [0]

    def rec(a, indent):
        if a.ndim == 0:
            return _fmt_scalar(a.item() if kind != "V" else float(a), kind)
        if a.ndim == 1:
            items = []
            for v in a:
                if count[0] >= limit:
                    items.append("...")
                    break
                count[0] += 1
                items.append(_fmt_scalar(v if kind != "V" else float(v), kind))
            return "[" + ", ".join(items) + "]"
        pad = "  " * (indent + 1)
        rows = []
        for sub in a:
            if count[0] >= limit:
                rows.append(pad + "...")
                break
            rows.append(pad + rec(sub, indent + 1))
        return "[\n" + ",\n".join(rows) + "\n" + "  " * indent + "]"

    return rec(arr, 0)
