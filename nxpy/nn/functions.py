"""``jax.nn``'s functions over axes: ``softmax``, ``log_softmax``, ``logsumexp``,
``logmeanexp``, ``standardize`` (each with ``jax.nn``'s ``where`` mask) and ``one_hot``.

The maximum that ``softmax``, ``log_softmax`` and ``logsumexp`` shift by is held out of
the gradient (:func:`nxpy.nn.common.stop_gradient`), as JAX's ``stop_gradient`` or custom
JVP does, so their gradients are JAX's formulas to rounding, not a cancellation of terms.
``softmax`` carries JAX's custom derivative itself (``y * (t - sum(y * t))``, through
:func:`nxpy.defn.custom_grad`), so its backward pass is the program JAX's is: one
reduction, no quotient rule through the normalizer.
"""
from __future__ import annotations

import math

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..defn.transforms.grad import custom_grad
from .common import axes as _axes
from .common import const, floating, mask, one_axis, operand, stop_gradient, tensor

__all__ = ["softmax", "log_softmax", "logsumexp", "logmeanexp", "standardize", "one_hot"]


def _masked(x, w, fill):
    """``x`` where the mask ``w`` holds, ``fill`` elsewhere (``x`` when there is no mask)."""
    return x if w is None else O.select(w, x, const(fill, x))


def _max(x, axes, w):
    """``jnp.max(x, axes, where=w, initial=-inf, keepdims=True)``."""
    return O.reduce_max(_masked(x, w, -math.inf), axes, keep_axes=True)


def _wide(x):
    """``x`` in f32 if it is f16 or bf16: ``jnp.sum`` and ``jnp.mean`` compute in f32 for
    them, and round the result back."""
    return O.as_type(x, "f32") if x.type.is_float and x.type.bits == 16 else x


def _sum(x, axes, w, keep=True):
    """``jnp.sum(x, axes, where=w, keepdims=keep)``."""
    return O.as_type(O.sum(_wide(_masked(x, w, 0)), axes, keep_axes=keep), x.type)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple of ints, or None for all
    axes), shifted by the maximum; with ``where``, only the elements where it holds take
    part, and the others are 0. The gradient is ``y * (g - sum(y * g))``, as JAX's.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in softmax(nx.tensor([1.0, 2.0, 3.0])).tolist()]
    [0.09, 0.2447, 0.6652]
    >>> softmax(nx.tensor([1.0, 2.0, 3.0]), where=nx.tensor([True, True, False])).tolist()[2]
    0.0
    """
    x = floating(x, "softmax")
    axes = _axes(x, axis, "softmax")
    w = mask(where, x, "softmax")
    unnormalized = O.exp(_masked(x, w, -math.inf) - stop_gradient(_max(x, axes, w)))
    y = _masked(unnormalized / _sum(unnormalized, axes, w), w, 0)
    # JAX's custom JVP, y * (t - sum(y * t)), and its transpose, y * g - y * sum(y * g)
    return custom_grad(y, [x], lambda g: [_softmax_vjp(y, g, axes, w)],
                       jvp=lambda x, t: y * (t - _sum(y * t, axes, w)))


def _softmax_vjp(y, g, axes, w):
    yg = y * g
    return yg - y * _sum(yg, axes, w)


def log_softmax(x, axis=-1, where=None):
    """``x - log(sum(exp(x)))`` along ``axis``, shifted by the maximum; with ``where``,
    only the elements where it holds take part, and the others are -inf.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in log_softmax(nx.tensor([1.0, 2.0, 3.0])).tolist()]
    [-2.4076, -1.4076, -0.4076]
    """
    x = floating(x, "log_softmax")
    axes = _axes(x, axis, "log_softmax")
    w = mask(where, x, "log_softmax")
    shifted = _masked(x, w, -math.inf) - stop_gradient(_max(x, axes, w))
    result = shifted - O.log(_sum(O.exp(shifted), axes, w))
    return _masked(result, w, -math.inf)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """``log(sum(b * exp(a)))`` over ``axis`` (None: all axes), shifted by the (finite)
    maximum, as ``jax.nn.logsumexp``: with ``b``, the elements where ``b`` is 0 drop out
    and a negative sum gives NaN, unless ``return_sign``, which returns ``(log|sum|,
    sign(sum))``; with ``where``, only the elements where it holds take part.

    >>> import nxpy as nx
    >>> round(logsumexp(nx.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).tolist()[0], 4)
    2.3133
    >>> r, s = logsumexp(nx.tensor([0.0, 0.0]), b=nx.tensor([1.0, -3.0]), return_sign=True)
    >>> round(r.item(), 4), s.item()
    (0.6931, -1.0)
    """
    a = floating(a, "logsumexp")
    return_sign = S.boolean(return_sign, "logsumexp: return_sign")
    w = mask(where, a, "logsumexp")
    if w is not None:
        a = O.select(w, a, const(0, a))
    if b is not None:
        # a Python number is weakly typed, as in JAX: it takes a's type
        b = const(b, a) if isinstance(b, (int, float)) else tensor(b, "logsumexp", "b")
        t = T.merge(a.type, b.type)
        t = t if t.is_inexact else T.to_floating(t)
        try:
            shape = S.broadcast(a.shape, b.shape)
        except ValueError:
            raise ValueError(f"logsumexp: expected b to broadcast with a's shape {a.shape}, "
                             f"got shape {b.shape}") from None
        a, b = (O.broadcast(O.as_type(v, t), shape) for v in (a, b))
        a = O.select(O.not_equal(b, 0), a, const(-math.inf, a))
        w = None if w is None else O.broadcast(w, shape)
    axes = _axes(a, axis, "logsumexp")
    amax = _max(a, axes, w)
    amax = stop_gradient(O.select(O.is_infinity(amax), const(0, amax), amax))
    e = O.exp(a - amax)
    if b is not None:
        e = e * b
    total = _sum(e, axes, w, keepdims)
    if not keepdims:
        amax = O.squeeze(amax, axes)
    out = O.log(O.abs(total)) + amax
    sign = O.sign(total)
    if return_sign:
        return out, sign
    if b is not None:
        out = O.select(O.less(sign, 0), const(math.nan, out), out)
    return out


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``log(mean(exp(x)))`` over ``axis``: :func:`logsumexp` less the log of the number
    of elements (with ``where``, of those where it holds).

    >>> import nxpy as nx
    >>> logmeanexp(nx.tensor([0.0, 0.0, 0.0])).item()
    0.0
    """
    x = floating(x, "logmeanexp")
    w = mask(where, x, "logmeanexp")
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    axes = _axes(x, axis, "logmeanexp")
    if w is None:
        count = const(S.size([x.shape[i] for i in axes]), lse)
    else:
        count = O.sum(O.as_type(w, lse.type), axes, keep_axes=keepdims)
    return lse - O.log(count)


