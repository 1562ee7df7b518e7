"""NumPy's and ``jax.numpy``'s names over nxpy tensors: ``import nxpy.numpy as xnp`` and
port code written for ``jnp`` (issue 28, part 1). Every function is a composition of
nxpy's ops, so it runs eagerly on any backend and inside ``defn``/``jit`` on any compiler,
and ``grad``, ``vmap`` and sharding see ordinary ops. Arguments follow ``jax.numpy``
(``axis``, ``keepdims``, ``dtype``, NumPy's type names); where the result type differs
from ``jax.numpy``'s, the function's docstring and docs/numpy.md say so.
:mod:`nxpy.numpy.coverage` lists every ``jax.numpy`` name with nxpy's (docs/numpy.md).

This package sits with ``nxpy.nn`` and ``nxpy.random`` above the op front end and
``defn`` (whose control flow it may use), as ``jax.numpy`` sits above ``jax.lax``: see
docs/architecture.md.
"""
from __future__ import annotations

from ._common import *  # noqa: F403 - dtypes (float32, ...), asarray, array
from ._common import __all__ as _COMMON
from .creation import *  # noqa: F403 - zeros, ones, full, arange, linspace, eye, ...
from .creation import __all__ as _CREATION
from .manipulation import *  # noqa: F403 - reshape, transpose, roll, broadcast_to, ...
from .manipulation import __all__ as _MANIPULATION
from .joining import *  # noqa: F403 - split, stack, concatenate, insert, block, ...
from .joining import __all__ as _JOINING
from .padding import *  # noqa: F403 - pad with every mode
from .padding import __all__ as _PADDING
from .indexing import *  # noqa: F403 - where, take, nonzero, diagonal, index helpers, ...
from .indexing import __all__ as _INDEXING
from .mathematics import *  # noqa: F403 - elementwise math
from .mathematics import __all__ as _MATHEMATICS
from .products import *  # noqa: F403 - dot, matmul, einsum, kron, convolve, polynomials, ...
from .products import __all__ as _PRODUCTS
from .reductions import *  # noqa: F403 - sum, mean, std, nan*, cumsum, ...
from .reductions import __all__ as _REDUCTIONS
from .statistics import *  # noqa: F403 - quantile, histogram, bincount, searchsorted, ...
from .statistics import __all__ as _STATISTICS
from . import linalg

__all__ = (_COMMON + _CREATION + _MANIPULATION + _JOINING + _PADDING + _INDEXING + _MATHEMATICS
           + _PRODUCTS + _REDUCTIONS + _STATISTICS + ["linalg"])
