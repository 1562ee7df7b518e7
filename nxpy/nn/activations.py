"""``jax.nn``'s activation functions: elementwise, with ``jax.nn``'s formulas (so values
agree to rounding) and its gradients, including at the kinks where JAX defines them by a
custom rule (``relu``, ``relu6``) or by ``jnp.where``/``jnp.maximum`` (the others).

Integer and pred inputs become f32 where ``jax.nn`` gives a float; ``identity``, ``relu``
and ``hard_tanh`` keep integers (pred becomes s32, as ``jnp.maximum(True, 0)``).
"""
from __future__ import annotations

import math

from .. import ops as O
from .. import shape as S
from .common import const, floating, numeric, one_axis, operand, tensor

__all__ = ["identity", "relu", "relu6", "hard_tanh", "hard_sigmoid", "hard_silu",
           "hard_swish", "leaky_relu", "elu", "celu", "selu", "gelu", "sigmoid", "log_sigmoid",
           "silu", "swish", "mish", "softplus", "soft_sign", "sparse_plus", "sparse_sigmoid",
           "squareplus", "log1mexp", "tanh", "glu"]


def identity(x):
    """``x`` unchanged (any type).

    >>> import nxpy as nx
    >>> identity(nx.tensor([-1, 2])).tolist()
    [-1, 2]
    """
    return tensor(x, "identity")


def _clamped(x, lo, hi=None):
    """``x`` clamped to ``[lo, hi]`` (NaN stays NaN), whose gradient is 1 strictly inside
    and 0 at and beyond the bounds and at NaN: the custom JVPs of ``jax.nn.relu``
    (``lo=0``) and ``jax.nn.relu6`` (``lo=0, hi=6``), which are ``select``s on ``x``."""
    inside = O.greater(x, lo)
    if hi is not None:
        inside = O.logical_and(inside, O.less(x, hi))
    outside = const(lo, x)
    if x.type.is_inexact:
        outside = O.select(O.is_nan(x), const(math.nan, x), outside)
    if hi is not None:
        outside = O.select(O.greater_equal(x, hi), const(hi, x), outside)
    return O.select(inside, x, outside)


def relu(x):
    """``max(x, 0)``; its gradient is 1 for ``x > 0`` and 0 elsewhere (0 at 0, as
    ``jax.nn.relu``'s custom JVP). Integers keep their type.

    >>> import nxpy as nx
    >>> relu(nx.tensor([-2, 3])).tolist()
    [0, 3]
    >>> relu(nx.tensor([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.0, 2.0]
    """
    return _clamped(numeric(x, "relu"), 0)


def relu6(x):
    """``min(max(x, 0), 6)``; its gradient is 1 on ``(0, 6)`` and 0 elsewhere (at 0 and
    6 too, as ``jax.nn.relu6``'s custom JVP).

    >>> import nxpy as nx
    >>> relu6(nx.tensor([-1.0, 3.0, 7.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return _clamped(floating(x, "relu6"), 0, 6)


def hard_tanh(x):
    """``x`` clamped to ``[-1, 1]``, as ``jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))``
    (its gradient is 1 at ±1). Integers keep their type.

    >>> import nxpy as nx
    >>> hard_tanh(nx.tensor([-3.0, 0.5, 2.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    x = numeric(x, "hard_tanh")
    inner = x if x.type.kind == "u" else O.select(O.less(x, -1), const(-1, x), x)
    return O.select(O.greater(x, 1), const(1, x), inner)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (gradient 0 at -3 and 3, through ``relu6``)."""
    return relu6(floating(x, "hard_sigmoid") + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called ``hard_swish``)."""
    x = floating(x, "hard_silu")
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x >= 0``, else ``negative_slope * x`` (gradient 1 at 0).

    >>> import nxpy as nx
    >>> leaky_relu(nx.tensor([-2.0, 3.0]), negative_slope=0.5).tolist()
    [-1.0, 3.0]
    """
    x = numeric(x, "leaky_relu")
    negative_slope = operand(negative_slope, x, "leaky_relu", "negative_slope")
    return O.select(O.greater_equal(x, 0), x, O.multiply(negative_slope, x))


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)`` (the ``expm1`` sees 0 where
    ``x > 0``, as ``jax.nn.elu``, so that a large ``x`` gives no inf in the gradient)."""
    x = floating(x, "elu")
    alpha = operand(alpha, x, "elu", "alpha")
    positive = O.greater(x, 0)
    return O.select(positive, x,
                    O.multiply(alpha, O.expm1(O.select(positive, const(0, x), x))))


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = floating(x, "celu")
    alpha = operand(alpha, x, "celu", "alpha")
    return O.max(x, 0.0) + O.multiply(alpha, O.expm1(O.divide(O.min(x, 0.0), alpha)))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """``scale * elu(x, alpha)`` with ``jax.nn.selu``'s constants (``alpha`` ≈ 1.6733,
    ``scale`` ≈ 1.0507)."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit: with ``approximate`` (the default, as ``jax.nn``)
    ``x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2``, else
    ``x / 2 * erfc(-x / sqrt(2))``.

    >>> import nxpy as nx
    >>> x = nx.tensor(1.0)
    >>> round(gelu(x).item(), 4), round(gelu(x, approximate=False).item(), 4)
    (0.8412, 0.8413)
    """
    x = floating(x, "gelu")
    if S.boolean(approximate, "gelu: approximate"):
        cdf = 0.5 * (1.0 + O.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))))
        return x * cdf
    return 0.5 * x * O.erfc(-x * math.sqrt(0.5))


