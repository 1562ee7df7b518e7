"""What every function of :mod:`nxpy.nn` shares: reading ``jax.nn``'s arguments (the
input's type, ``axis``, ``where``) and the few building blocks the op front end does not
have under ``jax.nn``'s terms (a typed constant, ``stop_gradient``)."""
from __future__ import annotations

from .. import ops as O
from .. import shape as S
from .. import types as T

__all__ = ["tensor", "floating", "numeric", "const", "axes", "one_axis", "mask", "operand",
           "stop_gradient"]


def tensor(x, op: str, arg: str = "x"):
    """``x`` as a tensor; anything else is a TypeError naming ``op``'s argument ``arg``."""
    try:
        return O.to_tensor(x, arg)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{op}: {e}") from None


def floating(x, op: str):
    """``x`` as a tensor of a floating type: integers and pred become f32, as ``jax.nn``
    promotes them (JAX's default float without x64)."""
    x = tensor(x, op)
    return x if x.type.is_inexact else O.as_type(x, T.to_floating(x.type))


def numeric(x, op: str):
    """``x`` as a tensor, pred as s32 (``jnp.maximum(True, 0)`` is an int32)."""
    x = tensor(x, op)
    return O.as_type(x, "s32") if x.type.is_pred else x


def const(value, like):
    """The number ``value`` as a scalar of ``like``'s type (a Python float mixed into a
    :func:`nxpy.select` would make an f16 result f32)."""
    return O.tensor(value, type=like.type)


def axes(x, axis, op: str) -> list:
    """``jax.nn``'s ``axis``: an int, a tuple or list of ints, or None (all axes)."""
    try:
        if axis is None:
            return list(range(x.rank))
        if isinstance(axis, (list, tuple)):
            return list(S.normalize_axes(list(axis), x.rank, x.names, what="axis"))
        return [S.normalize_axis(axis, x.rank, x.names)]
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: axis: {e}") from None


def one_axis(axis, rank: int, names, op: str) -> int:
    """One axis (an int, or a name) of a tensor of ``rank``, as a non-negative index."""
    try:
        return S.normalize_axis(axis, rank, names)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: axis: {e}") from None


def mask(where, x, op: str):
    """``jax.nn``'s ``where``: None, or a mask broadcast (right-aligned, as NumPy) to
    ``x``'s shape; a non-pred mask counts its non-zero entries as true."""
    if where is None:
        return None
    w = tensor(where, op)
    if not w.type.is_pred:
        w = O.not_equal(w, 0)
    try:
        ok = S.broadcast(w.shape, x.shape) == x.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: expected where to broadcast to x's shape {x.shape}, "
                         f"got shape {w.shape}")
    return O.broadcast(w, x.shape) if w.shape != x.shape else w


def operand(v, x, op: str, arg: str):
    """An elementwise parameter of ``op`` beside its input ``x`` (``leaky_relu``'s
    ``negative_slope``, ``standardize``'s ``mean``): a Python number as it is (weakly
    typed, as in JAX), else a tensor whose shape broadcasts with ``x``'s; anything else is
    an error naming ``arg``, not the op inside that would meet it."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    t = tensor(v, op, arg)
    try:
        S.broadcast(t.shape, x.shape)
    except ValueError:
        raise ValueError(f"{op}: expected {arg} to broadcast with x's shape {x.shape}, got "
                         f"shape {t.shape}") from None
    return t


_SAME_WIDTH_INT = {16: "s16", 32: "s32", 64: "s64"}


def stop_gradient(x):
    """``x``'s value, through which no gradient flows (``jax.lax.stop_gradient``): a
    bitcast to the integer type of the same width and back. ``bitcast`` is not
    differentiable, so ``grad`` gives it no cotangent and ``jvp`` no tangent, while the
    value is the same bits; XLA folds the pair away. (``nxpy.defn.stop_grad`` marks a
    node of a graph being differentiated; it lives in ``defn``, above this layer.)"""
    return O.bitcast(O.bitcast(x, _SAME_WIDTH_INT[x.type.bits]), x.type)
