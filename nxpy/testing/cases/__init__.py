"""The conformance kit's cases: every op of the op set on several shapes and types.

A case is a name, a function of nxpy tensors, and its inputs (NumPy arrays). The
reference result is the NumPy backend running the same function eagerly; a target
(a backend run eagerly, or a compiler running the function as a defn) must match it.
Each op family has a module of cases (``base``: the base op set); this package gathers
them.

>>> len(CASES) > 150
True
>>> sorted({c.op for c in CASES}) == sorted(OP_SET)
True
"""
from __future__ import annotations

from . import base, complex, compositions, indexing, linalg, sorting, windows
from . import random
from .core import Case

__all__ = ["Case", "CASES", "OP_SET"]

FAMILIES = [base, indexing, compositions, windows, sorting, complex, random, linalg]
CASES = [c for f in FAMILIES for c in f.CASES]
OP_SET = [op for f in FAMILIES for op in f.OPS]