def sigmoid(x):
    """``1 / (1 + exp(-x))`` (:func:`nxpy.sigmoid`; integers become f32, where
    ``jax.nn.sigmoid`` raises)."""
    return O.sigmoid(floating(x, "sigmoid"))


def silu(x):
    """``x * sigmoid(x)`` (also called ``swish``)."""
    x = floating(x, "silu")
    return x * O.sigmoid(x)


swish = silu


def softplus(x):
    """``log(1 + exp(x))``, computed as ``jnp.logaddexp(x, 0)``:
    ``max(x, 0) + log1p(exp(-|x|))``, NaN where ``x`` is.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in softplus(nx.tensor([-1.0, 0.0, 30.0])).tolist()]
    [0.3133, 0.6931, 30.0]
    """
    x = floating(x, "softplus")
    # -|x| written as min(x, -x): its gradient at 0 is 0, so softplus'(0) = 1/2 exactly
    return O.select(O.is_nan(x), x, O.max(x, 0) + O.log1p(O.exp(O.min(x, -x))))


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``."""
    return -softplus(-floating(x, "log_sigmoid"))


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = floating(x, "mish")
    return x * O.tanh(softplus(x))


def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = floating(x, "soft_sign")
    return x / (O.abs(x) + 1)


def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)^2 / 4`` on ``(-1, 1)``, ``x`` for ``x >= 1``."""
    x = floating(x, "sparse_plus")
    y = x + 1.0
    return O.select(O.less_equal(x, -1.0), const(0, x),
                    O.select(O.greater_equal(x, 1.0), x, y * y / 4))


def sparse_sigmoid(x):
    """``clip(x + 1, 0, 2) / 2`` (the derivative of :func:`sparse_plus`), its clip as
    ``jnp.clip``'s ``maximum`` then ``minimum``: the gradient at ±1 is 1/4."""
    x = floating(x, "sparse_sigmoid")
    return 0.5 * O.min(O.max(x + 1.0, 0.0), 2.0)


def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2``."""
    x = floating(x, "squareplus")
    b = operand(b, x, "squareplus", "b")
    return (x + O.sqrt(O.add(x * x, b))) / 2


def log1mexp(x):
    """``log(1 - exp(-x))``, for ``x >= 0``: ``log(-expm1(-x))`` below ``log 2``,
    ``log1p(-exp(-x))`` above (Mächler's split, as ``jax.nn.log1mexp``). Each branch sees
    a harmless value where the other is taken, so the gradient, ``1 / expm1(x)``, has no
    NaN from the branch not taken (``jax.nn.log1mexp`` defines it by a custom JVP).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in log1mexp(nx.tensor([0.1, 1.0, 5.0])).tolist()]
    [-2.3522, -0.4587, -0.0068]
    """
    x = floating(x, "log1mexp")
    small = O.less(x, math.log(2))
    near = O.select(small, x, const(1, x))
    far = O.select(small, const(1, x), x)
    return O.select(small, O.log(-O.expm1(-near)), O.log1p(-O.exp(-far)))


def tanh(x, /):
    """The hyperbolic tangent (:func:`nxpy.tanh`)."""
    return O.tanh(floating(x, "tanh"))


def glu(x, axis: int = -1):
    """The gated linear unit: ``x`` split in two halves along ``axis`` (whose size must be
    even), ``first * sigmoid(second)``.

    >>> import nxpy as nx
    >>> glu(nx.tensor([[2.0, 4.0, 0.0, 0.0]])).tolist()
    [[1.0, 2.0]]
    """
    x = floating(x, "glu")
    ax = one_axis(axis, x.rank, x.names, "glu")
    n = x.shape[ax]
    if n % 2:
        raise ValueError(f"glu: expected the size of axis {axis} to be even, got {n}")
    first = O.slice_along_axis(x, 0, n // 2, axis=ax)
    second = O.slice_along_axis(x, n // 2, n // 2, axis=ax)
    return first * O.sigmoid(second)
