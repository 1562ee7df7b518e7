"""Neural-network functions as JAX users know them from ``jax.nn``: ``relu``, ``gelu``,
``silu``, ``softplus``, ``softmax``, ``log_softmax``, ``one_hot`` and ``logsumexp``, with
``jax.nn``'s argument names (``axis``, ``approximate``, ``keepdims``, ...) and formulas,
written as compositions of nxpy's ops. They run eagerly on any backend and inside
``defn``/``jit`` on any compiler, and differentiate through their parts.

This module sits between the op front end (which it uses) and ``defn`` (which may use
it): see docs/architecture.md.

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

import math

from . import ops as O
from . import shape as S
from . import types as T

__all__ = ["relu", "gelu", "silu", "swish", "sigmoid", "softplus", "softmax", "log_softmax",
           "one_hot", "logsumexp"]


def _float(x):
    """``x`` as a tensor of a floating type (integers become f32, as ``jax.nn`` promotes)."""
    x = O.to_tensor(x, "x")
    return x if x.type.is_inexact else O.as_type(x, T.to_floating(x.type))


def _axes(x, axis, op):
    """``jax.nn``'s ``axis``: an int, a tuple of ints, or None (all axes)."""
    if axis is None:
        return list(range(x.rank))
    if isinstance(axis, (list, tuple)):
        return list(S.normalize_axes(list(axis), x.rank, x.names))
    try:
        return [S.normalize_axis(axis, x.rank, x.names)]
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: {e}") from None


def relu(x):
    """``max(x, 0)``; its gradient at 0 is 0 (as ``jax.nn.relu``), NaN passes through.

    >>> import nxpy as nx
    >>> relu(nx.tensor([-2, 3])).tolist()
    [0, 3]
    """
    x = O.to_tensor(x, "x")
    keep = O.greater(x, 0) if not x.type.is_inexact else O.logical_or(O.greater(x, 0),
                                                                       O.is_nan(x))
    return O.select(keep, x, False if x.type.is_pred else 0)


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit: with ``approximate`` (the default, as ``jax.nn``)
    ``x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2``, else
    ``x * (1 + erf(x / sqrt(2))) / 2``.

    >>> import nxpy as nx
    >>> x = nx.tensor(1.0)
    >>> round(gelu(x).item(), 4), round(gelu(x, approximate=False).item(), 4)
    (0.8412, 0.8413)
    """
    x = _float(x)
    if approximate:
        cdf = 0.5 * (1.0 + O.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x ** 3))))
        return x * cdf
    return x * (O.erf(x / math.sqrt(2)) + 1) / 2


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return O.sigmoid(x)


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    x = _float(x)
    return x * O.sigmoid(x)


swish = silu


def softplus(x):
    """``log(1 + exp(x))``, computed as ``jnp.logaddexp(x, 0)``:
    ``max(x, 0) + log1p(exp(-|x|))``.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in softplus(nx.tensor([-1.0, 0.0, 30.0])).tolist()]
    [0.3133, 0.6931, 30.0]
    """
    x = _float(x)
    # -|x| written as min(x, -x): its gradient at 0 is 0, so softplus'(0) = 1/2 exactly
    return O.select(O.is_nan(x), x, O.max(x, 0) + O.log1p(O.exp(O.min(x, -x))))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple of ints, or None for all),
    shifted by the maximum for stability."""
    x = _float(x)
    axes = _axes(x, axis, "softmax")
    e = O.exp(x - O.reduce_max(x, axes, keep_axes=True))
    return e / O.sum(e, axes, keep_axes=True)


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` along ``axis``, shifted by the maximum for stability.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in log_softmax(nx.tensor([1.0, 2.0, 3.0])).tolist()]
    [-2.4076, -1.4076, -0.4076]
    """
    x = _float(x)
    axes = _axes(x, axis, "log_softmax")
    shifted = x - O.reduce_max(x, axes, keep_axes=True)
    return shifted - O.log(O.sum(O.exp(shifted), axes, keep_axes=True))


def one_hot(x, num_classes: int, *, dtype="f32", axis=-1):
    """A one-hot encoding of the integers ``x``: a new axis of size ``num_classes`` at
    ``axis`` (of the result), 1 where it equals ``x``; values outside
    ``[0, num_classes)`` give all zeros (as ``jax.nn.one_hot``)."""
    x = O.to_tensor(x, "x")
    num_classes = S.integer(num_classes, "one_hot: num_classes", minimum=0)
    try:
        ax = S.normalize_axis(axis, x.rank + 1)
    except (ValueError, TypeError) as e:
        raise type(e)(f"one_hot: {e}") from None
    shape = x.shape[:ax] + (num_classes,) + x.shape[ax:]
    classes = O.iota(shape, axis=ax, type=x.type if x.type.is_int else "s32")
    return O.as_type(O.equal(O.new_axis(x, ax), classes), dtype)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``log(sum(b * exp(a)))`` over ``axis`` (``jax.nn.logsumexp``; ``return_sign`` is not
    supported); Nx's :func:`nxpy.logsumexp` with ``jax.nn``'s argument names.

    >>> import nxpy as nx
    >>> round(logsumexp(nx.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).tolist()[0], 4)
    2.3133
    """
    if return_sign:
        raise NotImplementedError("logsumexp: return_sign=True is not supported")
    a = _float(a)
    axes = None if axis is None else _axes(a, axis, "logsumexp")
    return O.logsumexp(a, axes=axes, exp_scaling_factor=b, keep_axes=keepdims)
