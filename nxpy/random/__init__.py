"""Pseudo-random numbers as ``Nx.Random`` has them: explicit keys, threefry2x32, split.

A key is a plain ``u32[2]`` tensor (JAX's raw key data, ``jax.random.key_data``); every
function takes one and never changes it. The functions are compositions of nxpy's ops
(u32 add, xor, shifts, bitcast, ...), so they run eagerly on any backend, inside
``defn``/``jit`` on any compiler (the Evaluator, EXLA, plugins), under ``shard_jit`` and
``shard_map``, and inside ``while_loop``, with no random primitive of their own.

The bit streams are JAX's (``jax.random`` 0.10.2, default config, which has
``jax_threefry_partitionable=True``): ``split``, ``fold_in``, ``bits_split``,
``uniform_split``, ``normal_split``, ``randint_split`` and ``gumbel_split`` give the bits
``jax.random.split/fold_in/bits/uniform/normal/randint/gumbel`` give for the same key,
shape and type: exactly on EXLA, and on the NumPy backend and the Evaluator too except
for a few floats, which are a few ulps apart there (f64 ``uniform`` on a range other
than ``[0, 1)``, f64 ``normal``, ``gumbel``, and ``multivariate_normal``): docs/random.md,
"Bit equality with JAX, and where it stops", lists them and why. As in Nx, each function
also has a form without ``_split`` that splits the key first and returns ``(value,
next_key)``: ``uniform(key)`` is ``(uniform_split(split(key)[1]), split(key)[0])``.
docs/random.md compares the streams with Nx's.

>>> import nxpy as nx
>>> from nxpy import random
>>> key = random.key(42)
>>> key.tolist()
[0, 42]
>>> random.split(key).tolist()
[[1832780943, 270669613], [64467757, 2916123636]]
>>> [round(v, 6) for v in random.uniform_split(key, shape=(3,)).tolist()]
[0.48871, 0.679797, 0.616271]
>>> u, next_key = random.uniform(key, shape=(2,))
>>> next_key.tolist() == random.split(key)[0].tolist()
True

This package sits with ``nxpy.nn`` above the op front end and ``defn`` (whose
``while_loop`` the rejection samplers use): see docs/architecture.md.
"""
from .core import *  # noqa: F403 - keys, split, fold_in, threefry2x32
from .core import __all__ as _CORE
from .basic import *  # noqa: F403 - bits, uniform, normal, randint, gumbel, shuffle, ...
from .basic import __all__ as _BASIC
from .distributions import *  # noqa: F403 - the rest of jax.random's distributions
from .distributions import __all__ as _DISTRIBUTIONS
from .gamma import *  # noqa: F403 - gamma and the distributions drawn through it
from .gamma import __all__ as _GAMMA

__all__ = _CORE + _BASIC + _DISTRIBUTIONS + _GAMMA
