"""Neural-network functions as JAX users know them from ``jax.nn``: every function of
``jax.nn`` but the cuDNN block-scaled matmuls, ``jax.nn.initializers`` as the module
``nxpy.nn.initializers`` (see
:mod:`nxpy.nn.coverage` and docs/nn.md), with ``jax.nn``'s names, arguments (``axis``,
``where``, ``approximate``, ``alpha``, ``negative_slope``, ...), formulas and gradients,
written as compositions of nxpy's ops. They run eagerly on any backend and inside
``defn``/``jit`` on any compiler, and ``grad``, ``vmap`` and sharding see their ops.

This package sits above the op front end and ``defn`` (both of which it may use), as
``jax.nn`` sits above ``jax.lax``: see docs/architecture.md.

>>> import nxpy as nx
>>> from nxpy import nn
>>> nn.relu(nx.tensor([-1.0, 0.0, 2.0])).tolist()
[0.0, 0.0, 2.0]
>>> [round(v, 4) for v in nn.softmax(nx.tensor([1.0, 2.0, 3.0])).tolist()]
[0.09, 0.2447, 0.6652]
>>> nn.one_hot(nx.tensor([0, 2, 5]), 3).tolist()
[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
"""
from __future__ import annotations

from .activations import (celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
                          identity, leaky_relu, log1mexp, log_sigmoid, mish, relu, relu6, selu,
                          sigmoid, silu, soft_sign, softplus, sparse_plus, sparse_sigmoid,
                          squareplus, swish, tanh)
from .attention import dot_product_attention
from .functions import log_softmax, logmeanexp, logsumexp, one_hot, softmax, standardize
from . import initializers  # noqa: F401 - the module nxpy.nn.initializers (__all__ lists functions)

__all__ = ["celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
           "hard_swish", "hard_tanh", "identity", "leaky_relu", "log1mexp", "log_sigmoid",
           "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6", "selu",
           "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid",
           "squareplus", "standardize", "swish", "tanh"]
