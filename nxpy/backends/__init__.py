"""The eager backends that ship with nxpy: ``numpy`` (:mod:`nxpy.backends.numpy`), the
reference and default one. (EXLA's eager backend is built on its compiler and lives with
it, in :mod:`nxpy.compilers.exla`.)"""
from ..backend import Backend
from . import numpy

__all__ = ["Backend", "numpy"]