def _mean(x, axes, w):
    """``jnp.mean(x, axes, where=w, keepdims=True)``: the sum over the count, both in f32
    for f16 and bf16."""
    wide = _wide(x)
    total = O.sum(_masked(wide, w, 0), axes, keep_axes=True)
    if w is None:
        count = S.size([x.shape[i] for i in axes])
    else:
        count = O.sum(O.as_type(w, wide.type), axes, keep_axes=True)
    return O.as_type(O.divide(total, count), x.type)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``; ``mean`` and ``variance``
    default to ``x``'s over ``axis`` (with ``where``, over the elements where it holds).
    ``algorithm="fast"`` (the default, as ``jax.nn``) takes the variance as ``mean(x^2) -
    mean^2`` clipped at 0; ``"stable"`` as ``mean((x - mean)^2)``.

    >>> import nxpy as nx
    >>> standardize(nx.tensor([1.0, 3.0]), epsilon=0.0).tolist()
    [-1.0, 1.0]
    """
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"standardize: expected algorithm to be 'fast' or 'stable', "
                         f"got {algorithm!r}")
    x = floating(x, "standardize")
    mean, variance, epsilon = (v if v is None else operand(v, x, "standardize", k) for k, v in
                               (("mean", mean), ("variance", variance), ("epsilon", epsilon)))
    axes = _axes(x, axis, "standardize")
    w = mask(where, x, "standardize")
    if mean is None:
        mean = _mean(x, axes, w)
    if variance is None:
        if algorithm == "stable":
            d = O.subtract(x, mean)
            variance = _mean(d * d, axes, w)
        else:
            variance = O.max(O.subtract(_mean(x * x, axes, w), O.multiply(mean, mean)), 0)
    return O.subtract(x, mean) * O.rsqrt(O.add(variance, epsilon))


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """A one-hot encoding of the integers ``x``: a new axis of size ``num_classes`` at
    ``axis`` (of the result), 1 where it equals ``x``; values outside
    ``[0, num_classes)`` give all zeros (as ``jax.nn.one_hot``). ``dtype`` defaults to
    f32 (``jax.nn``'s default float without x64).

    >>> import nxpy as nx
    >>> one_hot(nx.tensor([0, 2, 5]), 3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    x = tensor(x, "one_hot")
    num_classes = S.integer(num_classes, "one_hot: num_classes", minimum=0)
    dtype = "f32" if dtype is None else dtype
    ax = one_axis(axis, x.rank + 1, None, "one_hot")
    shape = x.shape[:ax] + (num_classes,) + x.shape[ax:]
    classes = O.iota(shape, axis=ax, type=x.type if x.type.is_int else "s32")
    return O.as_type(O.equal(O.new_axis(x, ax), classes), dtype)
