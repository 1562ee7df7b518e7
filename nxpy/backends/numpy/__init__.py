"""The NumPy backend: the reference eager backend and the default one (Nx.BinaryBackend).

Its semantics are XLA's wherever NumPy differs (rounding half away from zero, integer
division by zero, shifts past the bit width, saturating float→int conversion), so
the Evaluator and EXLA agree exactly. Its kernels come in one class per op family
(``base`` holds the base op set); :class:`NumpyBackend` combines them.

>>> import nxpy as nx
>>> (nx.tensor([2.5, -2.5]).backend.name, nx.round(nx.tensor([2.5, -2.5])).tolist())
('numpy', [3.0, -3.0])
"""
from __future__ import annotations

from ...backend import register_backend_factory
from .base import BaseKernels
from .indexing import IndexingKernels
from .compositions import CompositionsKernels
from .conv import ConvKernels
from .windows import WindowKernels
from .sorting import SortingKernels
from .complex import ComplexKernels
from .linalg import LinalgKernels

__all__ = ["NumpyBackend"]


class NumpyBackend(WindowKernels, ConvKernels, SortingKernels, ComplexKernels, LinalgKernels,
                   BaseKernels, IndexingKernels, CompositionsKernels):
    """Eager ops on NumPy arrays (the kernel families combined)."""

    name = "numpy"
    priority = 0


register_backend_factory("numpy", NumpyBackend)
