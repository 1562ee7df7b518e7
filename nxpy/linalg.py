"""Linear algebra, as Elixir Nx's ``Nx.LinAlg``: decompositions (:func:`cholesky`,
:func:`lu`, :func:`qr`, :func:`eigh`, :func:`svd`), solvers (:func:`triangular_solve`,
:func:`solve`, :func:`least_squares`), :func:`invert`, :func:`pinv`,
:func:`determinant`, :func:`norm`, :func:`matrix_power`, :func:`matrix_rank` and
:func:`adjoint`. Every function works eagerly and inside a defn, batched over leading
dimensions where Nx batches. See ``docs/linalg.md``.

>>> import nxpy as nx
>>> from nxpy import linalg
>>> linalg.solve(nx.tensor([[2.0, 0.0], [0.0, 4.0]]), nx.tensor([2.0, 2.0])).tolist()
[1.0, 0.5]
"""
from .ops.linalg import (adjoint, cholesky, determinant, eigh, invert, least_squares, lu,
                         matrix_power, matrix_rank, norm, pinv, qr, solve, svd,
                         triangular_solve)

__all__ = ["adjoint", "cholesky", "determinant", "eigh", "invert", "least_squares", "lu",
           "matrix_power", "matrix_rank", "norm", "pinv", "qr", "solve", "svd",
           "triangular_solve"]
