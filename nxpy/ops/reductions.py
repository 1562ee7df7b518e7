"""Reductions over axes (sum, product, reduce_max, reduce_min, all, any), argmax/argmin
and mean.

>>> import nxpy as nx
>>> x = nx.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> nx.sum(x, axes=[1]).tolist(), nx.argmax(x, axis=0).tolist(), nx.mean(x).tolist()
([3.0, 7.0], [1, 1], 2.5)
"""
from __future__ import annotations

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import _axes_of, _out, as_type, check_kind, dispatch, primitive, to_tensor
from .elementwise import divide
from .shaping import reshape

REDUCTIONS = {"sum": "aggregate", "product": "aggregate", "reduce_max": "same",
              "reduce_min": "same", "all": "pred", "any": "pred"}

primitive("reductions", *REDUCTIONS, props=("reduction",))
primitive("reductions", "argmax", "argmin", props=("arg_reduction",))


def _reduce(name, x, axes=None, keep_axes=False):
    x = to_tensor(x, "x")
    if name in ("reduce_max", "reduce_min"):
        check_kind(name, "x", x.type, "real")
    axes = _axes_of(name, S.normalize_axes, axes, x.rank, x.names)
    rule = REDUCTIONS[name]
    t = {"aggregate": T.to_aggregate(x.type), "same": x.type, "pred": T.PRED}[rule]
    if keep_axes:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        names = tuple(x.names)  # as Nx: a kept axis keeps its name
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        names = tuple(n for i, n in enumerate(x.names) if i not in axes)
    return dispatch(name, _out(shape, t, names), x, axes=tuple(sorted(axes)),
                    keep_axes=bool(keep_axes))


def _make_reduction(name):
    def f(x, axes=None, keep_axes=False):
        return _reduce(name, x, axes, keep_axes)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"``{name}`` over ``axes`` (default: all); ``keep_axes`` keeps them as "
                 f"size 1. Type rule: {REDUCTIONS[name]}.")
    return f


for _n in REDUCTIONS:
    globals()[_n] = _make_reduction(_n)
del _n
all = globals()["all"]
any = globals()["any"]


def _arg_reduce(name, x, axis, keep_axis, tie_break, type):
    x = to_tensor(x, "x")
    check_kind(name, "x", x.type, "real")
    if tie_break not in ("low", "high"):
        raise ValueError(f"{name}: tie_break must be 'low' or 'high', got {tie_break!r}")
    t = T.parse(type)
    if not t.is_int:
        raise TypeError(f"{name}: expected type (of the indices) to be an integer type, got {t}")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{name}: cannot take the {name} of an empty tensor of shape "
                             f"{x.shape}")
        return _arg_reduce(name, reshape(x, (x.size,)), 0, False, tie_break, type)
    axis = _axes_of(name, S.normalize_axis, axis, x.rank, x.names)
    if x.shape[axis] == 0:
        raise ValueError(f"{name}: cannot take the {name} along axis {axis} of size 0 "
                         f"(shape {x.shape})")
    if keep_axis:
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
        names = tuple(x.names)
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        names = tuple(n for i, n in enumerate(x.names) if i != axis)
    return dispatch(name, _out(shape, t, names), x, axis=axis, keep_axis=bool(keep_axis),
                    tie_break=tie_break)


def argmax(x, axis=None, keep_axis=False, tie_break="low", type="s32") -> Tensor:
    """Index of the largest element along ``axis`` (default: of the flattened tensor);
    NaN counts as the largest."""
    return _arg_reduce("argmax", x, axis, keep_axis, tie_break, type)


def argmin(x, axis=None, keep_axis=False, tie_break="low", type="s32") -> Tensor:
    """Index of the smallest element along ``axis`` (default: of the flattened tensor);
    NaN counts as the smallest."""
    return _arg_reduce("argmin", x, axis, keep_axis, tie_break, type)


def mean(x, axes=None, keep_axes=False) -> Tensor:
    """Mean over ``axes`` (a float result)."""
    x = to_tensor(x, "x")
    ax = _axes_of("mean", S.normalize_axes, axes, x.rank, x.names)
    n = S.size([x.shape[a] for a in ax])
    return divide(sum(as_type(x, T.to_floating(x.type)), axes, keep_axes), n)


__all__ = sorted(REDUCTIONS) + ["argmax", "argmin", "mean", "REDUCTIONS"]
