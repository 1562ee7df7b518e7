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
from .manipulation import *  # noqa: F403 - reshape, transpose, roll, pad, split, ...
from .manipulation import __all__ as _MANIPULATION
from .mathematics import *  # noqa: F403 - elementwise math, products, polynomials
from .mathematics import __all__ as _MATHEMATICS
from .reductions import *  # noqa: F403 - sum, mean, std, nan*, cumsum, ...
from .reductions import __all__ as _REDUCTIONS
from .statistics import *  # noqa: F403 - quantile, histogram, bincount, searchsorted, ...
from .statistics import __all__ as _STATISTICS
from . import linalg

__all__ = _COMMON + _CREATION + _MANIPULATION + _MATHEMATICS + _REDUCTIONS + _STATISTICS + [
    "linalg"]
